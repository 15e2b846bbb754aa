"""torch.backends.mkldnn (oneDNN) switches. PyTorch's CPU build has oneDNN; lantern's CPU kernels are NumPy, so the
switches are kept and read back but select nothing.

>>> import lantern.backends.mkldnn as mkldnn
>>> mkldnn.is_available(), mkldnn.enabled
(True, True)
"""
from .flags import flags_context as _flags_context, set_module_flags as _set_module_flags

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2

enabled = True
deterministic = False
allow_tf32 = None  # as PyTorch's CPU build reports it until a program sets it
fp32_precision = "none"
_FLAGS = ("enabled", "deterministic", "allow_tf32", "fp32_precision")


def is_available():
    """Whether this build has oneDNN: as PyTorch's x86 CPU build, yes."""
    return True


def is_acl_available():
    """Whether oneDNN was built with the Arm Compute Library: no."""
    return False


class verbose:
    """A context printing oneDNN's verbose log at `level` for its block (lantern has no oneDNN log to print)."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        if self.level == VERBOSE_OFF:
            return None
        return self

    def __exit__(self, *exc):
        return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Set the flags given (None keeps one); returns the old values as a tuple."""
    return _set_module_flags(globals(), _FLAGS, (_enabled, _deterministic, _allow_tf32, _fp32_precision))


def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """A context with these flags set, restoring the old ones after."""
    return _flags_context(globals(), _FLAGS, (enabled, deterministic, allow_tf32, fp32_precision))
