"""Splitting by direction (hsplit, vsplit, dsplit), split_with_sizes, the unsafe_ splits, and the `*_copy`
functions: each view function's result as a new contiguous tensor (torch.permute_copy is permute(...) copied).

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


# ---- hsplit, vsplit, dsplit, split_with_sizes, unsafe_split, unsafe_chunk ----------------------------------------

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


def split_with_sizes(input, split_sizes, dim=0):
    """input split along dim into pieces of the given sizes (which must add up to that dim's size)."""
    d = dim % max(input.dim(), 1)
    if sum(split_sizes) != input._size[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {input._size[d]} (input tensor's "
                           f"size at dimension {dim}), but got split_sizes={list(split_sizes)}")
    return input.split(list(split_sizes), dim)


def unsafe_split(input, split_size, dim=0):
    """split, for callers that promise not to modify the pieces in place (lantern's pieces are plain views). A
    conjugate or negative view is resolved first: torch's unsafe forms are no view ops, so its fallback resolves."""
    return _resolved(input).split(split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return split_with_sizes(_resolved(input), split_sizes, dim)


def unsafe_chunk(input, chunks, dim=0):
    """chunk, for callers that promise not to modify the pieces in place (a view with bits resolved first)."""
    return _resolved(input).chunk(chunks, dim)


def _resolved(input):
    return input.resolve_conj().resolve_neg()


composite("split_with_sizes", split_with_sizes)
composite("unsafe_split", unsafe_split)
composite("unsafe_split_with_sizes", unsafe_split_with_sizes)
composite("unsafe_chunk", unsafe_chunk)


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
    "slice": _slice, "split": _method("split"), "split_with_sizes": split_with_sizes, "squeeze": _method("squeeze"),
    "t": _method("t"), "transpose": _method("transpose"), "unbind": _method("unbind"), "unfold": _method("unfold"),
    "unsqueeze": _method("unsqueeze"), "values": _method("values"), "view": _method("view"),
    "view_as_complex": lambda input: call(get("view_as_complex"), (input,)),
    "view_as_real": lambda input: call(get("view_as_real"), (input,)),
}

for _name, _view in _VIEWS.items():
    composite(f"{_name}_copy", _copy_function(f"{_name}_copy", _view), method=_name == "narrow")
