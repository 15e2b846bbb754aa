"""Devices from outside lantern: PyTorch's PrivateUse1 path.

PyTorch keeps one dispatch key, PrivateUse1, for a device built out of tree. Its C++ extension registers an
allocator (`REGISTER_ALLOCATOR`), kernels (`TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)`), the copies to and from the
host (`_copy_from`) and often a fallback that runs what it lacks on the CPU; then Python names the device
(`torch.utils.rename_privateuse1_backend("foo")`) and gives it a module (`torch._register_device_module`).

In lantern a device is a Backend (lantern/backends/base.py): an allocator, an array library `xp`, the arrays its
kernels see, and the copies to and from the host. A device from outside subclasses `PrivateUse1Backend` and hands an
instance to `register_privateuse1_backend`. From then on it runs every kernel written against `xp` (most of
lantern's), whatever `register_kernel` gives it op by op, and `register_fallback` for the rest (`cpu_fallback`: the
CPU kernel on copies). lantern.testing._openreg is a complete example: host memory behind its own allocator.
docs/internals/custom-devices.md walks through it.

>>> PrivateUse1Backend.key, PrivateUse1Backend.fallback is None
(<DispatchKey.PrivateUse1: 6>, True)
"""
from ..core import storage as _storage
from ..core.device import CPU, device as _device, on_privateuse1_rename, privateuse1_name
from ..core.dispatch_keys import DispatchKey
from ..core.tensor_impl import TensorImpl
from ..ops import dispatcher, registry
from ..ops.op_kinds import AliasKind
from .base import Backend, install_backend

_registered = [None]  # the one PrivateUse1 backend, as in PyTorch
_own_kernels = set()  # the ops register_kernel gave a kernel: installing (again, on a reference-mode switch) keeps it


class PrivateUse1Backend(Backend):
    """What a device from outside implements (the rest is Backend's, shared by every device):

    - `allocator`: allocate(nbytes) -> buffer, free(buffer, nbytes), address(buffer) -> int, and `stats`
      (lantern.core.allocator.AllocatorStats), as lantern's own allocators;
    - `xp`: the array library its kernels compute with (NumPy, CuPy, or one that quacks like them);
    - `array_over(storage, shape, dtype)` and `array(t)`: a tensor's memory seen as an `xp` array;
    - `to_host(array)` and `from_host(numpy_array)`: the copies between the device and the host (NumPy).
    """

    key = DispatchKey.PrivateUse1
    fallback = None  # the kernel of ops that have no other one here (register_fallback)

    def host_array(self, t):
        """The NumPy array of a tensor's values for host-side code (SciPy's solvers, printing): a copy."""
        return self.to_host(self.array(t))

    def to_host(self, array):
        raise NotImplementedError(f"{type(self).__name__}.to_host: a device copies its arrays to the host")

    def from_host(self, array):
        raise NotImplementedError(f"{type(self).__name__}.from_host: a device copies host arrays in")

    def install(self, op):
        """Backend.install, then the fallback for an op that got no kernel here; a kernel from register_kernel
        stays."""
        if op in _own_kernels:
            return
        super().install(op)
        if self.fallback is not None and self.key not in op.kernels:
            op.kernels[self.key] = self.fallback


def register_privateuse1_backend(backend):
    """Make `backend` the PrivateUse1 device: tensors can be made on it by its name (`privateuseone` or what
    lantern.utils.rename_privateuse1_backend chose), storages use its allocator, and every op gets its kernel.

    One device per process, as in PyTorch; registering the same backend again does nothing."""
    if not isinstance(backend, PrivateUse1Backend):
        raise TypeError(f"register_privateuse1_backend: expected a PrivateUse1Backend, got {type(backend).__name__}")
    if _registered[0] is backend:
        return
    if _registered[0] is not None:
        raise RuntimeError(f"register_privateuse1_backend: the PrivateUse1 device is already "
                           f"{type(_registered[0]).__name__} ({privateuse1_name()}); a process has one")
    backend.device = _device(privateuse1_name())
    _storage.register_allocator(backend.device.type, backend.allocator)
    _registered[0] = backend
    install_backend(backend)


