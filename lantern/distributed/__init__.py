"""lantern.distributed: torch.distributed over MPI (mpi4py and the mpich wheel), on the CPU.

Processes are started by an MPI launcher (`python -m lantern.distributed.run --nproc-per-node 2 train.py`, or the
venv's `mpiexec -n 2 python train.py`); `init_process_group("gloo")` (or "mpi": both run on MPI) makes the default
process group over MPI's world, and the collectives move tensor memory through MPI's nonblocking operations, each
returning a Work. mpi4py is imported on first use, never by `import lantern`. A single process needs no launcher:
it is a world of one. docs/internals/distributed.md shows the whole design.

>>> import lantern, lantern.distributed as dist
>>> dist.is_available(), dist.is_initialized()
(True, False)
>>> dist.get_rank()
Traceback (most recent call last):
ValueError: Default process group has not been initialized, please make sure to call init_process_group.
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> t = lantern.arange(4.0)
>>> work = dist.all_reduce(t, async_op=True)
>>> work.wait(), t
(True, tensor([0., 1., 2., 3.]))
>>> dist.destroy_process_group()
"""
import importlib.util
import os

from .collectives import (all_gather, all_gather_into_tensor, all_gather_single, all_reduce, all_to_all,
                          all_to_all_single, barrier, broadcast, gather, reduce, reduce_scatter, reduce_scatter_single,
                          reduce_scatter_tensor, scatter)
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from .grad_bucket import GradBucket
from .monitored_barrier import monitored_barrier
from .object_collectives import (all_gather_object, broadcast_object_list, gather_object, recv_object_list,
                                 scatter_object_list, send_object_list)
from .point_to_point import P2POp, batch_isend_irecv, irecv, isend, recv, send
from .process_group import (SUPPORTED_BACKENDS, Backend, GroupMember, ProcessGroup, default_pg_timeout,
                            destroy_process_group, get_backend, get_global_rank, get_group_rank, get_node_local_rank,
                            get_pg_count, get_process_group_ranks, get_rank, get_world_size, group, init_process_group,
                            is_initialized, new_group)
from .reduce_op import RedOpType, ReduceOp, _make_nccl_premul_sum
from .work import Work

__all__ = [
    "is_available", "is_initialized", "is_torchelastic_launched", "is_gloo_available", "is_nccl_available",
    "is_mpi_available", "is_ucc_available", "is_xccl_available", "is_backend_available", "init_process_group",
    "new_group", "destroy_process_group", "get_rank", "get_world_size", "get_backend", "get_process_group_ranks",
    "get_global_rank", "get_group_rank", "get_pg_count", "get_node_local_rank", "supports_complex", "barrier",
    "monitored_barrier", "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_single",
    "all_gather_into_tensor", "all_gather_object", "gather", "gather_object", "scatter", "scatter_object_list",
    "reduce_scatter", "reduce_scatter_single", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
    "broadcast_object_list", "send_object_list", "recv_object_list", "send", "recv", "isend", "irecv", "P2POp",
    "batch_isend_irecv", "ReduceOp", "Backend", "ProcessGroup", "GroupMember", "group", "Work", "DistError",
    "GradBucket", "DistBackendError", "DistNetworkError", "DistStoreError", "default_pg_timeout",
]


def is_available():
    """True: lantern's process groups run on MPI (mpi4py), a runtime dependency."""
    return True


def is_torchelastic_launched():
    """True when started by torchrun (torch.distributed.elastic), which sets TORCHELASTIC_RUN_ID."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_gloo_available():
    """True: the "gloo" backend is lantern's MPI backend under torch's CPU default name."""
    return True


def is_mpi_available():
    """Whether mpi4py is installed (looked up without importing it)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available():
    """False: NCCL is for NVIDIA GPUs; lantern's process groups run on the CPU."""
    return False


def is_ucc_available():
    """False: lantern has no UCC backend."""
    return False


def is_xccl_available():
    """False: XCCL is for Intel GPUs."""
    return False


def is_backend_available(backend):
    """Whether init_process_group accepts `backend` ("gloo" and "mpi"; "cpu:gloo,cuda:nccl" names one per device)."""
    names = [part.split(":")[-1] for part in backend.lower().split(",")]
    return all(name in SUPPORTED_BACKENDS for name in names)


def supports_complex(reduceOp):
    """Whether a reduction is defined on complex tensors (sums are, orderings and bitwise ones are not)."""
    return reduceOp not in (RedOpType.MAX, RedOpType.MIN, RedOpType.PRODUCT, RedOpType.BAND, RedOpType.BOR,
                            RedOpType.BXOR)
