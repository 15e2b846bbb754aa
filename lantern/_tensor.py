"""The Tensor class: TensorImpl's metadata plus methods bound from the op registry and a few written by hand.

Most methods (`add`, `add_`, `exp`, `sum`, `view`, ...) are generated from schemas by lantern.ops.binding; what is
written here is Python protocol (`__add__`, `__bool__`, `__iter__`), conversions (`item`, `tolist`, `numpy`, `to`)
and the frontends of overloaded ops (`max(dim)` vs `max(other)`, `view(dtype)` vs `view(*size)`).

>>> x = lantern.tensor([[1., 2.], [3., 4.]])
>>> (x + 1).sum().item(), x.t().is_contiguous(), x.max(dim=1).values.tolist()
(14.0, False, [2.0, 4.0])
"""
import copy
import functools
import inspect
import numbers
import weakref

from . import autograd as _ag
from ._construct import legacy_tensor_new, rebuild_tensor, tensor
from ._indexing import getitem, setitem
from ._inplace_views import InplaceViewMethods
from ._tensor_extras import TensorExtras
from ._tensor_subclasses import TensorSubclassMethods
from ._legacy_types import convert_type, type_string
from .autograd.graph import RemovableHandle
from .autograd.meta import autograd_meta, current_grad_fn

from .core import determinism, dtype as dt
from .core.device import device as _device
from .core.cuda_as_cpu import SWITCH as CUDA_AS_CPU
from .core.dispatch_keys import DispatchKey
from .core.layout import contiguous_format, preserve_format, strided
from .core.state import tls as _tls
from .core.storage import UntypedStorage
from .core.tensor_impl import TensorImpl, contiguous_strides, make_tensor, register_tensor_class
from .ops import binding, keyword_aliases, python_key, registry
from .ops.dispatcher import call, entry
from .ops.sparse_coo import SparseCooMethods
from .ops.sparse_csr import SparseCsrMethods
from .ops.split_views import chunked
from .ops.views import infer_size, view_strides
from .sparse._checkpoint import reduce_sparse_tensor
from .storage import TypedStorage, _warn_typed_storage_removal, legacy_storage_class
from .backends.quantized import quantized_equal
from .backends.quantized_checkpoint import reduce_quantized
from .core.overridable import OPERATOR_METHODS, overridable, overridable_operator, overridable_property
from .core import user_warnings

_op = registry.get
_PYTHON_KEY = DispatchKey.Python  # read per call: an enum class attribute costs ~70 ns (see autograd/kernel.py)


