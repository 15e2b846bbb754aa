"""Ready-made parametrizations (torch.nn.utils.parametrizations): weight_norm so far.

weight_norm stores the magnitude g = ‖v‖ (over every dim but `dim`) as `parametrizations.weight.original0` and the
direction v as `original1`; `module.weight` is v · g/‖v‖ at each access. Checkpoints saved with the older
nn.utils.weight_norm (weight_g, weight_v) load into it, as in torch. spectral_norm and orthogonal are not
implemented yet.

>>> import lantern
>>> from lantern.nn.utils.parametrizations import weight_norm
>>> layer = weight_norm(lantern.nn.Linear(3, 2))
>>> list(layer.state_dict()), tuple(layer.parametrizations.weight.original0.shape)
(['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1'], (2, 1))
"""
from ..modules.module import Module
from . import parametrize
from .weight_norm import norm_except_dim

__all__ = ["weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Split `module.<name>` into a magnitude and a direction, as a parametrization; returns the module."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_old_weight_norm_keys(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                  error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(load_old_weight_norm_keys)
    return module
