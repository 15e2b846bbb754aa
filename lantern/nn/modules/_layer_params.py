"""How layers make and initialise their weight and bias, shared by linear, conv and the normalisation layers.

Parameters are registered in PyTorch's order (weight, then bias), which fixes the parameter names, the state_dict
order and the order of the random draws in reset_parameters.

>>> import lantern
>>> from lantern.nn.modules._layer_params import fan_in_uniform_, weight_and_bias
>>> layer = lantern.nn.Module()
>>> weight_and_bias(layer, (2, 4), 2, bias=True, device=None, dtype=None)
>>> fan_in_uniform_(layer.weight, layer.bias)
>>> [name for name, _ in layer.named_parameters()], bool(layer.bias.abs().max() <= 0.5)
(['weight', 'bias'], True)
"""
import math

from ... import _functions as _fns
from .. import init
from ..parameter import Parameter


def weight_and_bias(module, weight_shape, bias_shape, bias, device, dtype):
    """Register an uninitialised `weight` of weight_shape and, when bias, a `bias` of bias_shape (else None)."""
    module.weight = Parameter(_fns.empty(weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(_fns.empty(bias_shape, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def affine_params(module, shape, weight, bias, device, dtype):
    """A normalisation layer's affine part: weight (and bias, when bias) of `shape` when weight, else both None."""
    if weight:
        weight_and_bias(module, shape, shape, bias, device, dtype)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def ones_zeros_(module):
    """Reset a normalisation layer's affine part to the identity: weight to ones, bias to zeros (where present)."""
    if module.weight is not None:
        init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)


def fan_in_uniform_(weight, bias):
    """Linear's and Conv's default init: weight from kaiming_uniform_ with a=sqrt(5), which is U(±1/sqrt(fan_in)),
    and bias (when not None) from the same bound."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)
