"""MaskedTensor: a tensor that carries a boolean mask saying which of its elements exist.

A MaskedTensor holds two ordinary tensors of one shape, `data` and a bool `mask`. It is a lantern.Tensor with a
backend of its own (`MaskedBackend`, dispatch key Masked, above every backend key), so every op the dispatcher runs
on it reaches a masked kernel: the unary, binary, reduction and pass-through rules in this package,
each saying what happens to the data and to the mask (torch runs the same rules from MaskedTensor's
__torch_dispatch__). An op without a rule raises TypeError, as torch's does.

Autograd runs on the data: a MaskedTensor made with requires_grad=True keeps a data tensor that requires grad, the
masked kernels compute with ordinary ops on it, and `.grad` is the data's gradient under the leaf's mask.

>>> import lantern
>>> from lantern.masked import masked_tensor
>>> mt = masked_tensor(lantern.tensor([1., 2., 3.]), lantern.tensor([True, False, True]))
>>> mt
MaskedTensor(
  [  1.0000,       --,   3.0000]
)
>>> (mt * 2).sum()
MaskedTensor(  8.0000, True)
"""
import copy

import lantern
from ...core.dispatch_keys import DispatchKey
from ...core.device import device as _device
from ...core.layout import sparse_coo, sparse_csr, strided
from ...core.tensor_impl import TensorImpl
from ...core.torch_function import _disabled_torch_function_impl
from ...ops import dispatcher, registry
from . import _sparse
from ...core import user_warnings

__all__ = ["MaskedTensor", "is_masked_tensor"]

SUPPORTED_DTYPES = (lantern.float16, lantern.float32, lantern.float64, lantern.bool, lantern.int8, lantern.int16,
                    lantern.int32, lantern.int64)
NOT_SUPPORTED = ("{name} is not implemented for MaskedTensor (torch's MaskedTensor has no rule for it either: its "
                 "__torch_dispatch__ returns NotImplemented). Take .get_data() and .get_mask() and compute on those.")


def is_masked_tensor(obj, /):
    """Whether `obj` is a MaskedTensor.

    >>> is_masked_tensor(lantern.ones(2)), is_masked_tensor(lantern.masked.as_masked_tensor(lantern.ones(2),
    ...                                                                                      lantern.ones(2).bool()))
    (False, True)
    """
    return isinstance(obj, MaskedTensor)


class MaskedBackend:
    """The backend of MaskedTensors of one layout (their data's: strided, sparse_coo or sparse_csr) on one device:
    its key's kernels are the masked rules; it has no array of its own to hand a dense kernel (the data and the mask
    have)."""

    key = DispatchKey.Masked
    xp = None   # derivative fast paths read arrays only where a backend has an array library

    def __init__(self, device, layout):
        self.device, self.layout = device, layout

    def array(self, t):
        raise TypeError("a MaskedTensor has no array of its own: use .get_data() and .get_mask()")

    array_or_none = host_array = array

    def __getattr__(self, name):
        """Code that takes this for a dense backend (to allocate, say) gets a clear error instead of a missing
        attribute: lantern.autograd.grad/backward given a MaskedTensor come here."""
        if name.startswith("__"):
            raise AttributeError(name)
        raise TypeError(f"a MaskedTensor's backend has no {name}(): compute on .get_data() and .get_mask() (for "
                        "gradients, call .backward() on the MaskedTensor, or autograd.grad on the data)")

    def __repr__(self):
        return f"<lantern Masked backend on {self.device} ({self.layout.name})>"


_BACKENDS = {}


def _backend(device, layout):
    return _BACKENDS.setdefault((device, layout), MaskedBackend(device, layout))


class _NoStorage:
    """What a MaskedTensor keeps in place of a storage: asking it for memory fails. `holds_tensors` tells
    lantern.save to pickle the MaskedTensor's own reduction (its data and mask) instead of a storage."""

    _gen = 0
    holds_tensors = True

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"a MaskedTensor has no storage (asked for .{name}): its data and mask have theirs")


