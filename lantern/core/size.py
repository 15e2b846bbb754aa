"""Size: the tuple subclass tensors report their shape as (torch.Size), and `wrap_dim`, which reads a dim of one.

>>> lantern.Size([2, 3])
lantern.Size([2, 3])
>>> lantern.Size([2, 3]).numel()
6
>>> wrap_dim(-1, 2)
1
"""
from .shown_name import qualified


class Size(tuple):
    __slots__ = ()

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return qualified(f"Size([{', '.join(str(s) for s in self)}])")

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):
        return (Size, (tuple(self),))


def wrap_dim(dim, ndim):
    """A possibly negative dim as an index in [0, ndim); 0-dim tensors accept 0 and -1."""
    try:
        dim = dim.__index__()
    except AttributeError:
        raise TypeError(f"dim must be an int, but got {type(dim).__name__}") from None
    n = ndim if ndim > 0 else 1
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim
