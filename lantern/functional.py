"""lantern.functional: the functions torch defines in torch/functional.py, at that path (torch.functional).

They are lantern's top-level functions (this module is imported after lantern); it only makes `torch.functional.einsum` and the like resolve.

>>> import lantern.functional as F
>>> F.einsum("ij->ji", lantern.ones(2, 3)).shape
lantern.Size([3, 2])
"""
from lantern import (  # noqa: F401
    atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes, broadcast_tensors, cartesian_prod, cdist,
    einsum, istft, meshgrid, norm, split, stft, tensordot, unique, unique_consecutive,
)

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "cdist", "einsum", "istft", "meshgrid", "norm", "split", "stft", "tensordot", "unique",
           "unique_consecutive"]
