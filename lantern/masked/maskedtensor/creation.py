"""Making MaskedTensors: masked_tensor copies its data (a new leaf), as_masked_tensor keeps it (gradients flow back
to the data it was given).

>>> import lantern
>>> data = lantern.tensor([1., 2.], requires_grad=True)
>>> mt = lantern.masked.as_masked_tensor(data * 3, lantern.tensor([True, False]))
>>> mt.get_data().grad_fn.name()
'MulBackward0'
"""
from .core import MaskedTensor, _wrap

__all__ = ["as_masked_tensor", "masked_tensor"]


def masked_tensor(data, mask, requires_grad=False):
    """A MaskedTensor over copies of `data` and `mask`: a leaf, requiring grad if asked."""
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data, mask):
    """A MaskedTensor over `data` and `mask` themselves: no copy, and `data`'s autograd history kept."""
    return _wrap(data, mask)