class MaskedTensor(lantern.Tensor):
    """MaskedTensor(data, mask, requires_grad=False): `data` where `mask` is True; elsewhere nothing.

    data and mask are copied; the mask must be bool and of data's shape, and data one of float16/32/64, bool and
    int8/16/32/64, as torch requires.
    """

    # Operations reach the MaskedTensor through its own dispatch key (MaskedBackend above), not through
    # torch's Python-level __torch_function__; opting out keeps the plain-tensor calls free of the check.
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data, mask, requires_grad=False):
        if is_masked_tensor(data) or not isinstance(data, TensorImpl):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, TensorImpl):
            raise TypeError("mask must be a Tensor")
        user_warnings.warn("The PyTorch API of MaskedTensors is in prototype stage and will change in the near future. "
                      "Please open a Github issue for features requests and see our documentation on the "
                      "torch.masked module for further information about the project.", UserWarning, stacklevel=2)
        if data.requires_grad:
            user_warnings.warn("It is not recommended to create a MaskedTensor with a tensor that requires_grad. To avoid "
                          "this, you can use data.detach().clone()", UserWarning, stacklevel=2)
        if data.layout != mask.layout:
            raise TypeError("data and mask must have the same layout.")
        if data.layout in (sparse_coo, sparse_csr):
            data, mask = _sparse.aligned(data, mask)
        data = data.detach().clone()
        if requires_grad:
            data.requires_grad_(True)
        return _wrap(data, mask.clone())

    def __init__(self, data, mask, requires_grad=False):
        pass  # __new__ built it (lantern.Tensor's __init__ takes no arguments)

    # ---- the two tensors ------------------------------------------------------------------------------------------
    def get_data(self):
        """The data tensor, masked-out elements included (autograd flows through it)."""
        return self._masked_data

    def get_mask(self):
        return self._masked_mask

    def to_tensor(self, value):
        """A plain tensor: the data with masked-out elements set to `value`."""
        return self._masked_data.masked_fill(~self._masked_mask, value)

    def is_sparse_coo(self):
        return self.layout is sparse_coo

    def is_sparse_csr(self):
        return self.layout is sparse_csr

    @property
    def is_sparse(self):
        return self.layout in (sparse_coo, sparse_csr)

    # ---- layouts: data and mask convert together ------------------------------------------------------------------
    def to_dense(self, dtype=None, *, masked_grad=None):
        if self.layout is strided:
            return self
        return _wrap(self._masked_data.to_dense(), self._masked_mask.to_dense())

    def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None):
        return self.to_sparse_csr() if layout is sparse_csr else self.to_sparse_coo()

    def to_sparse_coo(self, sparse_dim=None):
        """A COO MaskedTensor: from a strided one, the kept elements become the specified ones."""
        if self.layout is sparse_coo:
            return self
        if self.layout is sparse_csr:
            return _wrap(self._masked_data.to_sparse_coo(), self._masked_mask.to_sparse_coo())
        kept = self._masked_mask.to_sparse_coo().coalesce()
        return _wrap(self._masked_data.sparse_mask(kept), kept)

    def to_sparse_csr(self, dense_dim=None):
        """A CSR MaskedTensor (of a 2-d one): from a strided one, the kept elements become the specified ones."""
        if self.layout is sparse_csr:
            return self
        if self._masked_data.dim() != 2:
            raise ValueError(f"Only 2D tensors can be converted to the SparseCsr layout but got shape: "
                             f"{self._masked_data.size()}")
        coo = self.to_sparse_coo()
        return _wrap(coo._masked_data.to_sparse_csr(), coo._masked_mask.to_sparse_csr())

    # ---- autograd, on the data ------------------------------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._masked_data.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        self._masked_data.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._masked_data.grad_fn

    @property
    def is_leaf(self):
        return self._masked_data.is_leaf

    @property
    def grad(self):
        grad = self._masked_data.grad
        return None if grad is None else _wrap(grad, self._masked_mask)

    @grad.setter
    def grad(self, value):
        self._masked_data.grad = value.get_data() if is_masked_tensor(value) else value

    def retain_grad(self):
        self._masked_data.retain_grad()

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Backward from the data (`gradient` a MaskedTensor or a tensor; ones for a single element)."""
        if is_masked_tensor(gradient):
            gradient = gradient.get_data()
        self._masked_data.backward(gradient, retain_graph, create_graph, inputs)

    def detach(self):
        return _wrap(self._masked_data.detach(), self._masked_mask)

    # ---- Python values --------------------------------------------------------------------------------------------
    def _scalar(self):
        """The one element's value, for item(), bool(), float() and the like: only a kept element has one."""
        if not self._masked_mask.item():
            raise ValueError("__torch_dispatch__, aten._local_scalar_dense: expected a mask tensor")
        return self._masked_data.item()

    def numpy(self, *, force=False):
        raise RuntimeError(".numpy() is not supported for tensor subclasses.")

    def tolist(self):
        raise RuntimeError(".tolist() is not supported for tensor subclasses, got MaskedTensor")

    def __repr__(self, *, tensor_contents=None):
        if self.dim() == 0:
            value = self._masked_data.item()
            text = _format(value) if self._masked_mask.item() else "--"
            return f"MaskedTensor({text}, {self._masked_mask.item()})"
        dense = self.to_dense()
        lines = _masked_tensor_str(dense._masked_data, dense._masked_mask).split("\n")
        return "MaskedTensor(\n" + "\n".join("  " + line for line in lines) + "\n)"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_wrap, (self._masked_data, self._masked_mask))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = _wrap(copy.deepcopy(self._masked_data, memo), copy.deepcopy(self._masked_mask, memo))
        return memo[id(self)]


