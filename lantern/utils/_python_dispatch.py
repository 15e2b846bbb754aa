"""torch.utils._python_dispatch: dispatch modes and the helpers of `__torch_dispatch__` subclasses.

A `TorchDispatchMode` sees every op that reaches the dispatcher's Python key while it is on (`with Mode():`): after
autograd has recorded the call, after composites have decomposed, before any backend runs. Its
`__torch_dispatch__(func, types, args, kwargs)` gets the op as `func` (lantern.ops.aten.<op>.<overload>) and
returns the result; the mode is off while its handler runs, so `func(*args, **kwargs)` computes as usual (through
any modes further out). The kernel side lives in lantern/ops/python_key.py.

>>> import lantern
>>> class CountOps(TorchDispatchMode):
...     def __init__(self):
...         super().__init__()
...         self.count = 0
...     def __torch_dispatch__(self, func, types, args=(), kwargs=None):
...         self.count += 1
...         return func(*args, **(kwargs or {}))
>>> with CountOps() as counter:
...     _ = (lantern.ones(3) + 1).sum()
>>> counter.count, _get_current_dispatch_mode() is None
(3, True)
"""
import contextlib

from .._tensor import Tensor
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..ops.op_kinds import AliasKind
from ..ops.python_key import set_mode_stack
from ..core import user_warnings

__all__ = ["TorchDispatchMode", "is_traceable_wrapper_subclass", "is_traceable_wrapper_subclass_type",
           "transform_subclass", "return_and_correct_aliasing"]


class TorchDispatchMode:
    """Subclass and define `__torch_dispatch__(self, func, types, args=(), kwargs=None)`; `with mode:` turns it
    on for this thread. Modes nest: the innermost runs first, and the ops its handler calls reach the outer ones."""

    def __init__(self, _dispatch_key=None):
        if _dispatch_key is not None:
            raise NotImplementedError("TorchDispatchMode(_dispatch_key=...): lantern's modes sit at the Python key "
                                      "only (no per-key modes such as PreDispatch)")
        self.old_dispatch_mode_flags = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        user_warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls):
        return False


def _get_current_dispatch_mode():
    """The innermost dispatch mode on, or None."""
    modes = tls.dispatch_modes
    return modes[-1] if modes else None


def _get_current_dispatch_mode_stack():
    """The modes on, outermost first."""
    return list(tls.dispatch_modes)


def _push_mode(mode):
    set_mode_stack(tls.dispatch_modes + (mode,))


def _pop_mode(k=None):
    """Take the innermost mode off (k, a dispatch key, is torch's way of naming per-key modes: lantern has none)."""
    if k is not None:
        raise NotImplementedError("_pop_mode(k): lantern's dispatch modes sit at the Python key only")
    modes = tls.dispatch_modes
    if not modes:
        raise RuntimeError("trying to pop from empty mode stack")
    set_mode_stack(modes[:-1])
    return modes[-1]


@contextlib.contextmanager
def _pop_mode_temporarily(k=None):
    """The innermost mode, off for the block and back on after it."""
    old = _pop_mode(k)
    try:
        yield old
    finally:
        _push_mode(old)


@contextlib.contextmanager
def _disable_current_modes():
    """Every mode off for the block (yields them, innermost first) and back on after it."""
    modes = tls.dispatch_modes
    set_mode_stack(())
    try:
        yield list(reversed(modes))
    finally:
        set_mode_stack(modes)


def is_traceable_wrapper_subclass(t):
    """Whether t is a tensor of a subclass that can be flattened into its inner tensors and rebuilt
    (__tensor_flatten__ / __tensor_unflatten__), as torch.compile's tracing needs.

    >>> is_traceable_wrapper_subclass(lantern.ones(1))
    False
    """
    return isinstance(t, TensorImpl) and is_traceable_wrapper_subclass_type(type(t))


def is_traceable_wrapper_subclass_type(t):
    return (isinstance(t, type) and issubclass(t, Tensor) and t is not Tensor
            and hasattr(t, "__tensor_flatten__") and hasattr(t, "__tensor_unflatten__"))


def transform_subclass(t, callback, outer_size=None, outer_stride=None):
    """A new tensor of t's class whose inner tensors are callback(name, inner) (through __tensor_flatten__ and
    __tensor_unflatten__)."""
    outer_size = t.size() if outer_size is None else outer_size
    outer_stride = t.stride() if outer_stride is None else outer_stride
    attrs, ctx = t.__tensor_flatten__()
    transformed = {attr: callback(attr, getattr(t, attr)) for attr in attrs}
    return type(t).__tensor_unflatten__(transformed, ctx, outer_size, outer_stride)


def return_and_correct_aliasing(func, args, kwargs, out):
    """What a wrapper subclass's handler returns for `func`: an in-place op's `self` or an out= op's `out` (the
    tensors the caller holds), else `out`. torch also makes a view's wrapper share its input's storage; a lantern
    wrapper subclass has no storage, so there is nothing more to correct."""
    alias = func._schema.alias
    if alias is AliasKind.INPLACE:
        return args[0]
    if alias is AliasKind.OUT:
        return (kwargs or {})["out"]
    return out
