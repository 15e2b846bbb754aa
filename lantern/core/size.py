"""Size: the tuple subclass tensors report their shape as (torch.Size).

>>> lantern.Size([2, 3])
lantern.Size([2, 3])
>>> lantern.Size([2, 3]).numel()
6
"""


class Size(tuple):
    __slots__ = ()

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"lantern.Size([{', '.join(str(s) for s in self)}])"

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):
        return (Size, (tuple(self),))
