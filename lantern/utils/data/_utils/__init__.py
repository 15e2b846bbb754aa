"""torch.utils.data._utils's import paths, for code that extends collation through them.

torch documents extending `default_collate` with `from torch.utils.data._utils.collate import collate,
default_collate_fn_map`; the same import works here. The code itself lives in lantern.utils.data.collate and
lantern.utils.data.worker.
"""
from . import collate, worker  # noqa: F401
from ..worker import MP_STATUS_CHECK_INTERVAL  # noqa: F401
