"""The switch that makes the sparse constructors check their indices (torch.sparse.check_sparse_tensor_invariants).

sparse_coo_tensor and sparse_csr_tensor check their invariants when their `check_invariants` argument is True, or
when it is None and this switch is on. Off by default; thread-local.

>>> check_sparse_tensor_invariants.is_enabled(), checks_invariants(None), checks_invariants(True)
(False, False, True)
>>> with check_sparse_tensor_invariants():
...     checks_invariants(None)
True
"""
import threading

__all__ = ["check_sparse_tensor_invariants", "checks_invariants"]


class _Switch(threading.local):
    enabled = False


_switch = _Switch()


class check_sparse_tensor_invariants:
    """Whether the sparse constructors (sparse_coo_tensor, sparse_csr_tensor) check their indices when their
    `check_invariants` argument is left None. Off by default; `enable()` / `disable()` set it, and an instance is a
    context manager (entered once at a time) and a decorator that switch it for a block or a call."""

    @staticmethod
    def is_enabled():
        return _switch.enabled

    @staticmethod
    def enable():
        _switch.enabled = True

    @staticmethod
    def disable():
        _switch.enabled = False

    def __init__(self, enable=True):
        self.state = enable
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a different context manager "
                               "instance for context nesting.")
        self.saved_state = self.is_enabled()
        _switch.enabled = self.state

    def __exit__(self, *exc):
        _switch.enabled = self.saved_state
        self.saved_state = None

    def __call__(self, method):
        def checked(*args, **kwargs):
            with type(self)(self.state):
                return method(*args, **kwargs)
        return checked


def checks_invariants(check_invariants):
    """What a constructor's `check_invariants` argument means: itself, or the switch when it is None."""
    return _switch.enabled if check_invariants is None else check_invariants
