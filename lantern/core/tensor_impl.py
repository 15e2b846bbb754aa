"""TensorImpl: what a tensor is (PyTorch's c10::TensorImpl). Methods that run ops are added by lantern/_tensor.py.

A tensor is (storage, sizes, strides, storage_offset, dtype, device, layout) plus the autograd slot. Element
[i0, ..., in] lives at byte `(offset + sum(i_k * stride_k)) * itemsize` of the storage.

>>> x = lantern.arange(48).view(6, 8)[1:5:2, 1:4]
>>> x.size(), x.stride(), x.storage_offset()
(lantern.Size([2, 3]), (16, 1), 9)
"""
from .dispatch_keys import DispatchKey
from .layout import channels_last, channels_last_3d, contiguous_format, preserve_format, sparse_coo, sparse_csr
from .size import Size, wrap_dim
from .overridable import overridable, overridable_property
from .state import tls


_STRIDES_CACHE = {}


def contiguous_strides(size):
    """Row-major strides in elements: (6, 8) -> (8, 1). Cached: every new tensor asks."""
    strides = _STRIDES_CACHE.get(size)
    if strides is None:
        strides = _compute_contiguous_strides(size)
        if len(_STRIDES_CACHE) < 4096:
            _STRIDES_CACHE[size] = strides
    return strides


def _compute_contiguous_strides(size):
    strides = []
    acc = 1
    for n in reversed(size):
        strides.append(acc)
        acc *= n if n > 1 else 1
    return tuple(reversed(strides))


def _is_contiguous_in_order(size, stride, order):
    """True if, visiting dims from fastest to slowest (`order`), each stride equals the product of the sizes before."""
    expected = 1
    for d in order:
        n = size[d]
        if n == 0:
            return True
        if n != 1:
            if stride[d] != expected:
                return False
            expected *= n
    return True


