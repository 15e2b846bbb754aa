"""torch.utils.backend_registration: name the device from outside (PrivateUse1) and give it the conveniences
PyTorch generates for it: `Tensor.foo()`, `Tensor.is_foo`, `Module.foo()`, `PackedSequence.foo()`, storages'.

The device itself (allocator, kernels, copies) is registered with lantern.backends.privateuse1; its module (what
`lantern.foo` is: is_available, device_count, ...) with `lantern._register_device_module`. See
docs/internals/custom-devices.md.

>>> lantern.device("privateuseone").type == lantern.utils.backend_registration._get_privateuse1_backend_name()
True
"""
import sys

from .._tensor import Tensor
from ..core import device as _devices
from ..core.device import device as _device
from ..core.storage import UntypedStorage
from ..nn.modules.module import Module
from ..nn.utils.rnn import PackedSequence
from ..storage import TypedStorage

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]


def _get_privateuse1_backend_name():
    """The PrivateUse1 device's name: 'privateuseone' until rename_privateuse1_backend."""
    return _devices.privateuse1_name()


def rename_privateuse1_backend(backend_name):
    """Call the PrivateUse1 device `backend_name` from now on: `lantern.device("foo")`, `.to("foo")`; once per
    process (the same name again is allowed), and not a name lantern's own devices have.

    A device registered before (lantern.backends.privateuse1.register_privateuse1_backend) answers to the new name
    from then on; tensors made before the rename keep the old one, so rename before making any."""
    _devices.rename_privateuse1(backend_name)


def _register_device_module(device_type, module):
    """Make `module` lantern.<device_type> (and importable as such): the device module of a device from outside,
    which lantern asks for is_available, device_count, current_device, manual_seed_all, get_amp_supported_dtype...
    (torch._register_device_module)."""
    device_type = _device(device_type).type
    lantern = sys.modules["lantern"]
    if hasattr(lantern, device_type):
        raise RuntimeError(f"The runtime module of '{device_type}' has already been registered with "
                           f"'{getattr(lantern, device_type)}'")
    setattr(lantern, device_type, module)
    sys.modules[f"lantern.{device_type}"] = module


def _get_custom_mod_func(func_name):
    """The function `func_name` of the PrivateUse1 device's module; RuntimeError naming what to register if the
    module or the function is missing."""
    if not isinstance(func_name, str):
        raise AssertionError(f"func_name must be `str`, but got `{type(func_name)}`.")
    name = _get_privateuse1_backend_name()
    module = getattr(sys.modules["lantern"], name, None)
    function = getattr(module, func_name, None)
    if module is None or function is None:
        raise RuntimeError(f"Try to call torch.{name}.{func_name}. The backend must register a custom backend module "
                           f"with `torch._register_device_module('{name}', BackendModule)`. And BackendModule needs "
                           f"to have the following API's:\n `{func_name}(*args, **kwargs)`. \n")
    return function


def _check_register_once(owner, attr):
    if hasattr(owner, attr):
        raise RuntimeError(f"The custom device module of {owner} has already been registered with {attr}")


def _device_index(name, dev):
    """The index a `.foo(device)` call means: the device module's current_device() when none is given."""
    if dev is None or (isinstance(dev, (str, _device)) and _device(dev).index is None):
        if dev is not None and _device(dev).type != name:
            raise RuntimeError(f"Invalid device, must be {name} device")
        module = getattr(sys.modules["lantern"], name, None)
        return module.current_device() if hasattr(module, "current_device") else 0
    if isinstance(dev, (str, _device)):
        dev = _device(dev)
        if dev.type != name:
            raise RuntimeError(f"Invalid device, must be {name} device")
        return dev.index
    return dev


def _target(name, dev):
    """The device `.foo(dev)` moves to: the device as the backend files it (lantern's registered devices carry no
    index), once the index is checked."""
    _device_index(name, dev)
    return _device(name)


