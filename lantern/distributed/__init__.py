"""lantern.distributed: torch.distributed's front door, for programs that run in one process.

lantern has no process-group backend yet (no gloo, NCCL or MPI transport; distributed training comes with its own
issue). So `is_available()` is False, which is the honest answer and what programs check before they go
distributed, and no default process group ever exists: the queries and collectives raise torch's error for that
state, and what would create a group (`init_process_group`, `new_group`) raises NotImplementedError naming itself.
Programs written like nanoGPT, which import these names and call them only when launched by torchrun, run
unchanged in one process.

>>> import lantern.distributed as dist
>>> dist.is_available(), dist.is_initialized(), dist.is_torchelastic_launched()
(False, False, False)
>>> dist.get_rank()
Traceback (most recent call last):
ValueError: Default process group has not been initialized, please make sure to call init_process_group.
>>> dist.init_process_group("gloo")
Traceback (most recent call last):
NotImplementedError: torch.distributed.init_process_group: lantern does not implement distributed training yet (no process-group backend); run the program as a single process, without torchrun
"""
import enum
import os

__all__ = [
    "is_available", "is_initialized", "is_torchelastic_launched", "is_gloo_available", "is_nccl_available",
    "is_mpi_available", "init_process_group", "new_group", "destroy_process_group", "get_rank", "get_world_size",
    "get_backend", "barrier", "monitored_barrier", "all_reduce", "reduce", "broadcast", "all_gather",
    "all_gather_into_tensor", "all_gather_object", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor",
    "all_to_all", "all_to_all_single", "broadcast_object_list", "send", "recv", "isend", "irecv", "ReduceOp",
]


def is_available():
    """False: lantern cannot form a process group (torch's CPU build says True because it ships gloo)."""
    return False


def is_initialized():
    """Whether the default process group exists; in lantern it never does."""
    return False


def is_torchelastic_launched():
    """True when started by torchrun (torch.distributed.elastic), which sets TORCHELASTIC_RUN_ID."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_gloo_available():
    return False


def is_nccl_available():
    return False


def is_mpi_available():
    return False


class ReduceOp(enum.Enum):
    """The reductions a collective can apply (dist.ReduceOp.SUM, ...)."""
    SUM = 0
    PRODUCT = 1
    MIN = 2
    MAX = 3
    BAND = 4
    BOR = 5
    BXOR = 6
    AVG = 7
    PREMUL_SUM = 8
    UNUSED = 9


def _creates_group(name):
    """A function that would create a process group: lantern cannot, so it says so."""
    def unsupported(*args, **kwargs):
        raise NotImplementedError(f"torch.distributed.{name}: lantern does not implement distributed training yet "
                                  "(no process-group backend); run the program as a single process, without torchrun")
    unsupported.__name__ = unsupported.__qualname__ = name
    unsupported.__doc__ = f"torch.distributed.{name}; raises NotImplementedError in lantern (no backend)."
    return unsupported


def _needs_group(name):
    """A query or collective on the default group, which in lantern is never initialized: torch's error then."""
    def uninitialized(*args, **kwargs):
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    uninitialized.__name__ = uninitialized.__qualname__ = name
    uninitialized.__doc__ = f"torch.distributed.{name}; raises torch's no-default-group ValueError in lantern."
    return uninitialized


init_process_group = _creates_group("init_process_group")
new_group = _creates_group("new_group")

get_rank = _needs_group("get_rank")
get_world_size = _needs_group("get_world_size")
get_backend = _needs_group("get_backend")
barrier = _needs_group("barrier")
monitored_barrier = _needs_group("monitored_barrier")
all_reduce = _needs_group("all_reduce")
reduce = _needs_group("reduce")
broadcast = _needs_group("broadcast")
all_gather = _needs_group("all_gather")
all_gather_into_tensor = _needs_group("all_gather_into_tensor")
all_gather_object = _needs_group("all_gather_object")
gather = _needs_group("gather")
scatter = _needs_group("scatter")
reduce_scatter = _needs_group("reduce_scatter")
reduce_scatter_tensor = _needs_group("reduce_scatter_tensor")
all_to_all = _needs_group("all_to_all")
all_to_all_single = _needs_group("all_to_all_single")
broadcast_object_list = _needs_group("broadcast_object_list")
send = _needs_group("send")
recv = _needs_group("recv")
isend = _needs_group("isend")
irecv = _needs_group("irecv")


def destroy_process_group(group=None):
    """Destroy a process group; with none initialized torch fails its own assertion, and so does lantern."""
    raise AssertionError("Process group cannot be None")
