"""Forward-mode AD (torch.autograd.forward_ad): dual tensors carry a tangent beside their value.

Inside a dual level, `make_dual(primal, tangent)` makes a dual tensor; every op on it computes its output's tangent
from its forward derivative (lantern/autograd/forward_kernel.py), so `unpack_dual(f(dual)).tangent` is the
Jacobian-vector product J_f(primal) @ tangent. Leaving the level clears every tangent made in it. As in PyTorch,
one level at a time: nesting raises.

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

_levels = []                  # the levels entered and not yet exited (at most one)
_with_tangent = weakref.WeakValueDictionary()  # id -> tensor given a tangent in the current level: cleared on exit


class UnpackedDualTensor(collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """What unpack_dual returns: the primal (a view of the dual without its tangent) and the tangent (or None)."""


def enter_dual_level():
    """Enter a new forward-AD level and return its index (0: nesting is not supported, as in PyTorch)."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append(0)
    tls.forward_ad = True
    tls.refresh()
    return 0


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
    for t in list(_with_tangent.values()):
        t._fw_grad = None
    _with_tangent.clear()
    _levels.pop()
    tls.forward_ad = False
    tls.refresh()


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
def suspended():
    """Forward AD off while the block runs (primal computations, formulas over primals); back on after."""
    was = tls.forward_ad
    tls.forward_ad = False
    tls.refresh()
    try:
        yield
    finally:
        tls.forward_ad = was
        tls.refresh()


def _current_level(level):
    return (_levels[-1] if _levels else -1) if level is None else level


def set_tangent(t, tangent):
    """Make `tangent` t's tangent in the current level (None removes it)."""
    t._fw_grad = tangent
    if tangent is not None:
        _with_tangent[id(t)] = t


def carry_tangent(source, alias):
    """`alias`, a new tensor object over `source`'s memory, gets source's tangent too (saved outputs, ...)."""
    if source._fw_grad is not None:
        set_tangent(alias, source._fw_grad)
    return alias


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: a view of `tensor` whose tangent is `tangent` (copied into tensor's strides if they differ).

    >>> with dual_level():
    ...     d = make_dual(lantern.ones(2), lantern.zeros(2))
    ...     d._base is not None, unpack_dual(d).tangent
    (True, tensor([0., 0.]))
    """
    if _current_level(level) < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tensor._fw_grad is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {_current_level(level)} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}.")
    with suspended():
        dual = tensor.view(tensor.shape)
        if not _same_layout(tangent, tensor):
            tangent = _laid_out_like(tensor, tangent)
    set_tangent(dual, tangent)
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
    if _current_level(level) < 0:
        return UnpackedDualTensor(tensor, None)
    with suspended():
        primal = tensor.view(tensor.shape)
    return UnpackedDualTensor(primal, tensor._fw_grad)
