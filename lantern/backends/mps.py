"""torch.backends.mps: Apple's Metal backend, which lantern does not have.

>>> import lantern.backends.mps as mps
>>> mps.is_available(), mps.is_built()
(False, False)
"""
from ..core.absent_device import unbound as _unbound

__all__ = ["get_core_count", "get_name", "is_built", "is_available", "is_macos13_or_newer", "is_macos_or_newer"]


def is_available():
    return False


def is_built():
    return False


def is_macos_or_newer(major, minor):
    """Whether this is macOS major.minor or newer: only the MPS backend can tell."""
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend.")


def is_macos13_or_newer(minor=0):
    return is_macos_or_newer(13, minor)


get_core_count = _unbound("MPS", "get_core_count", "_mps_get_core_count", "Count the GPU cores.", __name__)
get_name = _unbound("MPS", "get_name", "_mps_get_name", "Name the Metal device.", __name__)
