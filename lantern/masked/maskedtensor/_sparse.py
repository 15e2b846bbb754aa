"""Sparse MaskedTensors: data and mask are sparse tensors of one layout (COO or CSR) with the same specified
positions, and ops compute on the data's values, keeping the positions.

>>> import lantern
>>> data = lantern.tensor([[0., 2.], [3., 0.]]).to_sparse()
>>> map_values(data, lambda v: v * 10).values()
tensor([20., 30.])
"""
import lantern
from ...core.layout import sparse_coo, sparse_csr

__all__ = []


def positions(t):
    """The index tensors that say where a sparse tensor's values sit: (indices,) for COO (as stored, coalesced or
    not), (crow, col) for CSR."""
    if t.layout is sparse_coo:
        return (t._indices(),)
    return t.crow_indices(), t.col_indices()


def values(t):
    """A sparse tensor's values as stored (a view: writing them writes the tensor)."""
    return t._values() if t.layout is sparse_coo else t.values()


def same_positions(a, b):
    pa, pb = positions(a), positions(b)
    return all(x.shape == y.shape and bool(lantern.equal(x, y)) for x, y in zip(pa, pb))


def map_values(data, fn):
    """A sparse tensor at data's positions holding fn(data's values)."""
    if data.layout is sparse_coo:
        result = lantern.sparse_coo_tensor(data._indices(), fn(data._values()), data.shape)
        return result.coalesce() if data.is_coalesced() else result
    return lantern.sparse_csr_tensor(data.crow_indices(), data.col_indices(), fn(data.values()), data.shape)


def masks_equal(a, b):
    """Two sparse masks specify the same positions with the same values."""
    return a.layout == b.layout and same_positions(a, b) and bool(lantern.equal(values(a), values(b)))


def where(mask, data, fill_value):
    """data at mask's positions: its value where the mask holds True (0 where data specifies nothing), fill_value
    where the mask holds False. Both COO (coalesced) or both CSR."""
    if mask.layout is sparse_csr:
        return where(mask.to_sparse_coo(), data.to_sparse_coo(), fill_value).to_sparse_csr()
    index = tuple(mask.indices())
    values = lantern.where(mask.values(), data.to_dense()[index], fill_value)
    return lantern.sparse_coo_tensor(mask.indices(), values, data.shape).coalesce()


def aligned(data, mask):
    """data and mask as a sparse MaskedTensor keeps them: COO coalesced, and data moved to mask's positions when
    they specify different numbers of elements (as torch does)."""
    if data.layout is sparse_coo:
        data, mask = data.coalesce(), mask.coalesce()
    if data._nnz() != mask._nnz():
        data = where(mask, data, 0)
    return data, mask


def check_positions(data, mask):
    if data.layout is sparse_coo and not same_positions(data, mask):
        raise ValueError("data and mask are both sparse COO tensors but do not have the same indices.")
    if data.layout is sparse_csr and not same_positions(data, mask):
        raise ValueError("data and mask are both sparse CSR tensors but do not share either crow or col indices.")
