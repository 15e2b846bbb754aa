"""More nn functional ops, composed of lantern ops (so autograd comes free): embedding_bag, rms_norm,
local_response_norm, the 3-d pools, power-average pools and max-unpooling. Every name in __all__ is in
lantern.nn.functional; max_pool3d and rms_norm are also in the lantern namespace, as in PyTorch's.

A 3-d pool is separable: its box window is a window over (H, W) for every depth, then one over D, so each is
two 2-d pools (with the divisors, ceil_mode windows and first-maximum indices PyTorch's 3-d kernels give).

embedding_bag looks rows up like embedding, then reduces each bag (a run of indices that starts at an offset) by
sum, mean or max; entries equal to padding_idx are left out of their bag, and an empty bag gives zeros.

>>> F = lantern.nn.functional
>>> w = lantern.arange(12.).view(6, 2)
>>> F.embedding_bag(lantern.tensor([0, 2, 4, 5]), w, lantern.tensor([0, 1]), mode="sum").tolist()
[[0.0, 1.0], [22.0, 25.0]]
>>> F.embedding_bag(lantern.tensor([[1, 3], [5, 5]]), w, mode="max", padding_idx=5).tolist()
[[6.0, 7.0], [0.0, 0.0]]
>>> F.max_pool3d(lantern.arange(8.).view(1, 1, 2, 2, 2), 2, return_indices=True)[1].view(-1).tolist()
[7]
>>> [round(v, 4) for v in F.rms_norm(lantern.tensor([3., 4.]), [2], eps=0.0).tolist()]
[0.8485, 1.1314]
"""

from ..core import dtype as dt
from .call_by_name import call_op as _op
from .nn_misc import _renorm_rows
from .nn_padding import pad
from .nn_pooling import (_output_size, adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool1d, avg_pool2d, max_pool1d,
                         max_pool2d)
from .registry import composite
from ..core.overridable import overridable
from ..core import user_warnings

