"""Splitting by direction (hsplit, vsplit, dsplit) and the `*_copy` functions: each view function's result as a new
contiguous tensor (torch.permute_copy is permute(...) copied).

>>> [t.tolist() for t in lantern.hsplit(lantern.arange(4), 2)]
[[0, 1], [2, 3]]
>>> lantern.t_copy(lantern.ones(2, 3)).stride()
(2, 1)
"""
from ..core.layout import contiguous_format
from . import keyword_aliases
from .dispatcher import call
from .linalg_common import _into
from .registry import composite, get


# ---- hsplit, vsplit, dsplit ----------------------------------------------------------------------------------------

def _directional_split(name, dim, at_least):
    def split(input, indices_or_sections=None, *, sections=None, indices=None):
        spelled = [a for a in (indices_or_sections, sections, indices) if a is not None]
        if len(spelled) != 1:  # torch's signatures name the argument indices_or_sections, sections or indices
            raise TypeError(f"{name}() received an invalid combination of arguments - expected one of "
                            "(Tensor input, int sections) or (Tensor input, tuple of ints indices)")
        indices_or_sections = spelled[0]
        if not isinstance(indices_or_sections, (int, list, tuple)) and not hasattr(indices_or_sections, "dim"):
            raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                            f"{type(indices_or_sections).__name__}), but expected (Tensor input, int sections) or "
                            "(Tensor input, tuple of ints indices)")
        if input.dim() < at_least:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {at_least} dimension, but got a tensor "
                               f"with {input.dim()} dimensions!")
        d = 0 if name == "hsplit" and input.dim() == 1 else dim
        if isinstance(indices_or_sections, int):
            if indices_or_sections == 0 or input._size[d] % indices_or_sections:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the "
                                   f"dimension {input._size[d]} is not divisible by the split_size "
                                   f"{indices_or_sections}!")
        return input.tensor_split(indices_or_sections, d)
    split.__name__ = name
    split.__doc__ = f"input split along dim {dim} into equal sections or at the given indices (torch.{name})."
    return split


hsplit = composite("hsplit", _directional_split("hsplit", 1, 1))
vsplit = composite("vsplit", _directional_split("vsplit", 0, 2))
dsplit = composite("dsplit", _directional_split("dsplit", 2, 3))


# ---- the *_copy functions -----------------------------------------------------------------------------------------

def _copied(result):
    return result.clone(memory_format=contiguous_format)


def _copy_function(name, view):
    """name(input, ..., *, out=None): view(input, ...) as a new contiguous tensor (or tuple of them), written into
    out when given."""
    def fn(input, *args, out=None, **kwargs):
        result = view(input, *args, **kwargs)
        copies = tuple(_copied(r) for r in result) if isinstance(result, (tuple, list)) else _copied(result)
        if out is None:
            return copies
        if isinstance(copies, tuple):
            for target, c in zip(out, copies):
                target.copy_(c)
            return None
        return _into(out, copies, name)
    fn.__name__ = name
    fn.__doc__ = f"The result of {name[:-len('_copy')]} as a new contiguous tensor, sharing no memory with input."
    return fn


def _method(name):
    return lambda input, *args, **kwargs: getattr(input, name)(*args, **kwargs)


def _narrow(input, dim, start, length):
    if dim >= max(input.dim(), 1):  # narrow_copy checks the dim with an assertion of its own
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false. "
                           f"(narrow_copy: dim {dim} of a tensor of shape {list(input.shape)}; give a dim below "
                           f"{max(input.dim(), 1)})")
    return input.narrow(dim, start, length)


def _slice(input, dim=0, start=None, end=None, step=1, **numpy_spelling):
    (dim,) = keyword_aliases.resolve("slice_copy", numpy_spelling, ("dim",), (dim,))  # axis= for dim=, as torch
    return call(get("slice"), (input, dim, start, end, step))


_VIEWS = {
    "alias": lambda input: input.view_as(input), "as_strided": _method("as_strided"), "ccol_indices": _method("ccol_indices"),
    "col_indices": _method("col_indices"), "crow_indices": _method("crow_indices"), "detach": _method("detach"),
    "diagonal": _method("diagonal"), "expand": _method("expand"), "indices": _method("indices"),
    "narrow": _narrow,
    "permute": _method("permute"), "row_indices": _method("row_indices"), "select": _method("select"),
    "slice": _slice, "split": _method("split"), "split_with_sizes": _method("split_with_sizes"),
    "squeeze": _method("squeeze"),
    "t": _method("t"), "transpose": _method("transpose"), "unbind": _method("unbind"), "unfold": _method("unfold"),
    "unsqueeze": _method("unsqueeze"), "values": _method("values"), "view": _method("view"),
    "view_as_complex": lambda input: call(get("view_as_complex"), (input,)),
    "view_as_real": lambda input: call(get("view_as_real"), (input,)),
}

for _name, _view in _VIEWS.items():
    composite(f"{_name}_copy", _copy_function(f"{_name}_copy", _view), method=_name == "narrow")
