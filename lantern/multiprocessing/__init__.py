"""torch.multiprocessing: Python's multiprocessing, plus `spawn`/`start_processes`, which start ranks as one MPI job.

Everything of the standard module is here (`from multiprocessing import *`, as torch re-exports it); lantern's
tensors already travel between processes through shared memory (lantern/_construct.py registers their reducers on
multiprocessing's ForkingPickler), so no reducer set-up is needed here. `spawn(fn, args, nprocs)` is torch's
entry point for distributed programs: lantern starts the nprocs processes through the venv's mpiexec, so that
`init_process_group` in them forms one process group (lantern.multiprocessing.spawn says how and where it differs).

>>> import lantern.multiprocessing as mp
>>> mp.get_sharing_strategy(), sorted(mp.get_all_sharing_strategies())
('file_descriptor', ['file_descriptor', 'file_system'])
>>> mp.Queue is __import__("multiprocessing").Queue, mp.spawn.__module__
(True, 'lantern.multiprocessing.spawn')
"""
import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports the standard module)

from .spawn import (ENV_VAR_PARALLEL_START, ProcessContext, ProcessExitedException, ProcessRaisedException,
                    SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", *multiprocessing.__all__]

# How a tensor's memory goes to another process. lantern always passes the mapping's file descriptor (what torch
# calls "file_descriptor"); the setting is kept, and checked, for programs that choose one as torch's CPU build
# lets them (on macOS and Windows torch knows only "file_system").
if sys.platform in ("darwin", "win32"):
    _sharing_strategy, _all_sharing_strategies = "file_system", {"file_system"}
else:
    _sharing_strategy, _all_sharing_strategies = "file_descriptor", {"file_descriptor", "file_system"}


def set_sharing_strategy(new_strategy):
    """Choose how CPU tensors are shared with other processes: one of get_all_sharing_strategies()."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    """The current strategy for sharing CPU tensors."""
    return _sharing_strategy


def get_all_sharing_strategies():
    """The set of sharing strategies this system supports."""
    return _all_sharing_strategies
