"""Reductions of a MaskedTensor: the torch.masked reduction runs over the kept elements, and an output element is
kept where its slice had at least one kept element (`any` of the mask over the reduced dims).

>>> import lantern
>>> mt = lantern.masked.as_masked_tensor(lantern.tensor([[1., 2.], [3., 4.]]),
...                                      lantern.tensor([[True, False], [False, False]]))
>>> mt.sum(1)
MaskedTensor(
  [  1.0000,       --]
)
>>> lantern.amax(mt)
MaskedTensor(  1.0000, True)
"""
import math

import lantern
from ...core.layout import sparse_coo, strided
from . import _sparse
from .core import register_masked_kernel, wrap_result

__all__ = []


def _arguments(op, args):
    return dict(zip((a.name for a in op.schema.args), args))


def _kept_anywhere(mask, dims, keepdim):
    """mask any-reduced over `dims` (every dim for None or [])."""
    if not dims and dims != 0:
        return mask.any()
    for d in sorted((dims,) if isinstance(dims, int) else dims, key=lambda d: d % max(mask.dim(), 1),
                    reverse=True):
        mask = mask.any(dim=d, keepdim=keepdim)
    return mask


def reduction(op, args):
    """lantern.masked.<op>(data, dim, keepdim, dtype, mask) under the any-reduced mask (`all` counts masked-out
    elements as True)."""
    given = _arguments(op, args)
    mt, dim, keepdim = given["self"], given.get("dim"), given.get("keepdim", False)
    data, mask = mt.get_data(), mt.get_mask()
    name = op.name.split(".")[0]
    reduce_all = dim is None or (dim in ([], ()) and name in ("amax", "amin"))   # their dim defaults to []
    if data.layout is not strided:
        return _sparse_reduction(name, data, mask, reduce_all)
    if name == "all":
        filled = data.masked_fill(~mask, True)
        result = filled.all() if dim is None else lantern.all(filled, dim, keepdim)
    else:
        options = {"keepdim": keepdim, "mask": mask}
        options.update((key, given[key]) for key in ("dtype", "correction") if key in given)
        result = getattr(lantern.masked, name)(data, None if reduce_all else dim, **options)
    return wrap_result(result, _kept_anywhere(mask, dim, keepdim))


def _sparse_reduction(name, data, mask, reduce_all):
    """A sparse MaskedTensor reduces over its specified values only, and only all at once (as torch's); argmax and
    argmin of a COO one give the element's position in the flattened tensor, as a float as torch computes it."""
    if not reduce_all:
        raise TypeError(f"The sparse version of {name} is not implemented in reductions (torch's MaskedTensor has no "
                        "rule for it either).")
    values, kept = _sparse.values(data), _sparse.values(mask)
    if name == "all":
        result = values.masked_fill(~kept, True).all()
    else:
        result = getattr(lantern.masked, name)(values, mask=kept)
    if name in ("argmax", "argmin") and data.layout is sparse_coo:
        position = data._indices()[:, int(result)].tolist()
        strides = [math.prod(data.shape[d + 1:]) for d in range(data.dim())]
        result = lantern.tensor(float(sum(i * s for i, s in zip(position, strides))))
    return wrap_result(result, kept.any())


register_masked_kernel(["sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "all", "var.correction",
                        "std.correction"], reduction)