def _tensor_methods(name):

    def is_device(self):
        return self.device.type == name
    is_device.__name__ = f"is_{name}"
    _check_register_once(Tensor, f"is_{name}")
    setattr(Tensor, f"is_{name}", property(is_device))

    def to_device(self, device=None, non_blocking=False, **kwargs):
        return self.to(device=_target(name, device), non_blocking=non_blocking, **kwargs)
    to_device.__name__ = name
    to_device.__doc__ = f"A copy on the {name} device, or self if it is there already."
    _check_register_once(Tensor, name)
    setattr(Tensor, name, to_device)


def _module_methods(name):
    if not hasattr(Tensor, name):
        raise RuntimeError(f"Can not automatically generate {name}() method for torch.nn.Module.Because torch.Tensor "
                           f"doesn't has the method {name}().For this error, you can try setting for_tensor=True.")

    def to_device(self, device=None):
        """Move every parameter and buffer to the device (in place; build the optimizer after)."""
        return self._apply(lambda t: getattr(t, name)(device))
    to_device.__name__ = name
    _check_register_once(Module, name)
    setattr(Module, name, to_device)


def _packed_sequence_methods(name):
    if not hasattr(Tensor, f"is_{name}") or not hasattr(Tensor, name):
        raise RuntimeError(f"Can not automatically generate is_{name}() or {name}() method for "
                           f"torch.nn.utils.rnn.PackedSequence.Because torch.Tensor doesn't has the method "
                           f"is_{name}()or {name}().For this error, you can try setting for_tensor=True.")

    def is_device(self):
        return self.data.device.type == name
    _check_register_once(PackedSequence, f"is_{name}")
    setattr(PackedSequence, f"is_{name}", property(is_device))

    def to_device(self, *args, **kwargs):
        """The packed sequence with its data on the device (its index tensors stay where PackedSequence.to keeps
        them)."""
        if not args and "device" not in kwargs:
            kwargs["device"] = name
        return self.to(*args, **kwargs)
    to_device.__name__ = name
    _check_register_once(PackedSequence, name)
    setattr(PackedSequence, name, to_device)


def _storage_methods(name, unsupported_dtype):

    def is_device(self):
        return self.device.type == name
    _check_register_once(UntypedStorage, f"is_{name}")
    setattr(UntypedStorage, f"is_{name}", property(is_device))

    def untyped_to_device(self, device=None, non_blocking=False):
        """This storage's bytes in a new storage on the device (self if it is there already)."""
        target = _target(name, device)
        if self.device == target:
            return self
        moved = UntypedStorage(self.nbytes(), device=target)
        moved.copy_(self)
        return moved
    untyped_to_device.__name__ = name
    _check_register_once(UntypedStorage, name)
    setattr(UntypedStorage, name, untyped_to_device)

    def typed_is_device(self):
        return self._untyped_storage.device.type == name
    _check_register_once(TypedStorage, f"is_{name}")
    setattr(TypedStorage, f"is_{name}", property(typed_is_device))

    def typed_to_device(self, device=None, non_blocking=False, **kwargs):
        """The typed storage with its bytes on the device."""
        if unsupported_dtype and self.dtype in unsupported_dtype:
            raise RuntimeError(f"Cannot create {name} storage as {self.dtype} dtype is not supported by this backend")
        return TypedStorage(wrap_storage=getattr(self._untyped_storage, name)(device, non_blocking),
                            dtype=self.dtype, _internal=True)
    typed_to_device.__name__ = name
    _check_register_once(TypedStorage, name)
    setattr(TypedStorage, name, typed_to_device)


def generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_packed_sequence=True,
                                             for_storage=False, unsupported_dtype=None):
    """Add the PrivateUse1 device's conveniences, named after it ("foo" after rename_privateuse1_backend("foo")):
    `Tensor.foo(device=None)` and `Tensor.is_foo`, `Module.foo()`, `PackedSequence.foo()` and `.is_foo`, and with
    for_storage `UntypedStorage.foo()` / `TypedStorage.foo()` and `.is_foo`. Each name can be added once."""
    name = _get_privateuse1_backend_name()
    if for_tensor:
        _tensor_methods(name)
    if for_module:
        _module_methods(name)
    if for_storage:
        _storage_methods(name, unsupported_dtype)
    if for_packed_sequence:
        _packed_sequence_methods(name)
