"""`explain(t)`: what a tensor is made of, in words: its storage, the strided view over it, and who else looks at it.

A tensor is a window onto a flat storage: element [i, j] lives at `storage[offset + i*stride0 + j*stride1]`.
`explain` shows that arithmetic for one tensor, which storage elements it reaches, its `_base` and the other live
tensors over the same storage (found, when you ask, among the storage's referrers: nothing is recorded per tensor
while your program runs), its version counter and its autograd state. `.save("x.png")` draws it.

>>> import lantern
>>> x = lantern.arange(6.).view(2, 3)
>>> e = lantern.inspect.explain(x.t())
>>> print(e)  # doctest: +ELLIPSIS
tensor float32[3, 2] on cpu, a view (not contiguous)
  storage          24 bytes = 6 float32 elements, data_ptr 0x...
  storage_offset   0
  sizes            [3, 2]
  strides          [1, 3]  (contiguous strides would be [2, 1])
  is_contiguous    False
  location         [i, j] at storage[i*1 + j*3]
  storage index    [[0, 3],
                    [1, 4],
                    [2, 5]]
  covers           6 of the storage's 6 elements: 0-5
  _base            float32[6], strides [1], offset 0
  live views       2 other tensors share this storage:
                     sizes   strides  offset  covers  relation
                     [6]     [1]      0       0-5     this tensor's _base
                     [2, 3]  [3, 1]   0       0-5     view of the same _base
  version          0  (one counter, shared by the 3 tensors)
  requires_grad    False
>>> e.covered.tolist()
[0, 1, 2, 3, 4, 5]
"""
import gc

import numpy as np

from ..autograd.graph import SavedTensor
from ..core.layout import channels_last, channels_last_3d, strided
from ..core.tensor_impl import TensorImpl, contiguous_strides
from .addressing import address_formula, covered_indices, storage_index_map
from .explain_sparse import SparseTensorExplanation
from .render import render
from .storage_picture import storage_dot

__all__ = ["explain", "TensorExplanation", "storage_index_map", "covered_indices", "describe_ranges", "address_formula"]

_LABEL_WIDTH = 17          # "  " + label padded to this width, then the value
_SHOW_INDEX_MAP = 64       # print the storage index of every element up to this many elements
_MAX_RUNS = 8              # ranges listed before "…"
_MAX_VIEWS = 12            # live views listed in the report (all of them are in .views)


def describe_ranges(indices, limit=_MAX_RUNS):
    """Sorted distinct indices as runs of consecutive numbers: "0-5, 12-17"; long lists end with "…, last".

    >>> describe_ranges(np.array([0, 1, 2, 5, 9, 10]))
    '0-2, 5, 9-10'
    >>> describe_ranges(np.arange(0, 40, 2))
    '0, 2, 4, 6, 8, 10, …, 38 (20 runs, step 2)'
    """
    if len(indices) == 0:
        return "nothing"
    breaks = np.flatnonzero(np.diff(indices) != 1)
    starts = np.concatenate(([indices[0]], indices[breaks + 1]))
    ends = np.concatenate((indices[breaks], [indices[-1]]))

    def run(a, b):
        return str(a) if a == b else f"{a}-{b}"
    if len(starts) <= limit:
        return ", ".join(run(a, b) for a, b in zip(starts, ends))
    shown = [run(a, b) for a, b in zip(starts[:limit - 2], ends[:limit - 2])]
    text = ", ".join(shown + ["…", run(starts[-1], ends[-1])])
    lengths, steps = ends - starts + 1, np.diff(starts)
    if (lengths == lengths[0]).all() and (steps == steps[0]).all():
        size = "" if lengths[0] == 1 else f" of {lengths[0]}"
        return text + f" ({len(starts)} runs{size}, step {steps[0]})"
    return text + f" ({len(starts)} runs)"


