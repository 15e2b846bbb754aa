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
import lantern
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
    if name == "all":
        filled = data.masked_fill(~mask, True)
        result = filled.all() if dim is None else lantern.all(filled, dim, keepdim)
    else:
        options = {"keepdim": keepdim, "mask": mask}
        if "dtype" in given:
            options["dtype"] = given["dtype"]
        if "correction" in given:
            options["correction"] = given["correction"]
        reduce_all = dim is None or (dim == [] and name in ("amax", "amin"))
        result = getattr(lantern.masked, name)(data, None if reduce_all else dim, **options)
    return wrap_result(result, _kept_anywhere(mask, dim, keepdim))


register_masked_kernel(["sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "all", "var.correction",
                        "std.correction"], reduction)
