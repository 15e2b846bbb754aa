"""skip_init (torch.nn.utils.init): build a module without running its parameter initialisation.

The module is built on the meta device (shapes only, nothing computed) and then given uninitialised storage on
the requested device, so its parameters hold whatever memory they got until the program sets them.

>>> import lantern
>>> from lantern.nn.utils import skip_init
>>> layer = skip_init(lantern.nn.Linear, 3, 2)
>>> layer.weight.shape, layer.weight.device
(lantern.Size([2, 3]), device(type='cpu'))
"""
import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) with its parameters allocated but not initialised (device= as given, or cpu)."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