def registered_backend():
    """The registered PrivateUse1 backend, or None."""
    return _registered[0]


def _refile(old, new):
    """The device was renamed: its backend and allocator answer to the new name (devices made before keep theirs)."""
    backend = _registered[0]
    if backend is not None:
        backend.device = _device(new)
        dispatcher.register_backend(new, backend)
        _storage.register_allocator(new, backend.allocator)


on_privateuse1_rename(_refile)


def register_kernel(op_name, kernel):
    """Give the op named `op_name` ('add', 'mm', 'max.dim', ...) the kernel `kernel(op, args)` on the PrivateUse1
    device, in place of the shared one (`TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl(name, kernel); }`).
    `args` is the tuple of the op's arguments in schema order; the kernel returns what the op returns."""
    backend = _require_backend("register_kernel")
    op = registry.get(op_name)
    op.kernels[backend.key] = kernel
    _own_kernels.add(op)


def register_fallback(kernel):
    """The kernel(op, args) of every op that has none on the PrivateUse1 device, now or when registered later
    (`TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(kernel); }`); `cpu_fallback` is the usual one."""
    backend = _require_backend("register_fallback")
    backend.fallback = kernel
    for op in list(registry.REGISTRY.values()):
        if backend.key not in op.kernels:
            op.kernels[backend.key] = kernel


def _require_backend(what):
    if _registered[0] is None:
        raise RuntimeError(f"{what}: register the device first (register_privateuse1_backend)")
    return _registered[0]


def cpu_fallback(op, args):
    """Run op's CPU kernel on CPU copies of the device's tensors and copy the results back, as ATen's
    at::native::cpu_fallback does: new tensors come back as device tensors, a written tensor (in-place self,
    out=) gets the CPU result written into it. Views cannot be made this way (a copy is not a view)."""
    cpu_kernel = op.kernels.get(DispatchKey.CPU)
    backend = _registered[0]
    if cpu_kernel is None or op.schema.alias is AliasKind.VIEW:
        dispatcher.raise_missing_kernel(op, backend)
    on_cpu = tuple(_to_cpu(a) for a in args)
    result = cpu_kernel(op, on_cpu)
    written = dispatcher.written_argument(op)
    if written is not None:
        return _write_back(backend, args[written], on_cpu[written])
    return _to_device(backend, result)


def _to_cpu(a):
    if isinstance(a, TensorImpl) and a.device != CPU:
        return _copy(a, CPU)
    if isinstance(a, (list, tuple)) and any(isinstance(t, TensorImpl) for t in a):
        return type(a)(_to_cpu(t) for t in a)
    return a


def _to_device(backend, result):
    if isinstance(result, TensorImpl):
        return _copy(result, backend.device) if result.device == CPU else result
    if isinstance(result, tuple):
        return type(result)(*(_to_device(backend, r) for r in result)) if hasattr(result, "_fields") else \
            tuple(_to_device(backend, r) for r in result)
    if isinstance(result, list):
        return [_to_device(backend, r) for r in result]
    return result


def _copy(t, dev):
    """t on device `dev`, strides kept as .to() keeps them: the _to_copy kernel of t's own backend (below
    autograd: the fallback runs inside a kernel)."""
    to_copy = registry.get("_to_copy")
    return to_copy.kernels[t._backend.key](to_copy, (t, None, dev, None))


def _write_back(backend, dst, written_on_cpu):
    """The device tensor an in-place or out= op wrote, given what the CPU kernel wrote into its copy."""
    if dst._size != written_on_cpu._size:
        dst._resize(written_on_cpu._size)
    backend.array(dst)[...] = backend.from_host(written_on_cpu._backend.array(written_on_cpu))
    dst._bump_version()
    return dst
