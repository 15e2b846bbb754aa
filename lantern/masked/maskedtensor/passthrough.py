"""Ops that move or copy elements without computing on them (views, indexing, cat, stack, clone, casts, where,
copy_, softmax): the same op runs on the data and on the mask.

>>> import lantern
>>> mt = lantern.masked.as_masked_tensor(lantern.tensor([[1., 2.], [3., 4.]]),
...                                      lantern.tensor([[True, False], [True, True]]))
>>> mt.t()
MaskedTensor(
  [
    [  1.0000,   3.0000],
    [      --,   4.0000]
  ]
)
>>> mt[1]
MaskedTensor(
  [  3.0000,   4.0000]
)
"""
import lantern
from .core import call_on, data_of, is_masked_tensor, mask_of, register_masked_kernel, wrap_result

__all__ = []

# torch's pass-through ops, and narrow (torch's narrow is slice; lantern's is an op of its own)
PASSTHROUGH_NAMES = ["select", "transpose", "t", "slice", "narrow", "index.Tensor", "expand", "view", "_unsafe_view",
                     "alias", "cat", "unsqueeze", "unfold", "unfold_backward", "stack", "split.Tensor"]


def passthrough(op, args):
    """op on the data, op on the mask."""
    return wrap_result(call_on(op, data_of(args)), call_on(op, mask_of(args)))


def on_data(op, args):
    """op on the data; the mask is kept as it is (clone)."""
    return wrap_result(call_on(op, data_of(args)), args[0].get_mask())


def to_copy(op, args):
    """A cast or a move: the data as asked, the mask moved with it but kept bool."""
    data = call_on(op, data_of(args))
    mask = call_on(op, (args[0].get_mask(), lantern.bool, *args[2:]))
    return wrap_result(data, mask)


def where(op, args):
    """where(condition, x, y) on the data and on the masks; a plain tensor or a number among x and y counts as
    kept everywhere."""
    condition, x, y = data_of(args[0]), args[1], args[2]
    masks = [v.get_mask() if is_masked_tensor(v) else True for v in (x, y)]
    return wrap_result(lantern.where(condition, data_of(x), data_of(y)), lantern.where(condition, *masks))


def softmax(op, args):
    """softmax over the kept elements along dim; masked-out elements are 0 (as torch's _masked_softmax)."""
    mt, dim, dtype = args
    return wrap_result(lantern.masked.softmax(mt.get_data(), dim, dtype=dtype, mask=mt.get_mask()), mt.get_mask())


def copy_(op, args):
    """Copy src's data into self's; self keeps its mask (torch's rule compares the two masks' masks, so any src
    passes: a copy never changes which elements exist)."""
    call_on(op, data_of(args))
    return args[0]


register_masked_kernel(PASSTHROUGH_NAMES, passthrough)
register_masked_kernel(["clone"], on_data)
register_masked_kernel(["_to_copy"], to_copy)
register_masked_kernel(["where"], where)
register_masked_kernel(["softmax"], softmax)
register_masked_kernel(["copy_"], copy_)