def _format(value):
    return f"{value:8.4f}" if isinstance(value, float) else str(value)


def _masked_tensor_str(data, mask):
    """torch's MaskedTensor layout: one bracketed row per last-dim slice, each element 8 wide, '--' where masked."""
    if data.dim() == 1:
        texts = [_format(x) for x in data.tolist()]
        kept = mask.tolist()
        width = max((len(t) if k else 8 for t, k in zip(texts, kept)), default=0)
        return "[" + ", ".join(t if k else "--".rjust(width) for t, k in zip(texts, kept)) + "]"
    parts = ["\n".join("  " + line for line in _masked_tensor_str(d, m).split("\n")) for d, m in zip(data, mask)]
    return "[\n" + ",\n".join(parts) + "\n]"


def _validate(data, mask):
    if data.layout != mask.layout:
        raise TypeError("data and mask must have the same layout.")
    if data.layout in (sparse_coo, sparse_csr):
        _sparse.check_positions(data, mask)
    if mask.dtype != lantern.bool:
        raise TypeError("mask must have dtype bool.")
    if data.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
    if data.dim() != mask.dim():
        raise ValueError("data.dim() must equal mask.dim()")
    if data.shape != mask.shape:
        raise ValueError("data.size() must equal mask.size()")


def _wrap(data, mask):
    """A MaskedTensor over `data` and `mask` themselves (no copy, no warning): what the masked kernels return."""
    _validate(data, mask)
    t = object.__new__(MaskedTensor)
    t._storage = _NoStorage()
    t._size, t._stride, t._offset = data._size, data._stride, 0
    t.dtype = data.dtype
    t._backend = _backend(_device(data.device), data.layout)
    t._nd, t._nd_gen, t._vc, t._base = None, 0, [0], None
    t._masked_data, t._masked_mask = data, mask
    return t


def wrap_result(data, mask):
    """A kernel's result: a MaskedTensor per tensor of `data`, with the matching mask (lists and tuples alike)."""
    if isinstance(data, (list, tuple)):
        return type(data)(wrap_result(d, m) for d, m in zip(data, mask))
    if isinstance(data, TensorImpl):
        return _wrap(data, mask)
    return data


def data_of(x):
    """The data of a MaskedTensor (in lists and tuples too); anything else as it is."""
    return _part_of(x, "_masked_data")


def mask_of(x):
    """The mask of a MaskedTensor (in lists and tuples too); anything else as it is."""
    return _part_of(x, "_masked_mask")


def _part_of(x, part):
    if is_masked_tensor(x):
        return getattr(x, part)
    if isinstance(x, (list, tuple)):
        return type(x)(_part_of(y, part) for y in x)
    return x


def masks_match(a, b):
    """Two MaskedTensors' masks are equal (anything else matches)."""
    if is_masked_tensor(a) and is_masked_tensor(b):
        ma, mb = a._masked_mask, b._masked_mask
        if ma.layout is not strided or mb.layout is not strided:
            return _sparse.masks_equal(ma, mb)
        return ma.dim() == mb.dim() and bool(lantern.eq(ma, mb).all())
    return True


def register_masked_kernel(op_names, rule):
    """Run `rule(op, args)` for each op of `op_names` (lantern's registry names) when an input is a MaskedTensor.
    Grad mode stays as it is: the rule's ops on the data are what autograd records."""
    for name in op_names:
        registry.get(name).kernels[DispatchKey.Masked] = rule


def with_inplace_variants(names, no_inplace):
    """The registry ops of `names` and their in-place forms (name_), except those of `no_inplace` (torch lists
    no in-place form for them)."""
    variants = [(name, name) for name in names] + [(name + "_", name) for name in names if name not in no_inplace]
    return [op for op, name in variants if op in registry.REGISTRY]


def refuse_unsupported_ops():
    """Every op without a masked rule, registered now or later, raises TypeError on a MaskedTensor, naming the op."""
    registry.on_register(lambda op: op.kernels.setdefault(DispatchKey.Masked, _refuse))


def _refuse(op, args):
    raise TypeError(NOT_SUPPORTED.format(name=op.name))


def call_on(op, args):
    """`op` run on plain tensors `args` (schema order), through the dispatcher."""
    return dispatcher.call(op, tuple(args))
