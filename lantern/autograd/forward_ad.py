"""Forward-mode AD (torch.autograd.forward_ad): dual tensors carry a tangent beside their value.

Inside a dual level, `make_dual(primal, tangent)` makes a dual tensor; every op on it computes its output's tangent
from its forward derivative (lantern/autograd/forward_kernel.py), so `unpack_dual(f(dual)).tangent` is the
Jacobian-vector product J_f(primal) @ tangent. Leaving the level clears every tangent made in it. As in PyTorch,
this public API gives one level at a time: nesting raises. torch.func's transforms nest levels (`nested_level`,
jacfwd of jacfwd): a tensor keeps a tangent per level (TensorImpl._fw_grads), ops compute the tangents of the
level in effect (tls.forward_level), and `suspended()` steps down one level, so that the ops that compute a value
and its tangent at level k carry their own tangents at the levels below.

>>> import lantern.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     x = fwAD.make_dual(lantern.tensor([1., 2.]), lantern.tensor([1., 0.]))
...     fwAD.unpack_dual(x * x).tangent
tensor([2., 0.])
"""
import collections
import contextlib
import weakref

from ..core.state import tls

_levels = []         # the levels entered and not yet exited, innermost last (0, 1, ...: a level is its depth)
_with_tangent = {}   # level -> {id: tensor given a tangent at that level} (weak): cleared when the level exits


class UnpackedDualTensor(collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """What unpack_dual returns: the primal (a view of the dual without its tangent) and the tangent (or None)."""


def enter_dual_level():
    """Enter a new forward-AD level and return its index (0: nesting is not supported, as in PyTorch)."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    return _enter()


def _enter():
    level = len(_levels)
    _levels.append(level)
    _with_tangent[level] = weakref.WeakValueDictionary()
    _set_level(level)
    return level


def _set_level(level):
    tls.forward_level = level
    tls.forward_ad = level >= 0
    tls.refresh()


def exit_dual_level(*, level=None):
    """Exit the current level (or check that `level` is it): every tangent made in it is cleared."""
    current = _levels[-1] if _levels else -1
    if level is None:
        level = current
    if level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    for t in list(_with_tangent.pop(level).values()):
        t._fw_grad = None
    _levels.pop()
    _set_level(level - 1)


class dual_level:
    """Context manager for a forward-AD level: `with dual_level():` enters one, and exits it on the way out.

    >>> with dual_level() as level:
    ...     level
    0
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


@contextlib.contextmanager
def nested_level():
    """A new forward-AD level, nested inside any open ones (torch.func.jvp's: jacfwd of jacfwd nests two).

    >>> with nested_level() as outer, nested_level() as inner:
    ...     outer, inner
    (0, 1)
    """
    level = _enter()
    try:
        yield level
    finally:
        exit_dual_level(level=level)


@contextlib.contextmanager
def suspended():
    """The level in effect off while the block runs (primal computations, formulas over primals), the one below it
    (if any) in effect instead; back after."""
    with _in_effect(tls.forward_level - 1):
        yield


@contextlib.contextmanager
def _in_effect(level):
    """Ops compute the tangents of `level` (and, through it, of the levels below) while the block runs."""
    was = tls.forward_level
    _set_level(level)
    try:
        yield
    finally:
        _set_level(was)


@contextlib.contextmanager
def _at(level):
    """`level`'s tangents read and written by `_fw_grad` while the block runs (no ops dispatched)."""
    was = tls.forward_level
    tls.forward_level = level
    try:
        yield
    finally:
        tls.forward_level = was


def tangent_at(t, level):
    """t's tangent at `level` (None if it has none), whatever level is in effect."""
    with _at(level):
        return t._fw_grad


def tangents_below(t, level):
    """[(lower, t's tangent at it)] for the open levels below `level` at which t has one (a BatchedTensor's are
    its value's, batched)."""
    found = [(lower, tangent_at(t, lower)) for lower in _levels[:max(level, 0)]]
    return [(lower, tangent) for lower, tangent in found if tangent is not None]


def _current_level(level):
    return tls.forward_level if level is None else level


def set_tangent(t, tangent, level=None):
    """Make `tangent` t's tangent at `level` (default: the one in effect; None removes it)."""
    level = tls.forward_level if level is None else level
    with _at(level):
        t._fw_grad = tangent
    if tangent is not None:
        _with_tangent[level][id(t)] = t


def carry_tangent(source, alias):
    """`alias`, a new tensor object over `source`'s memory, gets source's tangents too, at every level (saved
    outputs, ...)."""
    for level, tangent in list((source._fw_grads or {}).items()):
        set_tangent(alias, tangent, level)
    return alias


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: a view of `tensor` whose tangent is `tangent` (copied into tensor's strides if they differ).

    >>> with dual_level():
    ...     d = make_dual(lantern.ones(2), lantern.zeros(2))
    ...     d._base is not None, unpack_dual(d).tangent
    (True, tensor([0., 0.]))
    """
    level = _current_level(level)
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tangent_at(tensor, level) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}.")
    with _in_effect(level - 1):  # the view keeps tensor's tangents at the levels below
        dual = tensor.view(tensor.shape)
        if not _same_layout(tangent, tensor):
            tangent = _laid_out_like(tensor, tangent)
    set_tangent(dual, tangent, level)
    return dual


def _same_layout(tangent, primal):
    """Do the tangent's strides, offset and storage size match the primal's (so every view of the primal, even an
    as_strided reaching outside it, has a matching view of the tangent)?"""
    return (tangent.stride() == primal.stride() and tangent.storage_offset() == primal.storage_offset()
            and tangent.untyped_storage().nbytes() // tangent.element_size()
            == primal.untyped_storage().nbytes() // primal.element_size())


def _laid_out_like(primal, tangent):
    """A copy of `tangent` in new memory laid out as the primal's: its storage size, strides and offset."""
    whole = tangent.new_zeros(primal.untyped_storage().nbytes() // primal.element_size())
    return whole.as_strided(primal.shape, primal.stride(), primal.storage_offset()).copy_(tangent)


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor: the primal is a view of `tensor` without the tangent; outside a level,
    (tensor, None).

    >>> unpack_dual(lantern.ones(1))
    UnpackedDualTensor(primal=tensor([1.]), tangent=None)
    """
    level = _current_level(level)
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    with _in_effect(level - 1):
        primal = tensor.view(tensor.shape)
    return UnpackedDualTensor(primal, tangent_at(tensor, level))


def levels():
    """The levels entered and not yet exited, outermost first."""
    return tuple(_levels)
