"""CrossMapLRN2d: the legacy (Lua Torch) local response normalization across channels of a 4-D input
(torch.nn.CrossMapLRN2d, torch.nn.modules.normalization.CrossMapLRN2d).

out = x · (k + alpha/size · S)^-beta, where S sums x² over a window of channels. The windows are those of torch's
running-sum implementation, which are not quite centred: with P = (size-1)//2 + 1, channel c sums channels
[0, min(c+P, C)) while c <= P; after that the running sum drops channels 1, 2, ... but never channel 0, so S is
x₀² plus channels [c-P+1, min(c+P, C)). The gradient is torch's hand-written one (its window of g·out/scale runs
from c - (size - (size-1)//2) over `size` channels), not the derivative of the forward, exactly as torch computes it.

>>> import lantern
>>> lrn = lantern.nn.CrossMapLRN2d(3, alpha=1.0, beta=1.0, k=1.0)
>>> x = lantern.ones(1, 4, 1, 1)
>>> lrn(x).flatten()
tensor([0.6000, 0.5000, 0.4286, 0.5000])
"""
import lantern
from ...autograd.function import Function
from .module import Module

__all__ = ["CrossMapLRN2d"]


def _prefix_sums(t):
    """P[:, k] = sum of t[:, :k] over the channel dimension (P[:, 0] = 0)."""
    return lantern.cat([lantern.zeros_like(t[:, :1]), t.cumsum(1)], 1)


def _window_sums(t, lows, highs):
    """For each channel c: the sum of t over channels [lows[c], highs[c])."""
    prefix = _prefix_sums(t)
    return prefix.index_select(1, lantern.tensor(highs)) - prefix.index_select(1, lantern.tensor(lows))


class _CrossMapLRN2dFunction(Function):
    """The forward and torch's hand-written backward (see the module docstring for both windows)."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        channels = input.size(1)
        pre_pad = int((size - 1) / 2 + 1)
        square = input * input
        highs = [min(c + pre_pad, channels) for c in range(channels)]
        lows = [0 if c <= pre_pad else c - pre_pad + 1 for c in range(channels)]
        window = _window_sums(square, lows, highs)
        keeps_first = lantern.tensor([c > pre_pad for c in range(channels)], dtype=input.dtype)
        window = window + square[:, :1] * keeps_first.view(1, channels, 1, 1)  # channel 0 is never dropped
        scale = window * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.size, ctx.alpha, ctx.beta, ctx.scale = size, alpha, beta, scale
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        size, channels = ctx.size, input.size(1)
        inverse_pre_pad = int(size - (size - 1) / 2)
        ratio = grad_output * output / ctx.scale
        lows = [max(c - inverse_pre_pad, 0) for c in range(channels)]
        highs = [min(max(c - inverse_pre_pad + size, 0), channels) for c in range(channels)]
        accumulated = _window_sums(ratio, lows, highs)
        grad_input = ctx.scale.pow(-ctx.beta) * grad_output
        grad_input = grad_input - (2 * ctx.alpha * ctx.beta / size) * input * accumulated
        return grad_input, None, None, None, None


class CrossMapLRN2d(Module):
    """Local response normalization across `size` neighbouring channels of an (N, C, H, W) input, the legacy
    formulation (LocalResponseNorm is the modern one)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
