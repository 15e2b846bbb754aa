"""The repr of a sparse tensor, as PyTorch writes it: its parts' data, then size, nnz, dtype and layout.

>>> lantern.tensor([[0., 2.], [3., 0.]]).to_sparse()
tensor(indices=tensor([[0, 1],
                       [1, 0]]),
       values=tensor([2., 3.]),
       size=(2, 2), nnz=2, layout=lantern.sparse_coo)
"""
from .._tensor_str import _autograd_suffixes, _data_str, _has_default_dtype, _options, _torch_len

_PREFIX = "tensor("


def _part_str(name, part, indent):
    """`name=tensor(<data>)`, its rows aligned under the first one's."""
    head = f"{name}={_PREFIX}"
    if part.numel() == 0:
        return f"{head}[], size={tuple(part._size)})"
    return f"{head}{_data_str(part, indent + len(head))})"


def _layout_parts(t):
    p = t._storage
    if t.layout.name == "sparse_coo":
        return (("indices", p.indices), ("values", p.values))
    return (("crow_indices", p.crow_indices), ("col_indices", p.col_indices), ("values", p.values))


def sparse_repr(t):
    indent = len(_PREFIX)
    body = (",\n" + " " * indent).join(_part_str(name, part, indent) for name, part in _layout_parts(t))
    suffixes = [f"size={tuple(t._size)}", f"nnz={t._nnz()}"]
    if not _has_default_dtype(t):
        suffixes.append(f"dtype={t.dtype!r}")
    suffixes.append(f"layout={t.layout!r}")
    suffixes.extend(_autograd_suffixes(t))
    text = _PREFIX + body
    coo = t.layout.name == "sparse_coo"
    line_len = len(text) - text.rfind("\n") + 1   # PyTorch counts the last line two characters longer
    for i, suffix in enumerate(suffixes):
        width = _torch_len(suffix)
        if (i == 0 and coo) or line_len + width + 2 > _options["linewidth"]:  # COO's start on their own line
            text += ",\n" + " " * indent + suffix
            line_len = indent + width
        else:
            text += ", " + suffix
            line_len += width + 2
    return text + ")"
