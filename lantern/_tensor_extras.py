"""Less common Tensor methods: predicates (`is_same_size`, `is_set_to`, `is_nonzero`), Python callables applied
element by element (`apply_`, `map_`, `map2_`), `fill_diagonal_`, `as_subclass`, `module_load`, the sparse
products `smm`/`sspaddmm` and `slice_inverse`, and the legacy ones torch keeps for old programs (`new`, `resize`,
`resize_as`, `volatile`, `reinforce`).

>>> import lantern as torch
>>> x = torch.tensor([1.0, 2.0, 3.0])
>>> x.apply_(lambda v: v * 10).tolist(), x.is_same_size(torch.zeros(3)), x.is_set_to(x[:])
([10.0, 20.0, 30.0], True, True)
>>> torch.zeros(3, 3).fill_diagonal_(5).diagonal().tolist()
[5.0, 5.0, 5.0]
"""
import operator

import numpy as np

from . import _sparse_products
from ._construct import legacy_new
from ._legacy_types import type_string
from .core import dtype as dt
from .core.layout import sparse_coo
from .core.tensor_impl import TensorImpl
from .ops.dispatcher import call
from .ops.registry import get
from .core.overridable import overridable, overridable_property
from .core import user_warnings

_REINFORCE_REMOVED = ("reinforce() was removed. Use torch.distributions instead: sample the action from a "
                      "distribution (m = torch.distributions.Categorical(probs); action = m.sample()) and "
                      "backpropagate the loss -m.log_prob(action) * reward.")


def _as_element(dtype, value):
    """A Python callable's result as an element of `dtype` (floats truncate into integer dtypes, as a C++ cast)."""
    if not (hasattr(value, "__float__") or hasattr(value, "__index__") or hasattr(value, "__complex__")):
        raise TypeError(f"must be real number, not {type(value).__name__}")
    if dtype.is_complex:
        return complex(value)
    if dtype is dt.bool:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    try:
        return operator.index(value)
    except TypeError:
        return int(float(value))


def _for_each_element(name, self, fn, others):
    """self[i] = fn(self[i], *(o[i] for o in others)) for every element, written straight into self's memory (so,
    as torch's, without a version bump or an autograd record)."""
    if self.device.type != "cpu":
        raise RuntimeError(f"{name} is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    if not callable(fn):
        raise TypeError(f"'{type(fn).__name__}' object is not callable")
    target = self.numpy()
    sources = [o.detach().expand(self.shape).numpy() for o in others]
    for index in np.ndindex(*target.shape):
        target[index] = _as_element(self.dtype, fn(target[index].item(), *(s[index].item() for s in sources)))
    return self


def _require_same_dtype(name, self, other, argument):
    if not isinstance(other, TensorImpl):
        raise TypeError(f"{name}(): argument '{argument}' must be Tensor, not {type(other).__name__}")
    if other.dtype is not self.dtype:
        raise TypeError(f"{name}: expected {type_string(self.dtype)} for {argument} (got {type_string(other.dtype)})")


class TensorExtras:
    """The methods above, as a mixin of lantern.Tensor."""

    __slots__ = ()

    # ---- predicates ----------------------------------------------------------------------------------------------
    @overridable
    def is_same_size(self, other):
        """Same sizes (strides and dtype do not matter)."""
        return self._size == other._size

    @overridable
    def is_set_to(self, tensor):
        """Same memory, offset, sizes and strides: the two tensors are the same view of one storage."""
        return (self._storage is tensor._storage and self._offset == tensor._offset
                and self._size == tensor._size and self._stride == tensor._stride)

    @overridable
    def is_nonzero(self):
        """The single element's truth value."""
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'no values' if n == 0 else 'more than one value'} "
                               "is ambiguous")
        return bool(self.item())

    @overridable
    def is_distributed(self):
        """False: a lantern tensor is never a distributed (THD) tensor."""
        return False

    @overridable
    def const_data_ptr(self):
        """The address of the first element, for reading (the same address data_ptr() gives)."""
        return self.data_ptr()

    # ---- Python callables, element by element --------------------------------------------------------------------
    @overridable
    def apply_(self, callable):
        """self[i] = callable(self[i]) for every element (CPU only; slow: one Python call per element)."""
        return _for_each_element("apply_", self, callable, ())

    @overridable
    def map_(self, tensor, callable):
        """self[i] = callable(self[i], tensor[i]), tensor broadcast to self's shape and of self's dtype."""
        _require_same_dtype("map_", self, tensor, "'other'")
        return _for_each_element("map_", self, callable, (tensor,))

    @overridable
    def map2_(self, x, y, callable):
        """self[i] = callable(self[i], x[i], y[i])."""
        _require_same_dtype("map2_", self, x, "argument 'x'")
        _require_same_dtype("map2_", self, y, "argument 'y'")
        return _for_each_element("map2_", self, callable, (x, y))

    # ---- writes --------------------------------------------------------------------------------------------------
    @overridable
    def fill_diagonal_(self, fill_value, wrap=False):
        """Fill the main diagonal (all dims of equal length, or a matrix); with wrap, a tall matrix's diagonal
        starts again every columns + 1 rows."""
        n = self.dim()
        if n < 2:
            raise RuntimeError("dimensions must larger than 1")
        height, width = self._size[0], self._size[1]
        if n > 2 and len(set(self._size)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        step = sum(self._stride)
        self.as_strided((min(self._size),), (step,), self._offset).fill_(fill_value)
        if wrap and n == 2 and height > width + 1:
            count = -(-self.numel() // (width + 1)) - width
            self.as_strided((count,), (step,), self._offset + (width + 1) * self._stride[0]).fill_(fill_value)
        return self

    # ---- subclasses and loading ----------------------------------------------------------------------------------
    def as_subclass(self, cls):
        """An instance of `cls` (a Tensor subclass) over the same memory, on the same autograd graph."""
        if not (isinstance(cls, type) and issubclass(cls, TensorImpl)):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                            "possible. Make sure your class inherits from Tensor.")
        out = call(get("alias"), (self,))
        out.__class__ = cls
        return out

    @overridable
    def module_load(self, other, assign=False):
        """What load_state_dict swaps in for this parameter or buffer: `other` detached when assigning, else self
        holding other's values, detached."""
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    # ---- sparse products and slice_inverse (see lantern._sparse_products) -----------------------------------------
    @overridable
    def smm(self, mat):
        return _sparse_products.smm(self, mat)

    @overridable
    def sspaddmm(self, mat1, mat2, *, beta=1, alpha=1):
        return _sparse_products.sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)

    @overridable
    def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
        return _sparse_products.slice_inverse(self, src, dim, start, end, step)

    # ---- resizing a sparse COO tensor ----------------------------------------------------------------------------
    @overridable
    def sparse_resize_(self, size, sparse_dim, dense_dim):
        """Give a COO tensor a new size and split into sparse and dense dims. With entries, only the sparse sizes
        may change, and only grow (every index stays valid); an empty one may change anything."""
        return _sparse_resize(self, "sparse_resize_", size, sparse_dim, dense_dim, keep_entries=True)

    @overridable
    def sparse_resize_and_clear_(self, size, sparse_dim, dense_dim):
        """Drop every entry of a COO tensor, then give it a new size and split into sparse and dense dims."""
        return _sparse_resize(self, "sparse_resize_and_clear_", size, sparse_dim, dense_dim, keep_entries=False)

    # ---- DLPack: sharing memory with other array libraries (lantern.utils.dlpack) --------------------------------
    @overridable
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over this CPU tensor's memory, made by NumPy's exporter from the array over it."""
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if self.is_conj():
            raise BufferError("Can't export tensors with the conjugate bit set")
        return self.numpy().__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)

    @overridable
    def __dlpack_device__(self):
        """(device type, index) in DLPack's numbering: kDLCPU is 1."""
        return (1, 0)

    # ---- legacy --------------------------------------------------------------------------------------------------
    @overridable
    def new(self, *args, **kwargs):
        """The legacy constructor, in this tensor's dtype: new(2, 3) uninitialised, new([1, 2]) from data."""
        return legacy_new(self.dtype, args, kwargs)

    @overridable
    def resize(self, *sizes):
        """A reshaped copy-free view with the same number of elements (deprecated: use reshape)."""
        user_warnings.warn("non-inplace resize is deprecated")
        return _resized(self, sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes)

    @overridable
    def resize_as(self, tensor):
        user_warnings.warn("non-inplace resize_as is deprecated")
        return _resized(self, tensor.size())

    @overridable_property
    def volatile(self):
        """Always False: volatile was replaced by torch.no_grad()."""
        user_warnings.warn("volatile was removed (Variable.volatile is always False)", stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value):
        user_warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                      stacklevel=2)

    @overridable
    def reinforce(self, reward):
        raise RuntimeError(_REINFORCE_REMOVED)


