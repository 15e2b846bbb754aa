"""Process groups: a set of ranks with an MPI communicator of their own, and the default group of the world.

`init_process_group` makes the default group: a duplicate of MPI's COMM_WORLD (so lantern's messages never meet
the program's own MPI traffic). `new_group(ranks)` carves a communicator for some of the ranks; every process of
the world calls it, and the ones outside get GroupMember.NON_GROUP_MEMBER, for which get_rank is -1 and collectives
do nothing. Ranks given to collectives (src, dst) are global ranks, as in PyTorch; a group translates them.

>>> import lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> dist.is_initialized(), dist.get_rank(), dist.get_world_size(), dist.get_backend()
(True, 0, 1, 'gloo')
>>> dist.get_process_group_ranks(dist.group.WORLD)
[0]
>>> dist.destroy_process_group()
>>> dist.is_initialized()
False
"""
import datetime
import itertools
import os

from . import progress, rendezvous
from .mpi import MPI
from .work import Work

default_pg_timeout = datetime.timedelta(minutes=30)

_NO_DEFAULT_GROUP = "Default process group has not been initialized, please make sure to call init_process_group."


class Backend(str):
    """A backend's name, lower-cased ("gloo", "mpi"); both run on MPI in lantern."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        return super().__new__(cls, name.lower())


SUPPORTED_BACKENDS = (Backend.GLOO, Backend.MPI)


def _cpu_backend(backend):
    """The backend a process group runs for the CPU: gloo unless told; "cpu:mpi,cuda:nccl" picks the CPU's."""
    name = Backend(backend or Backend.GLOO)
    if ":" in name:
        per_device = dict(part.split(":", 1) for part in name.split(","))
        name = Backend(per_device.get("cpu", Backend.GLOO))
    if name == Backend.NCCL:
        raise RuntimeError("Distributed package doesn't have NCCL built in")
    if name not in SUPPORTED_BACKENDS:
        raise AssertionError(f"Unknown backend type {name}")
    return name


class ProcessGroup:
    """Ranks that communicate together: an MPI communicator, the global ranks in group order, a timeout."""

    def __init__(self, communicator, global_ranks, backend, timeout, group_name):
        self.communicator = communicator
        self.global_ranks = list(global_ranks)
        self.backend = backend
        self.timeout = timeout
        self.group_name = group_name
        self._broken = None

    def rank(self):
        """This process's rank in the group."""
        return self.communicator.Get_rank()

    def size(self):
        """How many ranks the group has."""
        return len(self.global_ranks)

    def name(self):
        """The backend's name (torch's ProcessGroup.name())."""
        return self.backend

    def group_rank(self, global_rank):
        if global_rank not in self.global_ranks:
            raise ValueError(f"Global rank {global_rank} is not part of group {self}")
        return self.global_ranks.index(global_rank)

    def check_usable(self):
        """Raise the error that broke the group (a timed-out collective), if any."""
        if self._broken is not None:
            raise self._broken
        if self.communicator is None:
            raise ValueError("The process group has been destroyed; create a new one with new_group or "
                             "init_process_group")

    def __repr__(self):
        return f"<ProcessGroup {self.group_name!r} backend={self.backend} ranks={self.global_ranks}>"


class _State:
    """The process's groups: the default one and every group made since init_process_group."""
    default = None
    groups = []
    names = itertools.count()


class _WorldGroup(type):
    @property
    def WORLD(cls):
        """The default process group, or None before init_process_group."""
        return _State.default


class GroupMember(metaclass=_WorldGroup):
    """GroupMember.WORLD (the default group) and NON_GROUP_MEMBER, what new_group returns outside its ranks."""
    NON_GROUP_MEMBER = -100


class group(metaclass=_WorldGroup):
    """torch.distributed.group.WORLD: the default process group."""


def is_initialized():
    """Whether the default process group exists."""
    return _State.default is not None


