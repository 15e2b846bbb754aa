"""The import path torch.utils.data._utils.worker (see ../worker.py)."""
from ..worker import WorkerInfo, get_worker_info  # noqa: F401
