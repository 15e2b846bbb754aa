"""The sparse layouts' backends: what a sparse tensor is, and the SparseCPU / SparseCsrCPU dispatch keys' kernels.

A COO tensor of shape (s_0, ..., s_{S-1}, d_0, ..., d_{D-1}) (S sparse dims, D dense dims) is two dense tensors:
`indices` (S, nnz) int64, where column k names the sparse position of entry k, and `values` (nnz, d_0, ..., d_{D-1}),
its dense part there. A CSR matrix (n, m) is `crow_indices` (n + 1,), whose row i's entries are positions
crow[i]:crow[i+1] of `col_indices` (nnz,) and `values` (nnz,).

Such a tensor is a lantern.Tensor like any other, with its own backend (`t._backend`): that backend's `key` is the
dispatch key its ops run under (SparseCPU, SparseCsrCPU, above CPU, so dense + sparse runs the sparse kernel) and its
`layout` is the tensor's layout. Where a dense tensor keeps its storage, a sparse one keeps its parts
(`SparseCooParts` / `SparseCsrParts`): it has no storage of its own.

>>> s = lantern.tensor([[0., 2.], [3., 0.]]).to_sparse()
>>> s._backend.key.name, s.layout, s._storage.indices.tolist(), s._storage.values.tolist()
('SparseCPU', lantern.sparse_coo, [[0, 1], [1, 0]], [2.0, 3.0])
"""
from ..core.dispatch_keys import DispatchKey
from ..core.layout import sparse_coo, sparse_csr
from ..core.state import tls
from ..core.tensor_impl import new_tensor_object
from .cpu import cpu


class SparseBackend:
    """A sparse layout on a device: `dense` is the backend of its parts (indices and values are dense tensors)."""

    xp = None  # no array library works on a sparse tensor directly (formulas' fast paths check this)

    def __init__(self, key, layout, dense):
        self.key, self.layout, self.dense = key, layout, dense
        self.device = dense.device

    def array(self, t):
        raise TypeError(f"can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first. (a "
                        f"{t.layout.name} tensor has no array of its own: its indices and values have)")

    array_or_none = host_array = array

    def __repr__(self):
        return f"<lantern {self.key.name} backend>"


sparse_cpu = SparseBackend(DispatchKey.SparseCPU, sparse_coo, cpu)
sparse_csr_cpu = SparseBackend(DispatchKey.SparseCsrCPU, sparse_csr, cpu)
SPARSE_BACKENDS = {sparse_coo: sparse_cpu, sparse_csr: sparse_csr_cpu}


class _SparseParts:
    """What a sparse tensor keeps in place of a storage. Asking it for memory fails as PyTorch does."""

    __slots__ = ()
    _gen = 0  # a storage's buffer generation (make_tensor reads it); sparse parts are never resized

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __getattr__(self, name):
        if name.startswith("__"):   # the protocols pickle and copy look for
            raise AttributeError(name)
        raise NotImplementedError(f"Cannot access storage of SparseTensorImpl (asked for .{name}: a sparse tensor's "
                                  "memory is its indices' and values' storages)")


class SparseCooParts(_SparseParts):
    """indices (sparse_dim, nnz) int64, values (nnz, *dense sizes), and whether the indices are known to be sorted and
    unique (`coalesced`)."""

    __slots__ = ("indices", "values", "sparse_dim", "coalesced")

    def __init__(self, indices, values, sparse_dim, coalesced):
        self.indices, self.values, self.sparse_dim, self.coalesced = indices, values, sparse_dim, coalesced

    def __deepcopy__(self, memo):
        import copy
        return SparseCooParts(copy.deepcopy(self.indices, memo), copy.deepcopy(self.values, memo), self.sparse_dim,
                              self.coalesced)


class SparseCsrParts(_SparseParts):
    """crow_indices (rows + 1,), col_indices (nnz,) and values (nnz,) of a CSR matrix."""

    __slots__ = ("crow_indices", "col_indices", "values")

    def __init__(self, crow_indices, col_indices, values):
        self.crow_indices, self.col_indices, self.values = crow_indices, col_indices, values

    def __deepcopy__(self, memo):
        import copy
        return SparseCsrParts(*(copy.deepcopy(t, memo) for t in (self.crow_indices, self.col_indices, self.values)))


def _make(parts, size, dtype, backend):
    t = new_tensor_object()
    t._storage = parts
    t._size = tuple(size)
    t._stride = (0,) * len(size)   # PyTorch answers stride() of a sparse tensor with zeros
    t._offset = 0
    t.dtype = dtype
    t._backend = backend
    t._nd = None
    t._nd_gen = 0
    t._vc = [0]
    t._base = None
    return t


def make_coo(indices, values, size, coalesced=False):
    """A COO tensor over `indices` (sparse_dim, nnz) int64 and `values` (nnz, *dense sizes); no checks."""
    return _make(SparseCooParts(indices, values, indices._size[0], coalesced), size, values.dtype,
                 SPARSE_BACKENDS[sparse_coo])


def unmarked_alias(t):
    """A COO tensor over t's indices and values, not marked coalesced (AccumulateGrad stores a sparse gradient as
    one, as PyTorch rebuilds it there with _sparse_coo_tensor_unsafe)."""
    p = t._storage
    return make_coo(p.indices, p.values, t._size, p.indices._size[1] <= 1)


def make_csr(crow_indices, col_indices, values, size):
    """A CSR tensor over its three parts; no checks."""
    return _make(SparseCsrParts(crow_indices, col_indices, values), size, values.dtype, SPARSE_BACKENDS[sparse_csr])


LAYOUT_TITLES = {"strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr"}  # as errors name them


def refuse_other_layouts(op, expected):
    """`op` (reading a part of one sparse layout) raises PyTorch's "<op> expected <expected> but got <layout>" for a
    tensor of any other layout."""
    def refuse(op_, args):
        raise RuntimeError(f"{op.schema.name} expected {expected} but got {LAYOUT_TITLES[args[0].layout.name]}")
    for key in (DispatchKey.CPU, DispatchKey.SparseCPU, DispatchKey.SparseCsrCPU):
        op.kernels.setdefault(key, refuse)


def register_kernel(op, layout, kernel):
    """Run `kernel(*args)` for `op` when an input has `layout` (its backend's dispatch key chosen). The kernel runs
    with grad mode off, as a backend kernel does: the ops it calls record nothing (the autograd key records `op`)."""
    def run(op, args):
        enabled = tls.grad_enabled
        tls.grad_enabled = False
        try:
            return kernel(*args)
        finally:
            tls.grad_enabled = enabled
    run.sparse_kernel = kernel   # what the dispatch trace names
    op.kernels[SPARSE_BACKENDS[layout].key] = run
