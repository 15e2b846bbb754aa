"""Checking sparse tensors: the invariants switch of the sparse constructors (kept beside them,
lantern.ops.sparse_invariants) and gradcheck over sparse inputs (torch.sparse.check_sparse_tensor_invariants,
torch.sparse.as_sparse_gradcheck).

>>> import lantern
>>> with lantern.sparse.check_sparse_tensor_invariants():
...     lantern.sparse_coo_tensor([[0, 5]], [1., 2.], (3,))
Traceback (most recent call last):
RuntimeError: size is inconsistent with indices: for dim 0, size is 3 but found index 5
>>> gradcheck = lantern.sparse.as_sparse_gradcheck(lantern.autograd.gradcheck)
>>> x = lantern.tensor([[0., 1.], [2., 3.]], dtype=lantern.float64).to_sparse().requires_grad_()
>>> gradcheck(lambda s: (s * s).to_dense(), x)
True
"""
import lantern
from ..ops.sparse_invariants import check_sparse_tensor_invariants

__all__ = ["check_sparse_tensor_invariants", "as_sparse_gradcheck"]

_STRIDED_REPRESENTATION = "__STRIDED_REPRESENTATION__"


def as_sparse_gradcheck(gradcheck):
    """`gradcheck` (torch.autograd.gradcheck or a partial of it) extended to functions of sparse tensors: each
    sparse input that requires grad is passed to gradcheck as its values (every element specified, unless
    `masked=True`), rebuilt as a sparse tensor of that layout for the function, and sparse outputs are made dense."""

    def gradcheck_with_sparse_support(func, inputs, **kwargs):
        masked = kwargs.pop("masked", False)

        def func_on_values(*args):
            outputs = func(*_restore(args))
            dense = tuple(o.to_dense(masked_grad=masked) if _is_sparse_input(o) else o
                          for o in (outputs if isinstance(outputs, (list, tuple)) else (outputs,)))
            return dense if isinstance(outputs, (list, tuple)) else dense[0]

        return gradcheck(func_on_values, _as_values(inputs, masked), **kwargs)

    return gradcheck_with_sparse_support


def _is_sparse_input(obj):
    return isinstance(obj, lantern.Tensor) and obj.requires_grad and obj.layout in (lantern.sparse_coo,
                                                                                      lantern.sparse_csr)


def _as_values(args, masked):
    """Each differentiable sparse tensor becomes (marker, its structure, its values as a new leaf)."""
    out = []
    for obj in args if isinstance(args, (list, tuple)) else (args,):
        if not _is_sparse_input(obj):
            out.append(obj)
            continue
        if not masked and obj.layout is lantern.sparse_coo:  # every element specified: each one's gradient counts
            obj = obj.to_dense().sparse_mask(lantern.ones(obj.shape, dtype=lantern.bool).to_sparse())
        if not masked and obj.layout is lantern.sparse_csr:
            rows, cols = obj.shape
            structure = {"layout": obj.layout, "shape": obj.shape, "crow_indices": lantern.arange(0, rows * cols + 1,
                                                                                                  cols),
                         "col_indices": lantern.arange(cols).repeat(rows)}
            values = obj.to_dense().reshape(-1)
        elif obj.layout is lantern.sparse_coo:
            structure = {"layout": obj.layout, "shape": obj.shape, "indices": obj._indices(),
                         "is_coalesced": obj.is_coalesced()}
            values = obj._values()
        else:
            structure = {"layout": obj.layout, "shape": obj.shape, "crow_indices": obj.crow_indices(),
                         "col_indices": obj.col_indices()}
            values = obj.values()
        out += [_STRIDED_REPRESENTATION, structure, values.detach().requires_grad_(True)]
    return tuple(out)


def _restore(args):
    """The inverse of _as_values: sparse tensors rebuilt around the values gradcheck varies."""
    out, args = [], list(args)
    while args:
        item = args.pop(0)
        if isinstance(item, str) and item == _STRIDED_REPRESENTATION:
            structure, values = args.pop(0), args.pop(0)
            if structure["layout"] is lantern.sparse_coo:
                item = lantern.sparse_coo_tensor(structure["indices"], values, structure["shape"],
                                                 is_coalesced=structure["is_coalesced"])
            else:
                item = lantern.sparse_csr_tensor(structure["crow_indices"], structure["col_indices"], values,
                                                 structure["shape"])
        out.append(item)
    return tuple(out)