def _count(n, noun):
    """"1 element", "6 elements"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _geometry(t):
    return f"{t.dtype.name}{list(t._size)}, strides {list(t._stride)}, offset {t._offset}"


def _storage_numel(t):
    return t._storage.nbytes() // t.dtype.itemsize


def _live_tensors_on(storage):
    """Every live tensor whose storage is `storage`: asked of the garbage collector now, recorded nowhere."""
    return [o for o in gc.get_referrers(storage) if isinstance(o, TensorImpl) and o._storage is storage]


def _saved_by_autograd(tensors):
    """The ids of those of `tensors` that a SavedTensor holds (an op's output kept for backward as an alias)."""
    if not tensors:
        return set()
    return {id(o.tensor) for o in gc.get_referrers(*tensors) if isinstance(o, SavedTensor)}


def _relation(view, t, saved):
    """How `view` is related to `t`, in a few words (`saved`: ids of the tensors autograd keeps)."""
    root = t._base if t._base is not None else t
    if view is t._base:
        return "this tensor's _base"
    if id(view) in saved:
        return "saved for backward (an alias autograd keeps)"
    if view._base is t:
        return "a view whose _base is this tensor"
    if view._base is not None and view._base is root:
        return "view of the same _base"
    if view._base is None:
        return "an alias with no _base (detach(), .data)"
    return "a view of another alias"


def _order(view, t):
    return (view is not t._base, view._offset, len(view._size), view._size, view._stride)


def _contiguity(t):
    """The is_contiguous line, with channels_last for 4-d and channels_last_3d for 5-d tensors."""
    text = str(t.is_contiguous())
    if t.dim() == 4:
        text += f"  (channels_last: {t.is_contiguous(memory_format=channels_last)})"
    elif t.dim() == 5:
        text += f"  (channels_last_3d: {t.is_contiguous(memory_format=channels_last_3d)})"
    return text


def _table(rows, indent):
    """Rows of cells as left-aligned columns (two spaces between them)."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def _grad_fn_name(t):
    fn = t.grad_fn
    return "None" if fn is None else type(fn).__name__


class TensorExplanation:
    """What `explain(t)` found: `str()` is the report; `.covered`, `.views`, `.to_dot()` and `.save(path)`.

    Attributes: `tensor` (the tensor explained), `covered` (sorted storage indices it reaches, int64 array),
    `views` (the other live tensors over the same storage, its `_base` first), `storage_numel` (the storage's
    size in elements of the tensor's dtype).
    """

    def __init__(self, t):
        self.tensor = t
        self.storage_numel = _storage_numel(t)
        self.covered = covered_indices(t._size, t._stride, t._offset)
        views = [v for v in _live_tensors_on(t._storage) if v is not t]
        self.views = sorted(views, key=lambda v: _order(v, t))

    # ---- text ------------------------------------------------------------------------------------------------
    def _lines(self):
        t = self.tensor
        lines = [self._headline()]

        def add(label, value):
            lines.append(f"  {label:<{_LABEL_WIDTH}}{value}")
        storage = t._storage
        add("storage", f"{storage.nbytes()} bytes = {_count(self.storage_numel, t.dtype.name + ' element')}, "
                       f"data_ptr {storage.data_ptr():#x}")
        add("storage_offset", t._offset)
        add("sizes", list(t._size))
        expected = contiguous_strides(t._size)
        note = "" if t.is_contiguous() else f"  (contiguous strides would be {list(expected)})"
        add("strides", f"{list(t._stride)}{note}")
        add("is_contiguous", _contiguity(t))
        add("location", " at ".join(address_formula(t._size, t._stride, t._offset)))
        bits = [name for name, on in (("conjugated", t.is_conj()), ("negated", t.is_neg())) if on]
        if bits:  # a conjugate or negative view (lantern/ops/math_bits.py)
            keys = " and ".join(key for key, on in (("Conjugate", t.is_conj()), ("Negative", t.is_neg())) if on)
            add("reads", f"each element {' and '.join(bits)} (dispatch key {keys})")
        if t.numel() <= _SHOW_INDEX_MAP:
            text = np.array2string(storage_index_map(t._size, t._stride, t._offset), separator=", ")
            first, *rest = text.split("\n")
            add("storage index", first)
            lines.extend(" " * (_LABEL_WIDTH + 2) + line for line in rest)
        add("covers", self._covers())
        if t._base is not None:
            add("_base", _geometry(t._base))
        self._add_views(add, lines)
        sharing = 1 + sum(v._vc is t._vc for v in self.views)
        add("version", f"{t._version}" + (f"  (one counter, shared by the {sharing} tensors)" if sharing > 1 else ""))
        self._add_autograd(add)
        return lines

    def _headline(self):
        t = self.tensor
        what = "a view" if t._base is not None else "not a view"
        if not t.is_contiguous():
            what += " (not contiguous)"
        return f"tensor {t.dtype.name}{list(t._size)} on {t.device}, {what}"

    def _covers(self):
        t, n = self.tensor, len(self.covered)
        text = f"{n} of the storage's {_count(self.storage_numel, 'element')}: {describe_ranges(self.covered)}"
        if t.numel() > n:
            text += f"; its {t.numel()} elements land on these {n}, so some share one"
        return text

    def _add_views(self, add, lines):
        t, views = self.tensor, self.views
        if not views:
            add("live views", "no other live tensor shares this storage")
            return
        add("live views", f"{len(views)} other tensor{'s' if len(views) > 1 else ''} share"
                          f"{'' if len(views) > 1 else 's'} this storage:")
        rows = [["sizes", "strides", "offset", "covers", "relation"]]
        listed = views[:_MAX_VIEWS]
        saved = _saved_by_autograd(listed)
        for v in listed:
            covers = describe_ranges(covered_indices(v._size, v._stride, v._offset), limit=4)
            kind = _relation(v, t, saved) + ("" if v.dtype is t.dtype else f", as {v.dtype.name}")
            rows.append([str(list(v._size)), str(list(v._stride)), str(v._offset), covers, kind])
        lines.extend(_table(rows, " " * (_LABEL_WIDTH + 4)))
        if len(views) > len(listed):
            lines.append(" " * (_LABEL_WIDTH + 4) + f"… and {len(views) - len(listed)} more (all in .views)")

    def _add_autograd(self, add):
        t = self.tensor
        add("requires_grad", t.requires_grad)
        if not t.requires_grad:
            return
        add("is_leaf", t.is_leaf)
        add("grad_fn", _grad_fn_name(t))
        grad = t._grad
        add("grad", "None" if grad is None else f"{grad.dtype.name}{list(grad._size)}")
        add("retains_grad", t.retains_grad)
        if t._base is not None:
            add("_base.grad_fn", _grad_fn_name(t._base))

    def __str__(self):
        return "\n".join(self._lines())

    __repr__ = __str__

    # ---- pictures ----------------------------------------------------------------------------------------------
    def to_dot(self):
        """The picture as Graphviz DOT text: the view's logical grid above its storage strip."""
        return storage_dot(self.tensor, self.covered)

    def save(self, path):
        """Draw the picture into `path` (.svg, .png, .pdf or .dot); returns `path`."""
        return render(self.to_dot(), path)


def explain(t):
    """Explain tensor `t`: its storage, strides, covered storage elements, live views and autograd state.

    >>> w = lantern.ones(2, 3, requires_grad=True)
    >>> print(explain((w * 2)[:, 1]))
    tensor float32[2] on cpu, a view (not contiguous)
      storage          24 bytes = 6 float32 elements, data_ptr 0x...
      storage_offset   1
      sizes            [2]
      strides          [3]  (contiguous strides would be [1])
      is_contiguous    False
      location         [i] at storage[1 + i*3]
      storage index    [1, 4]
      covers           2 of the storage's 6 elements: 1, 4
      _base            float32[2, 3], strides [3, 1], offset 0
      live views       1 other tensor shares this storage:
                         sizes   strides  offset  covers  relation
                         [2, 3]  [3, 1]   0       0-5     this tensor's _base
      version          0  (one counter, shared by the 2 tensors)
      requires_grad    True
      is_leaf          False
      grad_fn          SelectBackward0
      grad             None
      retains_grad     False
      _base.grad_fn    MulBackward0
    """
    if not isinstance(t, TensorImpl):
        raise TypeError(f"explain: expected a Tensor, got {type(t).__name__}")
    if t.layout is not strided:
        return SparseTensorExplanation(t)
    if t.is_quantized:
        from . import explain_quantized  # cycle: inspect.explain_quantized imports inspect.explain
        return explain_quantized.QuantizedTensorExplanation(t)
    return TensorExplanation(t)