def _resized(self, sizes):
    sizes = tuple(sizes)
    numel = 1
    for s in sizes:
        numel *= s
    if numel != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({numel} elements in total), but the "
                           f"given tensor has a size of {'x'.join(map(str, self._size))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, while preserving the "
                           "number of elements. ")
    return self.contiguous().view(sizes)


def _sparse_resize(self, name, size, sparse_dim, dense_dim, keep_entries):
    if self.layout is not sparse_coo:
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the '{self.device.type.upper()}' "
                                  f"backend: {name} resizes sparse COO tensors only")
    size = tuple(size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), but "
                           f"got {len(size)}")
    parts = self._storage
    old_sparse = parts.sparse_dim
    if keep_entries and parts.values._size[0] > 0:
        advice = ("\nIf you need an empty sparse tensor of this size, call `x = torch.sparse_coo_tensor(size)`; to "
                  "keep the entries, make a new sparse tensor from x's indices and values.")
        if sparse_dim != old_sparse:
            raise RuntimeError(f"changing the number of sparse dimensions (from {old_sparse} to {sparse_dim}) on a "
                               "non-empty sparse tensor is not supported." + advice)
        if dense_dim != self.dim() - old_sparse:
            raise RuntimeError(f"changing the number of dense dimensions (from {self.dim() - old_sparse} to "
                               f"{dense_dim}) on a non-empty sparse tensor is not supported." + advice)
        if any(new < old for new, old in zip(size[:sparse_dim], self._size[:sparse_dim])):
            raise RuntimeError(f"shrinking the size of sparse dimensions (from {list(self._size[:sparse_dim])} to "
                               f"{list(size[:sparse_dim])}) on a non-empty sparse tensor is not supported." + advice)
        if size[sparse_dim:] != self._size[sparse_dim:]:
            raise RuntimeError(f"shrinking or growing the size of dense dimensions (from "
                               f"{list(self._size[sparse_dim:])} to {list(size[sparse_dim:])}) on a non-empty sparse "
                               "tensor is not supported." + advice)
    else:
        parts.indices = parts.indices.new_zeros((sparse_dim, 0))
        parts.values = parts.values.new_zeros((0,) + size[sparse_dim:])
        parts.sparse_dim = sparse_dim
        parts.coalesced = parts.coalesced if keep_entries else True
    self._size = size
    self._bump_version()
    return self