def _wait_for_everyone(communicator, timeout, what):
    """An MPI barrier that gives up after `timeout`, run before a blocking MPI call that has no timeout of its own."""
    probe = ProcessGroup(communicator, range(communicator.Get_size()), "mpi", timeout, what)
    Work(probe, what, [communicator.Ibarrier()]).wait()


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Create the default process group over MPI's world (see lantern.distributed.rendezvous for the rules)."""
    if _State.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout}")
    if store is not None:
        raise NotImplementedError("init_process_group(store=...): lantern's process groups meet through MPI and have "
                                  "no key-value store; launch the program with python -m lantern.distributed.run")
    name = _cpu_backend(backend)
    world = MPI().COMM_WORLD
    rendezvous.world_rank_and_size(init_method, world_size, rank, rank_and_size=(world.Get_rank(), world.Get_size()))
    timeout = timeout or default_pg_timeout
    _wait_for_everyone(world, timeout, "init_process_group")
    _State.names = itertools.count()
    _State.default = ProcessGroup(world.Dup(), range(world.Get_size()), name, timeout, str(next(_State.names)))
    _State.groups = [_State.default]


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """A group of some ranks (all by default); every rank of the world must call it (with
    use_local_synchronization=True, only the group's ranks). Non-members get GroupMember.NON_GROUP_MEMBER."""
    world = default_group()
    world_size = world.size()
    ranks = list(range(world_size)) if ranks is None else list(ranks)
    for r in ranks:
        if not 0 <= r < world_size:
            raise ValueError(f"Rank {r} is out of range. Valid ranks are 0 to {world_size - 1} "
                             f"(world_size={world_size})")
    if sort_ranks:
        ranks = sorted(ranks)
    timeout = timeout or world.timeout
    members = world.communicator.Get_group().Incl(ranks)
    if use_local_synchronization:  # MPI_Comm_create_group: collective over the members only
        if world.rank() not in ranks:
            return GroupMember.NON_GROUP_MEMBER
        communicator = world.communicator.Create_group(members)
    else:
        _wait_for_everyone(world.communicator, timeout, "new_group")
        communicator = world.communicator.Create(members)
    if communicator == MPI().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    made = ProcessGroup(communicator, ranks, _cpu_backend(backend or world.backend), timeout, str(next(_State.names)))
    _State.groups.append(made)
    return made


def destroy_process_group(group=None):
    """Free a group's communicator; with no argument (or the default group), every group, leaving none."""
    if group is None or group is _State.default:
        if _State.default is None:
            raise AssertionError("Process group cannot be None")
        for made in _State.groups:
            _free(made)
        _State.default, _State.groups = None, []
    elif group is not GroupMember.NON_GROUP_MEMBER:
        _free(group)
        _State.groups.remove(group)


def _free(made):
    with progress.quiet():
        if made.communicator is not None and made._broken is None:  # a timed-out request still uses a broken one
            made.communicator.Free()
        made.communicator = None


def default_group():
    """The default group; torch's ValueError when there is none."""
    if _State.default is None:
        raise ValueError(_NO_DEFAULT_GROUP)
    return _State.default


def resolve(group):
    """The ProcessGroup a collective's `group=` names (None: the default), or None for a non-member."""
    world = default_group()
    if group is None:
        return world
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    return group


def get_rank(group=None):
    """This process's rank in `group` (default: the world); -1 outside the group."""
    made = resolve(group)
    return -1 if made is None else made.rank()


def get_world_size(group=None):
    """How many ranks `group` has (default: the world); -1 outside the group."""
    made = resolve(group)
    return -1 if made is None else made.size()


def get_backend(group=None):
    """The backend's name of `group` (default: the world)."""
    made = resolve(group)
    if made is None:
        raise ValueError("Invalid process group specified")
    return Backend(made.backend)


def get_pg_count():
    """How many process groups exist (the default one included)."""
    return len(_State.groups)


def get_node_local_rank(fallback_rank=None):
    """This process's rank on its machine: LOCAL_RANK (set by the launcher), else `fallback_rank`."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context and "
                       "want the code to run locally instead.")


def get_process_group_ranks(group):
    """The global ranks of `group`, in group order."""
    return list(resolve(group).global_ranks)


def get_global_rank(group, group_rank):
    """The global rank of the group's rank `group_rank`."""
    made = resolve(group)
    if not 0 <= group_rank < made.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {made}")
    return made.global_ranks[group_rank]


def get_group_rank(group, global_rank):
    """The rank in `group` of the global rank `global_rank`."""
    return resolve(group).group_rank(global_rank)
