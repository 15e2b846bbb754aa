"""FuzzedSparseTensor: a Fuzzer tensor in COO layout, its nonzero count from the step's `density` parameter and
its coalescing from the `coalesced` parameter, as torch.utils.benchmark's.

>>> from lantern.utils.benchmark import FuzzedSparseTensor
>>> x, props = FuzzedSparseTensor("x", size=(4, 5))._make_tensor({"density": 0.5, "coalesced": True}, None)
>>> x.layout, props["sparse_dim"]
(lantern.sparse_coo, 2)
"""
import math
from numbers import Number

import lantern
from .fuzzer import FuzzedTensor

__all__ = ["FuzzedSparseTensor"]


class FuzzedSparseTensor(FuzzedTensor):
    """`sparse_dim`, `nnz`, `density` and `coalesced` name the step's parameters for those properties."""

    def __init__(self, name, size, min_elements=None, max_elements=None, dim_parameter=None, sparse_dim=None,
                 nnz=None, density=None, coalesced=None, dtype=lantern.float32, cuda=False):
        super().__init__(name=name, size=size, min_elements=min_elements, max_elements=max_elements,
                         dim_parameter=dim_parameter, dtype=dtype, cuda=cuda)
        self._density, self._coalesced, self._sparse_dim = density, coalesced, sparse_dim

    @staticmethod
    def sparse_tensor_constructor(size, dtype, sparse_dim, nnz, is_coalesced):
        """A COO tensor with `nnz` random indices over the first `sparse_dim` dimensions. Uncoalesced, each index
        appears twice (2 * nnz values), so both forms hold the same pattern."""
        if isinstance(size, Number):
            size = [size] * sparse_dim
        if all(size[d] <= 0 for d in range(sparse_dim)) and nnz != 0:
            raise AssertionError("invalid arguments")
        value_size = [nnz] + list(size[sparse_dim:])
        if dtype.is_floating_point:
            values = lantern.rand(size=value_size, dtype=dtype, device="cpu")
        else:
            values = lantern.randint(1, 127, size=value_size, dtype=dtype, device="cpu")
        indices = lantern.rand(sparse_dim, nnz, device="cpu")
        indices.mul_(lantern.tensor(size[:sparse_dim]).unsqueeze(1).to(indices))
        indices = indices.to(lantern.long)
        if not is_coalesced:
            values = lantern.cat([values, lantern.randn_like(values)], 0)
            indices = lantern.cat([indices, indices], 1)
        x = lantern.sparse_coo_tensor(indices, values, lantern.Size(size))
        return x.coalesce() if is_coalesced else x

    def _make_tensor(self, params, state):
        size, _, _ = self._get_size_and_steps(params)
        density = params["density"]
        nnz = math.ceil(sum(size) * density)
        if nnz > sum(size):
            raise AssertionError("nnz cannot exceed total number of elements")
        sparse_dim = min(params["sparse_dim"] if self._sparse_dim else len(size), len(size))
        tensor = self.sparse_tensor_constructor(size, self._dtype, sparse_dim, nnz, params["coalesced"])
        if self._cuda:
            tensor = tensor.cuda()
        properties = {"numel": int(tensor.numel()), "shape": tensor.size(), "is_coalesced": tensor.is_coalesced(),
                      "density": density, "sparsity": 1.0 - density, "sparse_dim": tensor.sparse_dim(),
                      "dense_dim": tensor.dense_dim(), "is_hybrid": len(size[tensor.sparse_dim():]) > 0,
                      "dtype": str(self._dtype)}
        return tensor, properties
