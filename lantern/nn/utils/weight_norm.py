"""weight_norm (torch.nn.utils.weight_norm): a weight written as a magnitude g times a direction v/‖v‖.

The module's `weight` parameter is replaced by `weight_g` (the norms over every dim but `dim`) and `weight_v` (the
direction); a forward pre-hook rebuilds `weight = v · g/‖v‖` before each call. torch marks this form deprecated in
favour of parametrizations.weight_norm and warns; so does lantern.

>>> import warnings, lantern
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     layer = lantern.nn.utils.weight_norm(lantern.nn.Linear(3, 2))
>>> [name for name, _ in layer.named_parameters()], tuple(layer.weight_g.shape)
(['bias', 'weight_g', 'weight_v'], (2, 1))
"""
import warnings

from ..parameter import Parameter
from ...core import user_warnings

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def norm_except_dim(v, pow=2, dim=0):
    """‖v‖ over every dim but `dim`, shaped to broadcast against v (dim=-1: the norm of all of v)."""
    if dim == -1:
        return v.norm(pow)
    moved = v.transpose(0, dim) if dim != 0 else v
    norms = moved.contiguous().view(moved.size(0), -1).norm(pow, dim=1)
    norms = norms.view(moved.size(0), *([1] * (v.dim() - 1)))
    return norms.transpose(0, dim) if dim != 0 else norms


class WeightNorm:
    """The forward pre-hook that recomputes `name` from `name_g` and `name_v`."""

    def __init__(self, name, dim):
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, self.dim))

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Split `module.<name>` into magnitude `<name>_g` and direction `<name>_v`; returns the module."""
    user_warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Fold `<name>_g` and `<name>_v` back into one `<name>` parameter; returns the module."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
