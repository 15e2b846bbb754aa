"""torch.backends.mkl: whether the build has Intel MKL (PyTorch's x86 CPU build does) and MKL's verbose switch.

>>> import lantern.backends.mkl as mkl
>>> mkl.is_available()
True
"""
VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available():
    """As PyTorch's x86 CPU build: True. (lantern's linear algebra is NumPy's, often over MKL or OpenBLAS.)"""
    return True


class verbose:
    """A context printing MKL's verbose log at `enable` for its block (lantern has no MKL log to print)."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        if self.enable == VERBOSE_OFF:
            return None
        return self

    def __exit__(self, *exc):
        return False
