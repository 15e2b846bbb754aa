"""Identity, Linear and Bilinear (torch.nn.modules.linear).

Linear(in, out) holds weight (out, in) and bias (out,) and computes y = x Wᵀ + b; Bilinear(in1, in2, out) holds
weight (out, in1, in2) and computes y_k = x1ᵀ W_k x2 + b_k. Both draw their parameters from U(±1/sqrt(in)).

>>> import lantern
>>> lin = lantern.nn.Linear(3, 2)
>>> lin, tuple(lin.weight.shape), lin(lantern.ones(4, 3)).shape
(Linear(in_features=3, out_features=2, bias=True), (2, 3), lantern.Size([4, 2]))
>>> lantern.nn.Bilinear(2, 3, 4, bias=False)(lantern.ones(5, 2), lantern.ones(5, 3)).shape
lantern.Size([5, 4])
>>> lantern.nn.Identity(54, unused="ignored")(lantern.tensor([1.])).tolist()
[1.0]
"""
import math

from ... import no_grad
from .. import functional as F, init
from ._layer_params import fan_in_uniform_, weight_and_bias
from ..parameter import UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]  # and NonDynamicallyQuantizableLinear, as in torch


class Identity(Module):
    """Returns its input unchanged; any constructor arguments are accepted and ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x Wᵀ + b over the last dim of x, with weight (out_features, in_features)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        weight_and_bias(self, (out_features, in_features), out_features, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        fan_in_uniform_(self.weight, self.bias)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """y_k = x1ᵀ W_k x2 + b_k, with weight (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        weight_and_bias(self, (out_features, in1_features, in2_features), out_features, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under another name: PyTorch's MultiheadAttention.out_proj class (its quantization tooling tells the
    two apart; here they compute the same)."""


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is taken from the first input's last dim; it then becomes a Linear."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
