"""Flatten and Unflatten (torch.nn.modules.flatten): reshape a range of dims into one, or one dim into several.

>>> import lantern
>>> x = lantern.zeros(2, 3, 4, 5)
>>> lantern.nn.Flatten()(x).shape, lantern.nn.Flatten(0, 2)(x).shape
(lantern.Size([2, 60]), lantern.Size([24, 5]))
>>> lantern.nn.Unflatten(1, (3, 1))(lantern.zeros(2, 3)).shape
lantern.Size([2, 3, 1])
"""
from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """input.flatten(start_dim, end_dim); by default keeps the batch dim and flattens the rest."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """input.unflatten(dim, unflattened_size): dim is split into the sizes given (a tuple or list of ints)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for i, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(size).__name__} at pos {i}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