__all__ = ["embedding_bag", "rms_norm", "local_response_norm", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d",
           "adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d",
           "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _bag_layout(input, offsets, include_last_offset):
    """(end of the last bag or None, the bag of each position, number of bags) for input split at offsets."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        bags, length = input.shape
        bag = _op("arange", bags, None, 1, dt.int64, None, input.device, None, False)
        return None, bag.repeat_interleave(length), bags
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    n = input.numel()
    bounds = offsets.tolist()
    if bounds and bounds[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {bounds[0]}")
    if bounds and bounds[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                           f"{bounds[-1]}")
    if any(b > a for a, b in zip(bounds[1:], bounds)):
        raise RuntimeError(f"embedding_bag: offsets must be non-decreasing, got {bounds}")
    starts, end = (bounds[:-1], bounds[-1]) if include_last_offset and bounds else (bounds, n)
    # bag of position j = (number of starts at or before j) - 1: a cumulative count of start marks
    marks = input.new_zeros(n + 1, dtype=dt.int64)  # + 1: an empty last bag starts at n
    if starts:
        marks = marks.index_add(0, offsets.new_tensor(starts, dtype=dt.int64), marks.new_ones(len(starts)))
    return (None if end == n else end), marks[:n].cumsum(0) - 1, len(starts)


@overridable
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sum, mean or max of the embedding rows in each bag: (B, embedding_dim), one row per bag."""
    if weight.dtype == dt.int64 and input.dtype.is_floating_point:
        user_warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    end, bag, bags = _bag_layout(input, offsets, include_last_offset)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if input.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{input.dtype.legacy} instead (while checking arguments for "
                           "embedding_bag)")
    num_weights = weight.shape[0]
    if padding_idx is not None and not -num_weights <= padding_idx < num_weights:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num_weights} through "
                           f"{num_weights - 1}, but got {padding_idx}")
    indices = input.reshape(-1)
    if max_norm is not None:
        _renorm_rows(weight, indices, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    bad = (indices < 0) | (indices >= num_weights)
    if bad.any():
        at = int(bad.nonzero()[0, 0])
        raise RuntimeError(f"Index {at} of input takes value {int(indices[at])} which is not in the valid range "
                           f"[0, {num_weights})")
    weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    if padding_idx is not None:
        keep = indices != (padding_idx % num_weights)
        end = None
        indices, bag = indices[keep], bag[keep]
        weights = None if weights is None else weights[keep]
    rows = _op("embedding", weight, indices, -1, scale_grad_by_freq, sparse)
    dim = weight.shape[1]
    out = weight.new_zeros((bags, dim))
    # With include_last_offset and input past the last offset, PyTorch's last bag ends at that offset only for
    # the sums of sum and mean without padding_idx; its max, its mean's count, and everything with a padding_idx
    # run to the end of the input. We do the same.
    if mode == "max":
        return out.scatter_reduce(0, bag.unsqueeze(1).expand(-1, dim), rows, "amax", include_self=False)
    if weights is not None:
        rows = rows * weights.unsqueeze(1)
    summed = bag if end is None else bag[:end]
    out = out.index_add(0, summed, rows if end is None else rows[:end])
    if mode == "mean":
        counts = weight.new_zeros(bags).index_add(0, bag, weight.new_ones(bag.numel()))
        out = out / counts.clamp(min=1).unsqueeze(1)
    return out

def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input², over the normalized_shape dims) + eps) * weight; eps None is the dtype's epsilon."""
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or input.dim() < k or tuple(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*{', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}")
    if eps is None:
        eps = dt.finfo(input.dtype).eps
    dims = list(range(input.dim() - k, input.dim()))
    x = input.float() if input.dtype in (dt.float16, dt.bfloat16) else input  # half precision computes in float32
    y = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    return (y if weight is None else y * weight).to(input.dtype)


@overridable
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha · mean of squares over `size` neighbouring channels) ** beta, the window centred on
    each channel and zero-padded at the ends. An int64 input's mean is floored, as its average pool's is in
    PyTorch, and the result is float32."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    integral = not (input.dtype.is_floating_point or input.dtype.is_complex)
    if integral and input.dtype is not dt.int64:  # PyTorch's average pools take no other integer dtype
        pool = "avg_pool2d" if input.dim() == 3 else "avg_pool3d"
        raise NotImplementedError(f"\"{pool}\" not implemented for '{input.dtype.legacy}'")
    squares = (input * input).movedim(1, -1)
    windows = pad(squares, (size // 2, (size - 1) // 2)).unfold(-1, size, 1)
    windows = windows.sum(-1).div(size, rounding_mode="floor") if integral else windows.mean(-1)
    return input / (windows.movedim(-1, 1) * alpha + k).pow(beta)


# ---- 3-d pooling as two 2-d pools -----------------------------------------------------------------------------

def _triple(value, name):
    v = (value,) * 3 if isinstance(value, int) else tuple(int(x) for x in value)
    if len(v) == 1:
        v = v * 3
    if len(v) != 3:
        raise RuntimeError(f"{name} must either be a single int, or a tuple of three ints")
    return v


def _volumes(input, message):
    """input as (N, C, D, H, W) (a batch of one for 4-D input), and whether to drop that batch dim again."""
    if input.dim() not in (4, 5) or 0 in input.shape[-4:]:
        raise RuntimeError(message.format(shape=list(input.shape)))
    return (input.unsqueeze(0), True) if input.dim() == 4 else (input, False)


def _separable(x, pool_hw, pool_d):
    """pool_hw over (H, W) of every depth, then pool_d over D (each column of the pooled planes): (y, i_hw, i_d)."""
    n, c, d, h, w = x.shape
    planes = pool_hw(x.reshape(n, c * d, h, w))
    planes, hw_index = planes if isinstance(planes, tuple) else (planes, None)
    oh, ow = planes.shape[-2:]
    columns = pool_d(planes.reshape(n, c, d, oh * ow))
    columns, d_index = columns if isinstance(columns, tuple) else (columns, None)
    return columns.reshape(n, c, columns.shape[2], oh, ow), hw_index, d_index  # (an empty batch has no -1)


def _volume_indices(hw_index, d_index, shape, out_shape):
    """Flat D*H*W indices from the depth picked per column and the (H, W) index picked in that depth's plane."""
    n, c, d, h, w = shape
    columns = hw_index.shape[-2] * hw_index.shape[-1]
    depth = d_index // columns
    in_plane = hw_index.reshape(n, c, d, columns).gather(2, depth)
    return (depth * (h * w) + in_plane).reshape(out_shape)


@overridable
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    x, unbatched = _volumes(input, "non-empty 4D or 5D (batch mode) tensor expected for input")
    k, p, dl = _triple(kernel_size, "kernel_size"), _triple(padding, "padding"), _triple(dilation, "dilation")
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else _triple(stride, "stride")
    y, hw_index, d_index = _separable(
        x, lambda t: max_pool2d(t, k[1:], s[1:], p[1:], dl[1:], ceil_mode, True),
        lambda t: max_pool2d(t, (k[0], 1), (s[0], 1), (p[0], 0), (dl[0], 1), ceil_mode, True))
    indices = _volume_indices(hw_index, d_index, x.shape, y.shape)
    return (y.squeeze(0), indices.squeeze(0)) if unbatched else (y, indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum over each kernel_size box of the last three dims; with return_indices, also its flat index in
    the input volume."""
    out = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


@overridable
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over each kernel_size box of the last three dims (divisor_override replaces the box's count)."""
    x, unbatched = _volumes(input, "non-empty 4D or 5D (batch mode) tensor expected for input")
    k, p = _triple(kernel_size, "kernel_size"), _triple(padding, "padding")
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else _triple(stride, "stride")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")

    def pooled(t, stage_divisor):
        y, _, _ = _separable(
            t, lambda t: avg_pool2d(t, k[1:], s[1:], p[1:], ceil_mode, count_include_pad, stage_divisor),
            lambda t: avg_pool2d(t, (k[0], 1), (s[0], 1), (p[0], 0), ceil_mode, count_include_pad, stage_divisor))
        return y
    if x.dtype.category <= dt.INTEGRAL:
        if x.dtype is not dt.int64:  # of the integer dtypes PyTorch's kernel takes int64 only
            raise NotImplementedError(f'"avg_pool3d_out_frame" not implemented for \'{x.dtype.legacy}\'')
        y = _integer_average(x, pooled, divisor_override)
    elif divisor_override is not None:  # the divisors of the two stages multiply to the box's; an override
        y = pooled(x, 1) / divisor_override  # divides the plain sum (stage divisors 1)
    else:
        y = pooled(x, None)
    return y.squeeze(0) if unbatched else y


def _integer_average(x, pooled, divisor_override):
    """Integer average pooling as PyTorch's kernels do it: the window's sum (in int64) divided by its count,
    truncated. The two stages' sums are exact; the count is read off the floating-point average."""
    total = pooled(x.to(dt.int64), 1)
    if divisor_override is not None:
        count = divisor_override
    else:
        mean = pooled(x.to(dt.float64), None)
        count = _op("where", mean != 0, (total.to(dt.float64) / mean).round(), 1.0).to(dt.int64)
    return total.div(count, rounding_mode="trunc").to(x.dtype)


def _adaptive_size(name, input, output_size, length_message):
    """output_size as three sizes (None keeps the input's), checked in PyTorch's order: the sequence against the
    input's dims, its length, then the input."""
    sizes = _output_size(input, output_size, 3)
    if len(sizes) != 3:
        raise RuntimeError(f"{name}{length_message}")
    return sizes


@overridable
def adaptive_avg_pool3d(input, output_size):
    """The mean over output_size adaptive windows of the last three dims (None keeps that dim's size)."""
    od, oh, ow = _adaptive_size("adaptive_avg_pool3d", input, output_size, ": output_size must be 3")
    x, unbatched = _volumes(input, "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got {shape}")
    y, _, _ = _separable(x, lambda t: adaptive_avg_pool2d(t, (oh, ow)),
                         lambda t: adaptive_avg_pool2d(t, (od, t.shape[-1])))
    return y.squeeze(0) if unbatched else y


@overridable
def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    od, oh, ow = _adaptive_size("adaptive_max_pool3d", input, output_size,
                                "(): internal error: output_size.size() must be 3")
    x, unbatched = _volumes(input, "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: {shape}")
    y, hw_index, d_index = _separable(x, lambda t: adaptive_max_pool2d(t, (oh, ow), True),
                                      lambda t: adaptive_max_pool2d(t, (od, t.shape[-1]), True))
    indices = _volume_indices(hw_index, d_index, x.shape, y.shape)
    return (y.squeeze(0), indices.squeeze(0)) if unbatched else (y, indices)


@overridable
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum over output_size adaptive windows of the last three dims; with return_indices, also its flat
    index in the input volume."""
    out = adaptive_max_pool3d_with_indices(input, output_size)
    return out if return_indices else out[0]


# ---- power-average pooling and max-unpooling --------------------------------------------------------------------

def _lp_pool(n, input, norm_type, kernel_size, stride, ceil_mode):
    """(sum over each window of x ** p) ** (1/p), as n-d average pooling times the window size; p = ±inf is the
    max (or min) of |x|."""
    max_pool = (max_pool1d, max_pool2d, max_pool3d)[n - 1]
    avg_pool = (avg_pool1d, avg_pool2d, avg_pool3d)[n - 1]
    if norm_type == float("inf"):
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    window = 1
    for k in ((kernel_size,) * n if isinstance(kernel_size, int) else kernel_size):
        window *= k
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(window).pow(1.0 / norm_type)


@overridable
def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of each window of the last dim."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


@overridable
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of each window of the last two dims."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


@overridable
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of each window of the last three dims."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def _unpool_output_size(input, kernel, stride, padding, output_size):
    n = len(kernel)
    default = [(input.shape[input.dim() - n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(n):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
    return output_size


def _max_unpool(n, input, indices, kernel_size, stride, padding, output_size):
    """Each input value written at its flat index into a zero (..., *output_size) tensor (max_pool's inverse)."""
    kernel = (kernel_size,) * n if isinstance(kernel_size, int) else tuple(kernel_size)
    stride = kernel if stride is None else ((stride,) * n if isinstance(stride, int) else tuple(stride))
    padding = (padding,) * n if isinstance(padding, int) else tuple(padding)
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"max_unpool{n}d: Expected {n + 1}D or {n + 2}D tensor for input, but got input of size "
                           f"{list(input.shape)}")
    if indices.shape != input.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    if indices.dtype != dt.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype.legacy}")
    plane = 1
    for s in size:
        plane *= s
    lead = tuple(input.shape[:input.dim() - n])
    flat_indices = indices.reshape(lead + (-1,))
    if flat_indices.numel() and (flat_indices.min() < 0 or flat_indices.max() >= plane):
        raise RuntimeError(f"Found an invalid max index: {int(flat_indices.max())} (output volumes are of size "
                           f"{'x'.join(map(str, size))}")
    out = input.new_zeros(lead + (plane,))
    return out.scatter(-1, flat_indices, input.reshape(lead + (-1,))).reshape(lead + tuple(size))


@overridable
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool1d: values back at their indices, zeros elsewhere."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


@overridable
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d: values back at their flat (H, W) indices, zeros elsewhere."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


@overridable
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d: values back at their flat (D, H, W) indices, zeros elsewhere."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


for _fn in (max_pool3d, rms_norm):
    composite(_fn.__name__, _fn, method=False)
