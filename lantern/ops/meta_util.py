"""Helpers that meta functions share: dim wrapping, broadcasting, type promotion over operands, error text.

This is lantern's TensorIterator: every pointwise op gets its output shape and dtype, and its errors, here.

>>> broadcast_shapes((5, 1, 4, 1), (3, 1, 1))
(5, 3, 4, 1)
"""
from ..core import dtype as dt
from ..core.promotion import result_type_of, wrapped_scalar_dtype
from ..core.size import wrap_dim
from ..core.tensor_impl import TensorImpl, contiguous_strides


def wrap_dims(dims, ndim):
    """A dim or sequence of dims, wrapped; a dim named twice is an error, as in PyTorch's reductions."""
    if isinstance(dims, int):
        return (wrap_dim(dims, ndim),)
    out = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        d = next(d for d in out if out.count(d) > 1)
        raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


def broadcast_shapes(a, b):
    if a == b:
        return a
    la, lb = len(a), len(b)
    n = max(la, lb)
    out = []
    for i in range(n):
        x = a[i - n + la] if i - n + la >= 0 else 1
        y = b[i - n + lb] if i - n + lb >= 0 else 1
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}")
    return tuple(out)


def broadcast_all(shapes):
    out = ()
    for s in shapes:
        out = broadcast_shapes(out, s)
    return out


def shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def type_name(x):
    """PyTorch's legacy type name for error messages: torch.FloatTensor, or the Python type's name."""
    if isinstance(x, TensorImpl):
        return f"torch.{x.dtype.legacy}Tensor"
    return type(x).__name__


def operands_result_type(operands):
    """Promote tensors and Python numbers together, each tier (dim>0, 0-dim, number) as TensorIterator does."""
    dims, zeros, scalars = [], [], []
    for x in operands:
        if isinstance(x, TensorImpl):
            (dims if x._size else zeros).append(x.dtype)
        elif x is not None:
            scalars.append(wrapped_scalar_dtype(x))
    return result_type_of(dims, zeros, scalars)


def pointwise_shape(operands):
    shape = None
    for x in operands:
        if isinstance(x, TensorImpl):
            shape = x._size if shape is None else broadcast_shapes(shape, x._size)
    return () if shape is None else shape


def pointwise_binary(a, b):
    """(shape, dtype) of a pointwise op over a and b; the common two-same-tensors case is the hot path."""
    if isinstance(a, TensorImpl):
        if isinstance(b, TensorImpl):
            if a.dtype is b.dtype:
                return broadcast_shapes(a._size, b._size), a.dtype
        elif type(b) is float and a.dtype.category >= dt.FLOATING:
            return a._size, a.dtype
    return pointwise_shape((a, b)), operands_result_type((a, b))


NO_OVERLAP, FULL, PARTIAL, TOO_HARD = "no", "full", "partial", "too hard"


def overlap_status(a, b):
    """How two tensors' memory relate, as PyTorch's get_overlap_status: FULL (same elements, same layout),
    PARTIAL (some shared bytes), NO_OVERLAP, or TOO_HARD (one of them is not dense: not worth deciding)."""
    if a is b:
        return FULL
    if a.numel() == 0 or b.numel() == 0:
        return NO_OVERLAP
    if not a.is_non_overlapping_and_dense() or not b.is_non_overlapping_and_dense():
        return TOO_HARD
    if a._storage is b._storage:
        a_begin, b_begin = a._offset * a.dtype.itemsize, b._offset * b.dtype.itemsize
        a_end, b_end = a_begin + a.nbytes, b_begin + b.nbytes
        if a_begin == b_begin and a_end == b_end:
            return FULL if a._stride == b._stride else PARTIAL
        if a_begin < b_end and b_begin < a_end:
            return PARTIAL
    return NO_OVERLAP


def iterator_strides(shape, operands):
    """Dense strides for a new tensor of `shape` that follow the memory order of `operands` [(sizes, strides)],
    as TensorIterator's reorder_dimensions (and c10's infer_dense_strides) decide it: dims insertion-sorted
    fastest first by the first operand's strides, broadcast (stride 0) dims skipped, ties broken by the smaller
    size and then by the next operand; no evidence either way keeps the row-major order.

    >>> iterator_strides((4, 3), [((4, 3), (1, 4))])
    (1, 4)
    """
    n = len(shape)
    strides_of = []
    for size, stride in operands:
        lead = n - len(size)
        strides_of.append([0 if d < lead or (size[d - lead] == 1 and shape[d] != 1) else stride[d - lead]
                           for d in range(n)])

    def should_swap(d0, d1):
        for st in strides_of:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(n - 1, -1, -1))  # fastest dim first
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    if perm == list(range(n - 1, -1, -1)):
        return contiguous_strides(shape)  # the cached tuple, which has_cached_contiguous_strides recognises
    strides = [0] * n
    acc = 1
    for d in perm:
        strides[d] = acc
        acc *= shape[d] if shape[d] > 1 else 1
    return tuple(strides)


def strides_in_order(size, order):
    """Dense strides visiting the dims in `order`, fastest first: (2, 3) with order (0, 1) -> (1, 2)."""
    strides = [0] * len(size)
    acc = 1
    for d in order:
        strides[d] = acc
        acc *= size[d]
    return tuple(strides)


def pointwise_strides(shape, tensors):
    """A pointwise op's output strides: the inputs' memory order, so `(x.t() + 1).stride() == (1, 3)` for a
    contiguous (3, 3) x.

    >>> pointwise_strides((4, 3), [lantern.ones(3, 4).t()])
    (1, 4)
    """
    return iterator_strides(shape, [(t._size, t._stride) for t in tensors if t._size])
