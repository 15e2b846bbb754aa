"""Tensors from Python data and NumPy arrays: tensor() copies, from_numpy() shares, as_tensor() shares when it can.

>>> import numpy as np
>>> a = np.ones((2, 2)); t = lantern.from_numpy(a); t.add_(1.0); a[0, 0]
np.float64(2.0)
"""
import numpy as np

from .core import dtype as dt
from .core.device import CPU, device as _device
from .core.storage import wrap_numpy_memory
from .core.tensor_impl import TensorImpl, make_tensor
from .ops.dispatcher import backend_for_device


def _infer_dtype(data):
    """PyTorch's inference for nested Python data: any complex > any float > any int > bool."""
    kinds = set()
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, TensorImpl):
            kinds.add(x.dtype)
        elif isinstance(x, bool) or isinstance(x, np.bool_):
            kinds.add(dt.bool)
        elif isinstance(x, (int, np.integer)):
            kinds.add(dt.int64)
        elif isinstance(x, (float, np.floating)):
            kinds.add(dt.get_default_dtype())
        elif isinstance(x, (complex, np.complexfloating)):
            kinds.add(dt.default_complex_dtype())
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    if not kinds:
        return dt.get_default_dtype()
    best = max(kinds, key=lambda d: (d.category, d.itemsize))
    if best.category == dt.FLOATING and dt.get_default_dtype() not in kinds:
        return best
    return best


def _nested_to_numpy(data, dtype):
    def conv(x):
        if isinstance(x, TensorImpl):
            return x.tolist()
        if isinstance(x, (list, tuple)):
            return [conv(y) for y in x]
        return x
    try:
        return np.array(conv(data), dtype=dtype.np)
    except ValueError as e:
        raise ValueError(f"expected sequence of equal-length lists to build a tensor ({e})") from None


def _from_array_copy(arr, dtype, device):
    backend = backend_for_device(device)
    t = backend.empty(arr.shape, dtype)
    if backend.xp is not None:
        backend.array(t)[...] = arr if backend.device.type == "cpu" else backend.from_host(arr)
    return t


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested lists, NumPy arrays, scalars or tensors).

    >>> lantern.tensor([1, 2]).dtype, lantern.tensor([1., 2]).dtype, lantern.tensor(True).dtype
    (lantern.int64, lantern.float32, lantern.bool)
    """
    device = CPU if device is None else _device(device)
    if isinstance(data, TensorImpl):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() or "
                      "sourceTensor.clone().detach().requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        out = data.detach().to(dtype=dtype or data.dtype, device=device, copy=True)
    else:
        if isinstance(data, np.ndarray):
            src_dtype = dt.from_numpy_dtype(data.dtype)
            arr = data
        else:
            if not isinstance(data, (list, tuple, int, float, complex, bool, np.generic)):
                raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
            src_dtype = _infer_dtype(data) if dtype is None else dtype
            arr = _nested_to_numpy(data, src_dtype)
            if isinstance(data, np.generic) and dtype is None:
                src_dtype = dt.from_numpy_dtype(data.dtype)
        target = dtype or src_dtype
        out = _from_array_copy(np.asarray(arr), target, device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def from_numpy(arr):
    """A tensor over the same memory as `arr`: dtype and strides (in elements) kept, nothing copied."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    dtype = dt.from_numpy_dtype(arr.dtype)
    if any(s < 0 for s in arr.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative strides are not "
            "currently supported. (You can probably work around this by making a copy of your array  with "
            "array.copy().) ")
    itemsize = arr.itemsize
    if any(s % itemsize for s in arr.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy array "
                         "to reallocate the memory.")
    storage = wrap_numpy_memory(arr)
    backend = backend_for_device(CPU)
    return make_tensor(storage, tuple(arr.shape), tuple(s // itemsize for s in arr.strides), 0, dtype, backend)


def as_tensor(data, dtype=None, device=None):
    """Share memory with `data` when it is already a tensor or NumPy array of the right dtype/device; else copy."""
    if isinstance(data, TensorImpl):
        return data.to(dtype=dtype, device=device) if (dtype or device) else data
    if isinstance(data, np.ndarray) and (device is None or _device(device) == CPU):
        try:
            t = from_numpy(data)
        except (ValueError, TypeError):
            return tensor(data, dtype=dtype, device=device)
        return t if dtype is None or dtype is t.dtype else t.to(dtype)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def legacy_tensor_new(cls, *args, **kwargs):
    """`lantern.Tensor(2, 3)` (uninitialised float), `Tensor([1, 2])` (float copy), `Tensor()` (empty)."""
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"new() received an invalid combination of arguments - got {list(kwargs)}")
    if not args:
        return tensor([], dtype=dt.get_default_dtype(), device=device)
    if len(args) == 1 and not isinstance(args[0], int):
        data = args[0]
        if isinstance(data, TensorImpl):
            return data
        return tensor(data, dtype=dt.get_default_dtype(), device=device)
    from .ops.dispatcher import call
    from .ops.registry import get
    return call(get("empty"), (tuple(args), dt.get_default_dtype(), None, device, None, False, None))


def rebuild_tensor(array, requires_grad, device):
    t = tensor(array, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t