class TensorImpl:
    __slots__ = (
        "_storage", "_size", "_stride", "_offset", "dtype", "_backend", "_nd", "_nd_gen",
        "_vc", "_base", "__weakref__", "__dict__",
    )

    # The autograd slot (filled by lantern.autograd). Class-level defaults, so that making a tensor that is not
    # part of a graph costs no assignments; a tensor that joins one gets its own values.
    _requires_grad = False
    _grad_fn = None
    _is_inference = False  # made under inference_mode: may never enter autograd or be written outside it
    _grad = None
    _output_nr = 0
    _autograd = None
    _fw_grads = None  # a dual tensor's tangents, by forward-AD level (lantern.autograd.forward_ad)

    @property
    def _fw_grad(self):
        """The tangent at the forward-AD level in effect (tls.forward_level; levels nest under torch.func), or None."""
        grads = self._fw_grads
        return None if grads is None else grads.get(tls.forward_level)

    @_fw_grad.setter
    def _fw_grad(self, tangent):
        if tangent is not None:
            if self._fw_grads is None:
                self._fw_grads = {}
            self._fw_grads[tls.forward_level] = tangent
        elif self._fw_grads is not None:
            self._fw_grads.pop(tls.forward_level, None)

    # ---- metadata -------------------------------------------------------------------------------------------
    @overridable_property
    def device(self):
        return self._backend.device

    @overridable_property
    def layout(self):
        return self._backend.layout

    @overridable_property
    def shape(self):
        return Size(self._size)

    def size(self, dim=None):
        if dim is None:
            return Size(self._size)
        return self._size[self._wrap_dim(dim)]

    def stride(self, dim=None):
        if dim is None:
            return self._stride
        return self._stride[self._wrap_dim(dim)]

    @overridable
    def storage_offset(self):
        return self._offset

    @overridable
    def dim(self):
        return len(self._size)

    ndimension = dim

    @overridable_property
    def ndim(self):
        return len(self._size)

    @overridable
    def numel(self):
        n = 1
        for s in self._size:
            n *= s
        return n

    nelement = numel

    @overridable
    def element_size(self):
        return self.dtype.itemsize

    @overridable_property
    def itemsize(self):
        return self.dtype.itemsize

    @overridable_property
    def nbytes(self):
        return self.numel() * self.dtype.itemsize

    @overridable
    def untyped_storage(self):
        return self._storage

    @overridable
    def data_ptr(self):
        """Address of this tensor's first element: the storage's address plus offset * itemsize (0 if empty)."""
        base = self._storage.data_ptr()
        if not base or 0 in self._size:
            return 0
        return base + self._offset * self.dtype.itemsize

    @overridable_property
    def is_cpu(self):
        return self._backend.device.type == "cpu"

    @overridable_property
    def is_cuda(self):
        return self._backend.device.type == "cuda"

    @overridable_property
    def is_meta(self):
        return self._backend.device.type == "meta"

    @overridable_property
    def is_sparse(self):
        return self._backend.layout is sparse_coo

    @overridable_property
    def is_sparse_csr(self):
        return self._backend.layout is sparse_csr

    @overridable_property
    def is_quantized(self):
        """Whether a quantizer reads this tensor's integers (its backend, QuantizedCPU, holds one)."""
        return self._backend.key is DispatchKey.QuantizedCPU

    is_mkldnn = False
    is_nested = False
    # Devices lantern has no backend for, as in PyTorch's CPU build: no tensor is ever on them.
    is_xpu = is_mps = is_ipu = is_maia = is_mtia = is_vulkan = is_xla = False

    @overridable
    def get_device(self):
        dev = self._backend.device
        return -1 if dev.type in ("cpu", "meta") else (dev.index or 0)

    @overridable
    def is_floating_point(self):
        return self.dtype.is_floating_point

    @overridable
    def is_complex(self):
        return self.dtype.is_complex

    @overridable
    def is_signed(self):
        return self.dtype.is_signed

    @property
    def _version(self):
        """Bumped by every in-place write; shared by a base and all of its views."""
        return self._vc[0]

    def _bump_version(self):
        """Record an in-place write: the counter is shared with the base and every view, so all of them see it
        (and autograd refuses saved tensors whose version moved on)."""
        self._vc[0] += 1

    @overridable
    def is_contiguous(self, memory_format=contiguous_format):
        size, stride = self._size, self._stride
        if 0 in size:
            return True
        if memory_format is contiguous_format or memory_format is preserve_format:
            return _is_contiguous_in_order(size, stride, range(len(size) - 1, -1, -1))
        if memory_format is channels_last:
            return len(size) == 4 and _is_contiguous_in_order(size, stride, (1, 3, 2, 0))
        if memory_format is channels_last_3d:
            return len(size) == 5 and _is_contiguous_in_order(size, stride, (1, 4, 3, 2, 0))
        raise RuntimeError(f"is_contiguous: unknown memory_format {memory_format}")

    @overridable
    def is_non_overlapping_and_dense(self):
        """True if the elements tile a block of memory exactly once, in some order of the dims (always, for no
        elements: PyTorch's empty_like and clone then keep an empty tensor's strides as they are)."""
        if 0 in self._size:
            return True
        order = sorted(range(len(self._size)), key=lambda d: (self._stride[d], self._size[d]))
        return _is_contiguous_in_order(self._size, self._stride, order)

    def _wrap_dim(self, dim, ndim=None):
        return wrap_dim(dim, len(self._size) if ndim is None else ndim)

    def __len__(self):
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    __hash__ = object.__hash__


_new = object.__new__
tensor_class = TensorImpl  # the class of every new tensor object: lantern.Tensor once _tensor.py registers it


def register_tensor_class(cls):
    """Make every tensor an instance of cls from now on. lantern/_tensor.py registers lantern.Tensor (TensorImpl
    with the methods bound from the op registry) as it loads: core sits below it and cannot import it."""
    global tensor_class
    tensor_class = cls


def new_tensor_object():
    """A blank instance of the registered tensor class, for make_tensor and the backends to fill in."""
    return _new(tensor_class)


def make_tensor(storage, size, stride, offset, dtype, backend, nd=None, vc=None, base=None):
    """Build a tensor object (of lantern.Tensor's class) around existing metadata; no argument checks."""
    t = _new(tensor_class)
    t._storage = storage
    t._size = size
    t._stride = stride
    t._offset = offset
    t.dtype = dtype
    t._backend = backend
    t._nd = nd
    t._nd_gen = storage._gen
    t._vc = [0] if vc is None else vc
    t._base = base
    return t
