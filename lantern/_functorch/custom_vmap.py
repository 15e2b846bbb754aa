"""torch.library.register_vmap: a custom op's own batching rule.

The function registered gets (info, in_dims, *args): the op's arguments with each batched tensor as its whole batch
(the physical tensor) and, in in_dims, the dim that holds the batch (None for an argument that is not batched or
not a tensor); info.batch_size and info.randomness say the rest. It returns (output, out_dims): the batch's outputs
and where each holds its batch. It becomes the op record's `batch_rule`, as the built-in rules are.

>>> import lantern
>>> @lantern.library.custom_op("vmap_doc::twice", mutates_args=())
... def twice(x: lantern.Tensor) -> lantern.Tensor:
...     return x * 2
>>> @lantern.library.register_vmap("vmap_doc::twice")
... def twice_vmap(info, in_dims, x):
...     return x * 2, in_dims[0]
>>> lantern.func.vmap(twice, in_dims=1)(lantern.ones(2, 3))
tensor([[2., 2.],
        [2., 2.],
        [2., 2.]])
"""
import collections

from ..core.tensor_impl import TensorImpl
from ..utils._pytree import tree_flatten, tree_unflatten
from .batched_tensor import active_levels, add_batch_dim, unwrap
from .. import library_rules

VmapInfo = collections.namedtuple("VmapInfo", ["batch_size", "randomness"])


def register_vmap(op, func=None, /, *, lib=None):
    """Make func(info, in_dims, *args, **kwargs) -> (output, out_dims) the vmap rule of the custom op `op` (a
    CustomOpDef, its qualified name or an OpOverload); usable as a decorator."""
    if func is None:
        return lambda f: register_vmap(op, f, lib=lib)
    record = library_rules.resolve(op._opoverload if hasattr(op, "_opoverload") else op)
    record.batch_rule = _rule(func)
    return func


def _rule(func):
    def custom_rule(op, args, level):
        level_info = next(lv for lv in active_levels() if lv.number == level)
        physical, in_dims = [], []
        for a in args:
            value, bdim = unwrap(a, level) if isinstance(a, TensorImpl) else (a, None)
            physical.append(value)
            in_dims.append(bdim)
        output, out_dims = func(VmapInfo(level_info.batch_size, level_info.randomness), tuple(in_dims), *physical)
        leaves, spec = tree_flatten(output)
        dims = [out_dims] * len(leaves) if isinstance(out_dims, int) or out_dims is None else tree_flatten(out_dims)[0]
        wrapped = [leaf if dim is None else add_batch_dim(leaf, dim, level) for leaf, dim in zip(leaves, dims)]
        return tree_unflatten(wrapped, spec)

    custom_rule.__qualname__ = getattr(func, "__qualname__", "custom_rule")
    custom_rule.__module__ = getattr(func, "__module__", __name__)
    return custom_rule
