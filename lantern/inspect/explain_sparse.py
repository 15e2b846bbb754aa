"""`explain(t)` of a sparse tensor: the dense tensors it is made of (each with its own storage) and how an entry
names an element.

>>> s = lantern.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
>>> print(lantern.inspect.explain(s))  # doctest: +ELLIPSIS
sparse_coo tensor float32[2, 3] on cpu: 3 specified elements, not coalesced
  layout           sparse_coo (dispatch key SparseCPU); no storage of its own
  sparse_dim       2  (dims 0-1 are indexed by `indices`)
  dense_dim        0  (each value is a scalar)
  indices          int64[2, 3], storage 48 bytes = 6 int64 elements, data_ptr 0x...
                   [[0, 1, 1],
                    [2, 0, 2]]
  values           float32[3], storage 12 bytes = 3 float32 elements, data_ptr 0x...
                   [3., 4., 5.]
  location         entry k is element [indices[0, k], indices[1, k]], its value values[k]
  specified        3 of the 6 elements (50%); a position named twice adds up
  requires_grad    False
"""
import numpy as np

_LABEL_WIDTH = 17   # as lantern.inspect.explain's report
_SHOW_PART = 64     # print a part's elements up to this many


def _count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


class SparseTensorExplanation:
    """What `explain(t)` found for a sparse tensor: `str()` is the report, `.parts` maps each part's name to it."""

    def __init__(self, t):
        self.tensor = t
        p = t._storage
        names = ("indices", "values") if t.layout.name == "sparse_coo" else ("crow_indices", "col_indices", "values")
        self.parts = {name: getattr(p, name) for name in names}

    def _lines(self):
        t = self.tensor
        lines = [self._headline()]

        def add(label, value):
            lines.append(f"  {label:<{_LABEL_WIDTH}}{value}")
        add("layout", f"{t.layout.name} (dispatch key {t._backend.key.name}); no storage of its own")
        if t.layout.name == "sparse_coo":
            sparse_dim = t.sparse_dim()
            add("sparse_dim", f"{sparse_dim}  (dims 0-{sparse_dim - 1} are indexed by `indices`)" if sparse_dim > 1
                else f"{sparse_dim}")
            add("dense_dim", f"{t.dense_dim()}  " + ("(each value is a scalar)" if not t.dense_dim()
                                                     else f"(each value is a block of shape {list(t.shape[sparse_dim:])})"))
        for name, part in self.parts.items():
            self._add_part(add, lines, name, part)
        first, *rest = self._location()
        add("location", first)
        lines.extend(" " * (_LABEL_WIDTH + 2) + line for line in rest)
        total = t.numel()
        share = f" ({100 * t._nnz() / total:.0f}%)" if total else ""
        repeats = "; a position named twice adds up" if t.layout.name == "sparse_coo" else ""
        add("specified", f"{t._nnz()} of the {total} elements{share}{repeats}")
        add("requires_grad", t.requires_grad)
        if t.requires_grad:
            add("grad_fn", "None" if t.grad_fn is None else type(t.grad_fn).__name__)
        return lines

    def _headline(self):
        t = self.tensor
        head = f"{t.layout.name} tensor {t.dtype.name}{list(t.shape)} on {t.device}: " \
               f"{_count(t._nnz(), 'specified element')}"
        if t.layout.name == "sparse_coo":
            head += ", coalesced" if t.is_coalesced() else ", not coalesced"
        return head

    @staticmethod
    def _add_part(add, lines, name, part):
        storage = part._storage
        add(name, f"{part.dtype.name}{list(part._size)}, storage {storage.nbytes()} bytes = "
                  f"{_count(storage.nbytes() // part.dtype.itemsize, part.dtype.name + ' element')}, "
                  f"data_ptr {storage.data_ptr():#x}")
        if part.numel() <= _SHOW_PART:
            text = np.array2string(part._host_array(), separator=", ")
            lines.extend(" " * (_LABEL_WIDTH + 2) + line for line in text.split("\n"))

    def _location(self):
        t = self.tensor
        if t.layout.name == "sparse_coo":
            where = ", ".join(f"indices[{d}, k]" for d in range(t.sparse_dim()))
            return [f"entry k is element [{where}], its value values[k]"]
        return ["row i's entries are k = crow_indices[i] .. crow_indices[i + 1] - 1;",
                "entry k is element [i, col_indices[k]], its value values[k]"]

    def __str__(self):
        return "\n".join(self._lines())

    __repr__ = __str__
