"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch.nn.modules.conv).

A Conv{n}d holds weight (out_channels, in_channels // groups, *kernel_size) and bias (out_channels,), both drawn
from U(±1/sqrt(fan_in)) (kaiming_uniform_ with a=sqrt(5)). padding may be 'valid', 'same' (stride 1 only) or ints;
a padding_mode other than 'zeros' pads with F.pad first and convolves with no padding. A transposed conv's weight
is (in_channels, out_channels // groups, *kernel_size), and forward(input, output_size) picks output_padding.

>>> import lantern
>>> conv = lantern.nn.Conv2d(3, 8, 3, padding="same", padding_mode="reflect")
>>> conv
Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=same, padding_mode=reflect)
>>> conv(lantern.randn(2, 3, 5, 5)).shape
lantern.Size([2, 8, 5, 5])
>>> lantern.nn.ConvTranspose1d(4, 2, 3, stride=2)(lantern.randn(1, 4, 5), output_size=[12]).shape
lantern.Size([1, 2, 12])
"""
from ... import no_grad
from .. import functional as F
from ..parameter import UninitializedParameter
from ._layer_params import fan_in_uniform_, weight_and_bias
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]


def _ntuple(value, n):
    """An int (or a sequence) as a tuple of n values, like torch.nn.modules.utils._ntuple."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,) * n


def _reverse_repeat(values):
    """(p0, p1) -> [p1, p1, p0, p0]: per-dim padding in F.pad's last-dim-first order."""
    return [p for p in reversed(values) for _ in range(2)]


class _ConvNd(Module):
    """The shared state of every convolution: channels, geometry, weight and bias."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    _dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            valid = {"same", "valid"}
            if padding not in valid:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_modes:
            raise ValueError(f"padding_mode must be one of {valid_modes}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.transposed, self.output_padding, self.groups = transposed, output_padding, groups
        self.padding_mode = padding_mode
        if padding == "same":
            # total padding d*(k-1), the odd element on the right, in F.pad's order
            self._reversed_padding_repeated_twice = [
                p for d, k in zip(reversed(dilation), reversed(kernel_size))
                for p in (d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)]
        elif padding == "valid":
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat(padding)
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        weight_and_bias(self, shape + tuple(kernel_size), out_channels, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        fan_in_uniform_(self.weight, self.bias)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        n = self._dims
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, n), _ntuple(stride, n),
                         padding if isinstance(padding, str) else _ntuple(padding, n), _ntuple(dilation, n),
                         False, _ntuple(0, n), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._dims - 1]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or (C_in, L) input."""
    _dims = 1


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) input."""
    _dims = 2


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W) input."""
    _dims = 3


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        n = self._dims
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, n), _ntuple(stride, n),
                         _ntuple(padding, n), _ntuple(dilation, n), True, _ntuple(output_padding, n), groups, bias,
                         padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        """output_padding as given, or the one that makes the output exactly output_size (checked in range)."""
        if output_size is None:
            return list(self.output_padding)
        non_spatial = 2 if input.dim() == num_spatial_dims + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + num_spatial_dims:
            output_size = output_size[non_spatial:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {non_spatial + num_spatial_dims} elements "
                             f"(got {len(output_size)})")
        dilation = dilation or (1,) * num_spatial_dims
        min_sizes = [(input.size(d + non_spatial) - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel_size[d] - 1)
                     + 1 for d in range(num_spatial_dims)]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, stride)]
        for size, low, high in zip(output_size, min_sizes, max_sizes):
            if size < low or size > high:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {input.size()[2:]})")
        return [size - low for size, low in zip(output_size, min_sizes)]

    def forward(self, input, output_size=None):
        n = self._dims
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for ConvTranspose{n}d")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, n,
                                              self.dilation)
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return conv(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                    self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (the gradient of Conv1d with respect to its input)."""
    _dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution (the gradient of Conv2d with respect to its input)."""
    _dims = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution (the gradient of Conv3d with respect to its input)."""
    _dims = 3


class _LazyConvMixin(LazyModuleMixin):
    """in_channels from the first input (dim 1 if batched, else 0); weight and bias materialized to match."""

    def _make_lazy(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            if self.transposed:
                self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
            else:
                self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input):
        unbatched, batched = self._dims + 1, self._dims + 2
        if input.dim() not in (unbatched, batched):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {batched}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == batched else input.shape[0]


class _LazyConv(_LazyConvMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device, dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A Conv1d whose in_channels comes from the first input."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A Conv2d whose in_channels comes from the first input."""
    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A Conv3d whose in_channels comes from the first input."""
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ConvTranspose1d whose in_channels comes from the first input."""
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ConvTranspose2d whose in_channels comes from the first input."""
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ConvTranspose3d whose in_channels comes from the first input."""
    cls_to_become = ConvTranspose3d
