"""Sparse tensors in PyTorch's checkpoint format: pickled as `torch._utils._rebuild_sparse_tensor(layout, parts)`,
the parts being dense tensors (so their storages are saved as any tensor's are).

A COO tensor's parts are (indices, values, size, is_coalesced), a CSR tensor's (crow_indices, col_indices, values,
size). Loading checks the indices against the size, as torch.load validates the sparse tensors it rebuilds.

>>> import io
>>> buffer = io.BytesIO()
>>> lantern.save(lantern.tensor([[0., 2.], [3., 0.]]).to_sparse(), buffer)
>>> _ = buffer.seek(0)
>>> lantern.load(buffer).to_dense().tolist()
[[0.0, 2.0], [3.0, 0.0]]
"""
from ..core.layout import sparse_coo, sparse_csr
from ..ops.sparse_coo import sparse_coo_tensor
from ..ops.sparse_csr import sparse_csr_tensor


def rebuild_sparse_tensor(layout, data):
    """torch._utils._rebuild_sparse_tensor: a sparse tensor of `layout` from its parts, its indices checked."""
    if layout is sparse_coo:
        indices, values, size, *coalesced = data   # checkpoints before PyTorch 2.1 have no is_coalesced
        return sparse_coo_tensor(indices, values, size, check_invariants=True,
                                 is_coalesced=coalesced[0] if coalesced else None)
    if layout is sparse_csr:
        crow_indices, col_indices, values, size = data
        return sparse_csr_tensor(crow_indices, col_indices, values, size, check_invariants=True)
    raise NotImplementedError(f"rebuilding sparse tensor for layout {layout} (lantern builds sparse_coo and "
                              "sparse_csr)")


def reduce_sparse_tensor(t):
    """(rebuild_sparse_tensor, (layout, parts)): how a sparse tensor pickles (its autograd state is not kept, as
    PyTorch keeps none)."""
    if t.layout is sparse_coo:
        return rebuild_sparse_tensor, (t.layout, (t._indices(), t._values(), t.shape, t.is_coalesced()))
    return rebuild_sparse_tensor, (t.layout, (t.crow_indices(), t.col_indices(), t.values(), t.shape))