class Tensor(TensorImpl, SparseCooMethods, SparseCsrMethods, InplaceViewMethods, TensorExtras, TensorSubclassMethods):
    """A strided view over an UntypedStorage (see lantern.core.tensor_impl for the metadata), or a sparse tensor
    over its indices and values (lantern.backends.sparse)."""

    __slots__ = ()
    __array_priority__ = 1000  # NumPy defers to Tensor: np.float32(2) * t is a Tensor, not an ndarray
    __torch_dispatch__ = staticmethod(python_key.disabled_torch_dispatch_impl)  # subclasses define their own
    _make_wrapper_subclass = staticmethod(python_key.make_wrapper_subclass)

    def __new__(cls, *args, **kwargs):
        return legacy_tensor_new(cls, *args, **kwargs)

    # ---- conversions -------------------------------------------------------------------------------------------
    @overridable
    def item(self):
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        _traced_python_value("number")
        return self._scalar()

    def _scalar(self):
        if self._backend.key is _PYTHON_KEY:  # a wrapper subclass: its handler answers aten._local_scalar_dense
            return python_key.local_scalar_dense(self)
        if self.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._host_array().reshape(()).item()

    @overridable
    def tolist(self):
        if self._backend.key is _PYTHON_KEY:
            raise RuntimeError(f".tolist() is not supported for tensor subclasses, got {type(self).__name__}")
        _traced_python_value("list")
        if self.is_quantized:
            raise RuntimeError("load_scalar: invalid type (tolist() of a quantized tensor: take "
                               ".dequantize().tolist() or .int_repr().tolist())")
        return self._host_array().tolist()

    def _host_array(self):
        if self.device.type != "cpu":
            if self.device.type == "meta":
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
            return self._backend.to_host(self._backend.array(self))
        return self._backend.host_array(self)

    @overridable
    def numpy(self, *, force=False):
        """The NumPy array over this tensor's memory (shared, not copied); force=True detaches and copies to CPU."""
        if self._backend.key is _PYTHON_KEY:
            raise RuntimeError(".numpy() is not supported for tensor subclasses.")
        if force:
            return self.detach().cpu().resolve_conj().resolve_neg().numpy()
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu":
            raise TypeError(f"can't convert {self.device.type} device type tensor to numpy. Use Tensor.cpu() to copy "
                            "the tensor to host memory first.")
        if self.is_quantized:
            raise TypeError(f"Got unsupported ScalarType {self.dtype.legacy} (numpy() of a quantized tensor: take "
                            ".dequantize().numpy() or .int_repr().numpy())")
        for bit, is_set, resolve in (("conjugate", self.is_conj(), "resolve_conj"),
                                     ("negative", self.is_neg(), "resolve_neg")):
            if is_set:  # the array would show the memory, not the values
                raise RuntimeError(f"Can't call numpy() on Tensor that has {bit} bit set. Use tensor.{resolve}()"
                                   ".numpy() instead.")
        _traced_python_value("NumPy array")
        return self._backend.host_array(self)

    @overridable
    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    @overridable
    def __bool__(self):
        n = self.numel()
        if n != 1:
            if n == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        _traced_python_value("boolean")
        return bool(self._scalar())

    @overridable
    def __float__(self):
        self._check_scalar("float")
        _traced_python_value("float")
        return float(self._scalar())

    @overridable
    def __int__(self):
        self._check_scalar("int")
        _traced_python_value("integer")
        return int(self._scalar())

    @overridable
    def __complex__(self):
        self._check_scalar("complex")
        _traced_python_value("complex")
        return complex(self._scalar())

    @overridable
    def __index__(self):
        if self.dtype.category > dt.INTEGRAL or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._scalar())

    def _check_scalar(self, kind):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        if _tls.tracer is not None:
            _tls.tracer.warn_iteration()
        return iter(self.unbind(0))

    @overridable
    def __len__(self):
        n = TensorImpl.__len__(self)
        if _tls.tracer is not None:
            _tls.tracer.warn_len()
        return n

    @overridable
    def __repr__(self, *, tensor_contents=None):
        from ._tensor_str import tensor_repr  # cycle: _tensor_str imports _tensor (Tensor)
        return tensor_repr(self, tensor_contents)

    __str__ = __repr__

    @overridable
    def __format__(self, spec):
        if self.dim() == 0 and not self.is_meta and type(self) is Tensor:  # a subclass formats as its str, as torch
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol):
        if self.layout is not strided:
            return reduce_sparse_tensor(self)
        if self.is_quantized:
            return reduce_quantized(self)
        # The storage pickles once per pickle (memoised), so views pickled together stay views of one storage.
        args = (self._storage, self._offset, self._size, self._stride, self.dtype, self._requires_grad,
                {k: v for k, v in self.__dict__.items() if k not in TensorImpl.__dict__})
        return (rebuild_tensor, args if type(self) is Tensor else args + (type(self),))

    def __setstate__(self, state):
        """pickle's BUILD step: restores attributes a user set, never the metadata (size, storage, autograd slots),
        which only the rebuild functions may set, so that a checkpoint cannot point a tensor outside its storage."""
        slots = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slots = state
        protected = sorted(k for k in (*(state or {}), *(slots or {})) if k in TensorImpl.__dict__ or k.startswith("__"))
        if protected:
            raise RuntimeError(f"refusing to set tensor internals {protected} from pickled state")
        for k, v in {**(state or {}), **(slots or {})}.items():
            setattr(self, k, v)

    @overridable
    def __deepcopy__(self, memo):
        """A copy over a copied storage (one per storage in `memo`, so views stay views); grad and attributes too."""
        if id(self) in memo:
            return memo[id(self)]
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                               "because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        storage = copy.deepcopy(self._storage, memo)
        new = make_tensor(storage, self._size, self._stride, self._offset, self.dtype, self._backend)
        new = new.resolve_conj().resolve_neg()  # a conjugate/negative view's copy holds its values, as torch's
        if type(self) is not Tensor:
            new.__class__ = type(self)
        new._requires_grad = self._requires_grad
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        for k, v in self.__dict__.items():
            if k not in TensorImpl.__dict__:  # what a user set (autograd's slots are TensorImpl class defaults)
                setattr(new, k, copy.deepcopy(v, memo))
        return new

    @overridable
    def __contains__(self, element):
        if isinstance(element, (TensorImpl, numbers.Number)):
            return bool((self == element).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element).__name__}.")

    # ---- dtype / device conversion -----------------------------------------------------------------------------
    @overridable
    def to(self, *args, **kwargs):
        """to(dtype) / to(device, dtype=None) / to(other): a copy only when something changes (or copy=True)."""
        dtype, device, copy, memory_format = _parse_to(self, args, kwargs)
        same_dtype = dtype is None or dtype is self.dtype
        same_device = device is None or _device(device) == self.device
        if same_dtype and same_device and not copy and memory_format in (None, preserve_format):
            return self
        return call(_op("_to_copy"), (self, dtype, device, memory_format))

    @overridable
    def cpu(self, memory_format=preserve_format):
        return self.to("cpu")

    @overridable
    def cuda(self, device=None, non_blocking=False, memory_format=preserve_format):
        if isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(_device("cuda" if device is None else device))

    @overridable
    def xpu(self, device=None, non_blocking=False, memory_format=preserve_format):
        return self.to(_device("xpu" if device is None else device))

    @overridable
    def mtia(self, device=None, non_blocking=False, memory_format=preserve_format):
        return self.to(_device("mtia" if device is None else device))

    @overridable
    def ipu(self, device=None, non_blocking=False, memory_format=preserve_format):
        return self.to(_device("ipu" if device is None else device))

    # ---- memory shared with other processes, pinned for accelerator copies ----------------------------------------
    @overridable
    def share_memory_(self):
        """Move the storage into memory shared with forked processes (torch.multiprocessing's Hogwild! training)."""
        self._storage.share_memory_()
        return self

    @overridable
    def is_shared(self):
        return self._storage.is_shared()

    @overridable
    def is_pinned(self, device=None):
        """Whether the memory is page-locked for fast copies to an accelerator: never, there is none."""
        return False

    @overridable
    def pin_memory(self, device=None):
        """A copy in page-locked memory, for fast copies to an accelerator: there is none, so PyTorch's CPU build
        raises. In cuda-as-cpu mode (lantern.core.cuda_as_cpu) the accelerator is the CPU: an ordinary copy."""
        if CUDA_AS_CPU.on:
            return self.clone()
        raise RuntimeError("Cannot access accelerator device when none is available.")

    @overridable
    def record_stream(self, stream):
        """Mark the memory as used by a CUDA stream; no CUDA stream can exist in this build."""
        raise RuntimeError(f"record_stream: unknown parameter type {type(stream).__name__} (expected a CUDA stream, "
                           "which this build cannot make)")

    @overridable
    def type(self, dtype=None, non_blocking=False, **kwargs):
        """Without arguments: the legacy type string ('torch.FloatTensor'); with a dtype, a legacy type or its name
        ('torch.DoubleTensor'): the tensor converted to it (see lantern._legacy_types)."""
        if dtype is None:
            return type_string(self.dtype, self.device.type)
        return convert_type(self, dtype)

    @overridable
    def type_as(self, other):
        return self.to(other.dtype)

    @overridable
    def double(self, memory_format=preserve_format):
        return self.to(dt.float64, memory_format=memory_format)

    @overridable
    def float(self, memory_format=preserve_format):
        return self.to(dt.float32, memory_format=memory_format)

    @overridable
    def half(self, memory_format=preserve_format):
        return self.to(dt.float16, memory_format=memory_format)

    @overridable
    def bfloat16(self, memory_format=preserve_format):
        return self.to(dt.bfloat16, memory_format=memory_format)

    @overridable
    def long(self, memory_format=preserve_format):
        return self.to(dt.int64, memory_format=memory_format)

    @overridable
    def int(self, memory_format=preserve_format):
        return self.to(dt.int32, memory_format=memory_format)

    @overridable
    def short(self, memory_format=preserve_format):
        return self.to(dt.int16, memory_format=memory_format)

    @overridable
    def char(self, memory_format=preserve_format):
        return self.to(dt.int8, memory_format=memory_format)

    @overridable
    def byte(self, memory_format=preserve_format):
        return self.to(dt.uint8, memory_format=memory_format)

    @overridable
    def bool(self, memory_format=preserve_format):
        return self.to(dt.bool, memory_format=memory_format)

    @overridable
    def chalf(self, memory_format=preserve_format):
        return self.to(dt.complex32, memory_format=memory_format)

    @overridable
    def cfloat(self, memory_format=preserve_format):
        return self.to(dt.complex64, memory_format=memory_format)

    @overridable
    def cdouble(self, memory_format=preserve_format):
        return self.to(dt.complex128, memory_format=memory_format)

    @overridable
    def adjoint(self):
        """The conjugate transpose of the last two dims."""
        return self.mT.conj()

    @overridable_property
    def mH(self):
        return self.adjoint()

    @overridable_property
    def H(self):
        if self.dim() > 2:
            raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self.dim()}-D tensor.")
        return self.T.conj()

    # ---- overloaded op frontends -------------------------------------------------------------------------------
    def view(self, *size):
        if len(size) == 1 and isinstance(size[0], dt.dtype):
            return call(_op("view.dtype"), (self, size[0]))
        return call(_op("view"), (self, binding._int_list(size, "view")))

    @overridable
    def view_as(self, other):
        return self.view(other._size)

    def reshape(self, *shape):
        """A view when strides allow one, else a copy (PyTorch's rule)."""
        shape = infer_size(binding._int_list(shape, "reshape", "shape"), self.numel())
        if view_strides(self._size, self._stride, shape) is not None:
            return call(_op("view"), (self, shape))
        return call(_op("_unsafe_view"), (self.clone(memory_format=contiguous_format), shape))

    @overridable
    def reshape_as(self, other):
        return self.reshape(other._size)

    @overridable
    def flatten(self, start_dim=0, end_dim=-1):
        n = self.dim()
        s, e = self._wrap_dim(start_dim), self._wrap_dim(end_dim)
        if n == 0:
            return self.reshape(1)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        inner = 1
        for d in range(s, e + 1):
            inner *= self._size[d]
        return self.reshape(self._size[:s] + (inner,) + self._size[e + 1:])

    @overridable
    def ravel(self):
        return self.reshape(-1)

    def expand(self, *size):
        return call(_EXPAND, (self, binding._int_list(size, "expand")))

    @overridable
    def expand_as(self, other):
        return self.expand(other._size)

    def sum_to_size(self, *size):
        """Sum broadcast dims away so the result has `size` (the inverse of expand)."""
        size = tuple(binding._int_list(size, "sum_to_size"))
        if not size:  # to a 0-d result: the sum (PyTorch sums a 0-d bool too, giving int64)
            return self.sum()
        lead = self.dim() - len(size)
        if lead < 0 or any(s != 1 and s != n for s, n in zip(size, self._size[lead:])):
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self._size)}}}.")
        dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and self._size[lead + i] != 1]
        out = self.sum(dims, True) if dims else self
        return out.view(size) if lead else out

    @overridable
    def contiguous(self, memory_format=contiguous_format):
        if self.is_contiguous(memory_format):
            return self
        return self.clone(memory_format=memory_format)

    def squeeze(self, dim=None):
        return call(_op("squeeze"), (self, dim))

    @overridable
    def transpose(self, dim0, dim1):
        return call(_op("transpose"), (self, dim0, dim1))

    swapaxes = swapdims = transpose

    @overridable
    def movedim(self, source, destination):
        n = self.dim()
        src = (source,) if isinstance(source, int) else tuple(source)
        dst = (destination,) if isinstance(destination, int) else tuple(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                               f"contain the same number of dims as destination ({list(dst)} dims)")
        for role, given in (("source", src), ("destination", dst)):
            if len({self._wrap_dim(d) for d in given}) != len(given):
                raise RuntimeError(f"movedim: repeated dim in `{role}` ({list(given)})")
        src = [self._wrap_dim(d) for d in src]
        dst = [self._wrap_dim(d) for d in dst]
        if n == 0:  # a 0-d tensor takes dims 0 and -1 and has nothing to move
            return self.permute(())
        order = [None] * n
        for s, d in zip(src, dst):
            order[d] = s
        rest = iter(d for d in range(n) if d not in src)
        order = [o if o is not None else next(rest) for o in order]
        return self.permute(order)

    moveaxis = movedim

    @overridable_property
    def T(self):
        return self.permute(tuple(range(self.dim() - 1, -1, -1)))

    @overridable_property
    def mT(self):
        if self.dim() < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    @overridable_property
    def real(self):
        return call(_op("real"), (self,)) if self.dtype.is_complex else self

    @overridable_property
    def imag(self):
        return call(_op("imag"), (self,))

    def unbind(self, dim=0):
        return call(_op("unbind.int"), (self, dim))

    def split(self, split_size, dim=0):
        if isinstance(split_size, int):
            return call(_op("split.Tensor"), (self, split_size, dim))
        return call(_op("split_with_sizes"), (self, list(split_size), dim))

    def chunk(self, chunks, dim=0):
        return chunked(self, chunks, dim)

    def tensor_split(self, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                     tensor_indices_or_sections=None):
        """Split into `sections` near-equal parts or at `indices` (one positional argument, or its overload's
        keyword, as in PyTorch)."""
        given = [g for g in (indices_or_sections, sections, indices, tensor_indices_or_sections) if g is not None]
        if len(given) != 1:
            raise TypeError("tensor_split() received an invalid combination of arguments: give one of "
                            "indices_or_sections (by position), sections=, indices= or tensor_indices_or_sections=")
        indices_or_sections = given[0]
        d = self._wrap_dim(dim)
        n = self._size[d]
        if isinstance(indices_or_sections, Tensor):
            indices_or_sections = _tensor_split_argument(indices_or_sections)
        if isinstance(indices_or_sections, int):
            k = indices_or_sections
            if k <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {k}")
            q, r = divmod(n, k)
            bounds = [i * q + min(i, r) for i in range(k + 1)]
        else:
            idx = [int(i) for i in indices_or_sections]
            bounds = [0] + [i + n if i < 0 else i for i in idx] + [n]
        out = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            a, b = min(max(a, 0), n), min(max(b, 0), n)
            out.append(self.narrow(d, a, max(b - a, 0)))
        return tuple(out)

    def max(self, dim=None, keepdim=False, *, other=None):
        return _minmax(self, "max", "maximum", dim if other is None else other, keepdim)

    def min(self, dim=None, keepdim=False, *, other=None):
        return _minmax(self, "min", "minimum", dim if other is None else other, keepdim)

    @overridable
    def clamp(self, min=None, max=None):
        return call(_op("clamp"), (self, min, max))

    @overridable
    def clamp_(self, min=None, max=None):
        return call(_op("clamp_"), (self, min, max))

    clip, clip_ = clamp, clamp_

    @overridable
    def div(self, other, *, rounding_mode=None):
        return call(_op("div"), (self, other, rounding_mode))

    @overridable
    def div_(self, other, *, rounding_mode=None):
        return call(_op("div_"), (self, other, rounding_mode))

    divide, true_divide, divide_, true_divide_ = div, div, div_, div_

    @overridable
    def where(self, condition, other):
        return call(_op("where"), (condition, self, other))

    # ---- autograd ---------------------------------------------------------------------------------------------
    @overridable_property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    @overridable
    def requires_grad_(self, requires_grad=True):
        if requires_grad and self.dtype.category < dt.FLOATING:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use "
                                   "a computed variable in a subgraph that doesn't require differentiation use "
                                   "var_no_grad = var.detach().")
            return self
        if requires_grad and self._is_inference and not _ag.is_inference_mode_enabled():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @overridable_property
    def grad_fn(self):
        """The node that made this tensor (None for leaves); views changed in place get a fresh one."""
        if self._grad_fn is None and self._autograd is None:
            return None
        return current_grad_fn(self)

    @overridable_property
    def is_leaf(self):
        return self._grad_fn is None

    @overridable_property
    def output_nr(self):
        return self._output_nr

    @overridable_property
    def grad(self):
        if self._grad_fn is not None and not self.retains_grad and self._grad is None:
            user_warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                "Tensor by mistake, make sure you access the leaf Tensor instead. See "
                "github.com/pytorch/pytorch/pull/30531 for more informations.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, TensorImpl):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"{type(value).__name__}")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype '{value.dtype}' to a tensor with "
                                   f"dtype '{self.dtype}'. Please ensure that the gradient and the tensor have the "
                                   "same dtype")
            if value._size != self._size:
                raise RuntimeError(f"assigned grad has data of a different size (grad {list(value._size)}, tensor "
                                   f"{list(self._size)})")
            if value.device != self.device:
                raise RuntimeError("assigned grad has data located on a different device")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @overridable_property
    def retains_grad(self):
        meta = self._autograd
        return meta is not None and meta.retains_grad

    @overridable
    def retain_grad(self):
        """Keep this non-leaf's gradient in .grad during backward (a no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self.retains_grad:
            return
        autograd_meta(self).retains_grad = True
        ref = weakref.ref(self)

        def store(grad):
            t = ref()
            if t is not None:
                t._grad = grad.detach().clone() if t._grad is None else t._grad + grad.detach()
        node = current_grad_fn(self)
        if node._retains is None:
            node._retains = {}
        node._retains[self._output_nr] = store

    @overridable
    def register_hook(self, hook):
        """hook(grad) runs when this tensor's gradient is computed; a non-None return replaces the gradient."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is None:
            hooks = autograd_meta(self).hooks
            handle = RemovableHandle(hooks)
            hooks[handle.id] = hook
            return handle
        nr = self._output_nr

        @functools.wraps(hook)
        def pre_hook(grads):
            if grads[nr] is None:
                return None
            new = hook(grads[nr])
            if new is None:
                return None
            grads = list(grads)
            grads[nr] = new
            return tuple(grads)
        return current_grad_fn(self).register_prehook(pre_hook)

    @overridable
    def register_post_accumulate_grad_hook(self, hook):
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        hooks = autograd_meta(self).post_accumulate_hooks
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    @overridable
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the .grad of the leaves (see lantern.autograd.backward)."""
        _ag.backward(self, gradient, retain_graph, create_graph, None, inputs)

    @overridable
    def detach(self):
        """A tensor sharing storage and version counter, outside autograd (a wrapper subclass's handler makes it)."""
        if self._backend.key is _PYTHON_KEY:
            return python_key.detach(self)
        return _alias_detached(self)

    @overridable
    def detach_(self):
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                               "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                               "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                               "function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @overridable_property
    def data(self):
        """The same memory, outside autograd and outside version checks (a fresh version counter)."""
        t = _alias_detached(self)
        t._vc = [0]
        return t

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(other).__name__}")
        if self.requires_grad and not (other.dtype.is_floating_point or other.dtype.is_complex):
            raise RuntimeError(f"data set to a tensor that requires gradients must be floating point or complex "
                               f"dtype (got {other.dtype}; convert it with .float() first, or detach this tensor)")
        self._storage, self._size, self._stride, self._offset = (other._storage, other._size, other._stride,
                                                                  other._offset)
        self.dtype, self._backend, self._nd = other.dtype, other._backend, None

    def _is_view(self):
        return self._base is not None

    @overridable
    def is_inference(self):
        """Made under inference_mode: it may not be saved for backward or written to outside that mode."""
        return self._is_inference

    @overridable
    def equal(self, other):
        """Same size and same elements (values compared after type promotion); quantized tensors are equal when
        their dtypes, quantizers and integers are."""
        if self.is_quantized or other.is_quantized:
            return quantized_equal(self, other)
        return self._size == other._size and bool((self == other).all().item())

    @overridable
    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return _new_factory(self, "empty", size, dtype, device, requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return _new_factory(self, "zeros", size, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return _new_factory(self, "ones", size, dtype, device, requires_grad)

    @overridable
    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        return call(_op("full"), (tuple(size), fill_value, dtype or self.dtype, None, device or self.device, None,
                                  requires_grad))

    @overridable
    def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
        return call(_op("empty_strided"), (tuple(size), tuple(stride), dtype or self.dtype, None,
                                           device or self.device, None, requires_grad))

    def _resize(self, shape):
        """Resize to a contiguous `shape`, growing the storage when it is too small (backs out= and resize_)."""
        shape = tuple(shape)
        need = self._offset * self.dtype.itemsize
        n = 1
        for s in shape:
            n *= s
        need += n * self.dtype.itemsize
        had = self._storage.nbytes()
        if need > had:
            self._storage.resize_(need)
        self._size, self._stride, self._nd = shape, contiguous_strides(shape), None
        if need > had and determinism.fills_uninitialized_memory():
            first_new = max(had // self.dtype.itemsize - self._offset, 0)
            self._backend.fill(self.detach().view(-1)[first_new:], determinism.uninitialized_fill_value(self.dtype))
        return self

    def resize_(self, *size, memory_format=None):
        self._resize(binding._int_list(size, "resize_"))
        self._bump_version()
        return self

    @overridable
    def resize_as_(self, the_template, *, memory_format=None):
        return self.resize_(the_template._size, memory_format=memory_format)

    @overridable
    def set_(self, source=None, storage_offset=0, size=None, stride=None):
        """Point this tensor at another tensor's or storage's memory (no copy)."""
        if source is None:
            source = UntypedStorage(0, device=self.device)
        if isinstance(source, TensorImpl):
            self._storage, self._size, self._stride, self._offset = (source._storage, source._size, source._stride,
                                                                     source._offset)
        else:
            source = getattr(source, "_untyped_storage", source)  # a TypedStorage: the bytes under it
            self._storage = source
            self._offset = storage_offset
            self._size = tuple(size) if size is not None else (source.nbytes() // self.dtype.itemsize,)
            self._stride = tuple(stride) if stride is not None else contiguous_strides(self._size)
        self._nd = None
        self._bump_version()
        return self

    @overridable
    def storage(self):
        """This tensor's memory as a TypedStorage of its dtype (deprecated by torch: use untyped_storage())."""
        _warn_typed_storage_removal()
        return TypedStorage(wrap_storage=self._storage, dtype=self.dtype, _internal=True)

    @overridable
    def storage_type(self):
        """The legacy storage class of this tensor's dtype (lantern.FloatStorage for float32)."""
        return legacy_storage_class(self.dtype)

    @overridable
    def dim_order(self):
        return tuple(sorted(range(self.dim()), key=lambda d: -self._stride[d]))

    @overridable
    def __getitem__(self, index):
        return getitem(self, index)

    @overridable
    def __setitem__(self, index, value):
        setitem(self, index, value)

    @overridable
    def __delitem__(self, index):
        raise TypeError("Tensor does not support deleting items")

    @overridable
    def __eq__(self, other):
        return _compare("eq", self, other)

    @overridable(public="ne")
    def __ne__(self, other):
        return _compare("ne", self, other)

    __hash__ = TensorImpl.__hash__


def _traced_python_value(what):
    """While a JIT trace records, a tensor read as a Python value warns (TracerWarning): the trace freezes it."""
    if _tls.tracer is not None:
        _tls.tracer.warn_python_value(what)


def _alias_detached(t):
    """Same storage and version counter, no autograd history and no _base (PyTorch's detach())."""
    return make_tensor(t._storage, t._size, t._stride, t._offset, t.dtype, t._backend, t._nd, t._vc)


def _new_factory(self, name, size, dtype, device, requires_grad):
    return call(_op(name), (binding._int_list(size, "new_" + name), dtype or self.dtype, None, device or self.device, None,
                            requires_grad, None))


def _minmax(self, name, pairwise, dim, keepdim):
    if dim is None:
        return call(_op(name), (self,))
    if isinstance(dim, TensorImpl):
        return call(_op(pairwise), (self, dim))
    return call(_op(name + ".dim"), (self, dim, keepdim))


def _parse_to(self, args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    memory_format = kwargs.pop("memory_format", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    positional_bools = 0
    for a in args:
        if a is None:  # to(None, dtype): torch's positional device slot left empty
            continue
        if isinstance(a, dt.dtype):
            dtype = a
        elif isinstance(a, TensorImpl):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, _device, int)) and not isinstance(a, bool):
            device = a
        elif isinstance(a, bool):  # positional (non_blocking, copy), in that order
            positional_bools += 1
            if positional_bools == 2:
                copy = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
    if device is not None:
        device = _device(device)
    return dtype, device, copy, memory_format


# Python operator protocol -> ops. Reflected forms swap the operands (a scalar on the left is fine for the ops).
def _binary(name):
    dispatch = entry(_op(name))  # the op's dispatcher entry: call(op, args) without the extra call

    def fn(self, other):
        return dispatch((self, other))
    fn.__name__ = name
    return fn


def _compare(name, self, other):
    """A comparison with an operand no overload takes (None, a string) is NotImplemented, as in PyTorch, so Python
    answers `t == None` with False and `t < None` with its own TypeError."""
    try:
        return call(_op(name), (self, other))
    except TypeError:
        return NotImplemented


def _comparison(name):
    def fn(self, other):
        return _compare(name, self, other)
    fn.__name__ = name
    return fn


def _commuted(name, dunder):
    """A reflected operator of a commutative op (__radd__ of 2 + t): Python calls it on the tensor, so it runs the
    op as is; called unbound on a non-tensor (Tensor.__radd__(2, t)) it raises TypeError, as PyTorch's do."""
    dispatch = entry(_op(name))

    def fn(self, other):
        if not isinstance(self, Tensor):
            raise _not_a_tensor(dunder, self)
        return dispatch((self, other))
    fn.__name__ = dunder
    return fn


def _not_a_tensor(dunder, self):
    return TypeError(f"descriptor '{dunder}' for 'Tensor' objects doesn't apply to a '{type(self).__name__}' object "
                     f"(call it on a tensor: Tensor.{dunder}(tensor, other))")


def _reflected(name):
    dispatch = entry(_op(name))

    def fn(self, other):
        return dispatch((other, self))
    return fn


def _inplace(name):
    dispatch = entry(_op(name + "_"))

    def fn(self, other):
        return dispatch((self, other))
    return fn


def _add(self, other):
    return _ADD_ENTRY((self, other, 1))


def _radd(self, other):
    if not isinstance(self, Tensor):
        raise _not_a_tensor("__radd__", self)
    return _ADD_ENTRY((self, other, 1))


def _iadd(self, other):
    return _ADD__ENTRY((self, other, 1))


def _sub(self, other):
    return _SUB_ENTRY((self, other, 1))


def _rsub(self, other):
    """number - tensor. A TypeError (called unbound on two numbers, say) is NotImplemented, as PyTorch's
    __rsub__ answers, so Python raises its own TypeError for an operand neither side takes."""
    try:
        return call(_RSUB, (self, other, 1))
    except TypeError:
        return NotImplemented


def _isub(self, other):
    return call(_SUB_, (self, other, 1))


def _truediv(self, other):
    return call(_DIV, (self, other, None))


def _rtruediv(self, other):
    """number / tensor, computed as PyTorch does: reciprocal, then a multiply (so grad_fn is MulBackward0); called
    unbound on a non-tensor, the reciprocal method is missing (AttributeError), as there."""
    return call(_MUL, (self.reciprocal(), other))


def _itruediv(self, other):
    return call(_DIV_, (self, other, None))


def _install_methods():
    for cls in (TensorImpl, Tensor):  # the hand-written methods take axis=, keepdims=, size= too
        for name, fn in list(cls.__dict__.items()):
            if inspect.isfunction(fn) and not name.startswith("__"):
                wrapped = keyword_aliases.with_keyword_aliases(fn)
                if wrapped is not fn:
                    setattr(Tensor, name, wrapped)
    for name, fn in binding.method_bindings().items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)
    for name in registry.COMPOSITE_METHODS:
        if name not in Tensor.__dict__:
            setattr(Tensor, name, registry.COMPOSITES[name])
    for name, fn in _dunder_methods().items():
        setattr(Tensor, name, overridable_operator(fn, OPERATOR_METHODS.get(name)))
    _install_aliases()


def _dunder_methods():
    """Python's operator protocol: `a + b` is `Tensor.__add__(a, b)`, and so on."""
    return {
        "__add__": _add, "__radd__": _radd, "__iadd__": _iadd,
        "__sub__": _sub, "__rsub__": _rsub, "__isub__": _isub,
        "__mul__": _binary("mul"), "__rmul__": _commuted("mul", "__rmul__"), "__imul__": _inplace("mul"),
        "__truediv__": _truediv, "__rtruediv__": _rtruediv, "__itruediv__": _itruediv,
        "__div__": _truediv, "__rdiv__": _rtruediv, "__idiv__": _itruediv,  # Python 2's names, kept by torch
        "__floordiv__": _binary("floor_divide"), "__rfloordiv__": _reflected("floor_divide"),
        "__ifloordiv__": _inplace("floor_divide"),
        "__mod__": _binary("remainder"), "__rmod__": _reflected("remainder"), "__imod__": _inplace("remainder"),
        "__pow__": _binary("pow"), "__rpow__": _reflected("pow"), "__ipow__": _inplace("pow"),
        "__matmul__": lambda s, o: registry.COMPOSITES["matmul"](s, o),
        "__rmatmul__": lambda s, o: registry.COMPOSITES["matmul"](o, s),
        "__and__": _binary("bitwise_and"), "__rand__": _commuted("bitwise_and", "__rand__"),
        "__iand__": _inplace("bitwise_and"),
        "__or__": _binary("bitwise_or"), "__ror__": _commuted("bitwise_or", "__ror__"), "__ior__": _inplace("bitwise_or"),
        "__xor__": _binary("bitwise_xor"), "__rxor__": _commuted("bitwise_xor", "__rxor__"),
        "__ixor__": _inplace("bitwise_xor"),
        "__lshift__": _binary("bitwise_left_shift"), "__rlshift__": _reflected("bitwise_left_shift"),
        "__ilshift__": _inplace("bitwise_left_shift"),
        "__rshift__": _binary("bitwise_right_shift"), "__rrshift__": _reflected("bitwise_right_shift"),
        "__irshift__": _inplace("bitwise_right_shift"),
        "__lt__": _comparison("lt"), "__le__": _comparison("le"), "__gt__": _comparison("gt"),
        "__ge__": _comparison("ge"),
        "__neg__": lambda s: call(_op("neg"), (s,)), "__pos__": lambda s: s,
        "__abs__": lambda s: call(_op("abs"), (s,)),
        "__invert__": _invert,
    }


def _install_aliases():
    """NumPy's names for the methods (absolute, multiply, ...) and their in-place forms."""
    aliases = {"absolute": "abs", "negative": "neg", "arctan2": "atan2", "arcsin": "asin", "arccos": "acos",
               "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "greater": "gt",
               "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne", "fix": "trunc",
               "multiply": "mul", "subtract": "sub"}
    for alias, target in aliases.items():
        setattr(Tensor, alias, getattr(Tensor, target))
        if hasattr(Tensor, target + "_"):
            setattr(Tensor, alias + "_", getattr(Tensor, target + "_"))


def _invert(self):
    if self.dtype is dt.bool:
        return call(_op("logical_not"), (self,))
    return call(_op("bitwise_not"), (self,))


_ADD, _ADD_, _SUB, _SUB_ = _op("add"), _op("add_"), _op("sub"), _op("sub_")
_ADD_ENTRY, _ADD__ENTRY, _SUB_ENTRY = entry(_ADD), entry(_ADD_), entry(_SUB)
_EXPAND = _op("expand")
_DIV, _DIV_ = _op("div"), _op("div_")
_RSUB, _MUL = _op("rsub"), _op("mul")
def _tensor_split_argument(t):
    """tensor_split's tensor argument: a 0-d tensor is a number of sections, a 1-d one the indices."""
    if t.dtype is not dt.int64:
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                           f"{t.dtype.legacy}")
    if t.dim() > 1:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                           f"one-dimensional tensor, but got a tensor with {t.dim()} dims")
    return int(t.item()) if t.dim() == 0 else t.tolist()


_install_methods()
register_tensor_class(Tensor)
