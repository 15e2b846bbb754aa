"""torch.nn.functional's normalization: layer_norm, batch_norm, group_norm, instance_norm and normalize, with
their torch.<name> top-level forms. Op records with derivatives, plus the Python frontends.

- native_layer_norm's backward is one kernel from the saved mean and rstd (_layer_norm_input_backward), whose own
  derivative recomputes the statistics from the input (so it is differentiable again); native_batch_norm's backward
  formulas recompute them too; group_norm and instance_norm compose these.

>>> import lantern.nn.functional as F
>>> [round(v, 4) for v in F.layer_norm(lantern.tensor([1.0, 3.0]), (2,)).tolist()]
[-1.0, 1.0]
"""
import math

import numpy as np

from ..core import dtype as dt
from ..core import intra_op
from ..core.layout import channels_last, channels_last_3d, contiguous_format
from ..core.reference import mode, specialisation
from .derivative_specialisation import on_float_arrays, specialise_derivative
from .meta_util import shape_str
from .nn_common import _HALF, _op, _row_sums, _wide
from .numba_kernels import optional_kernels
from .pointwise_common import _require_tensor
from .registry import composite, custom, structured
from .derivative import derivative
from ..core.overridable import overridable

__all__ = [
    "layer_norm", "batch_norm", "group_norm", "instance_norm", "normalize",
]


# ---- normalization ---------------------------------------------------------------------------------------------

def _normalize_rows(xp, x, axes, eps):
    """(x - mean) / sqrt(var + eps) over `axes`, with the mean, the (biased) var and 1/sqrt(var + eps)."""
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    rstd = 1 / xp.sqrt(var + eps)
    return centered * rstd, mean, var, rstd


def _check_parameter_dtypes(name, input, **tensors):
    """PyTorch's CPU kernels take parameters (weight, bias, running statistics) of the input's dtype, or float32
    ones for a float16/bfloat16 input; anything else is a RuntimeError, not a silent cast."""
    params = [t for t in tensors.values() if t is not None]
    if all(t.dtype is input.dtype for t in params) or \
            (input.dtype in (dt.float16, dt.bfloat16) and all(t.dtype is dt.float32 for t in params)):
        return
    got = ", ".join(f"{n} {t.dtype}" for n, t in tensors.items() if t is not None)
    raise RuntimeError(f"mixed dtype (CPU): all inputs must share same datatype ({name}: input {input.dtype}, "
                       f"{got}; cast the parameters with .to({input.dtype}))")


def _layer_norm_shapes(input, normalized_shape, weight, bias):
    _require_tensor("layer_norm", input)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or input._size[input.dim() - k:] != normalized_shape or input.dim() < k:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
                           f"{shape_str(input._size)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._size != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{shape_str(t._size)} and normalized_shape = {shape_str(normalized_shape)}")
    _check_parameter_dtypes("layer_norm", input, weight=weight, bias=bias)
    if input.dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"LayerNormKernelImpl" not implemented for \'{input.dtype.legacy}\'')
    stats = input._size[:input.dim() - k] + (1,) * k
    return input._size, stats


def _rows(array, size):
    """array seen as (rows, size): the normalized dims flattened into one."""
    return array.reshape(-1, size)


def _compute_buffer(xp, out, shape):
    """out (a fresh contiguous output) seen as `shape` for kernels to write directly; for float16/bfloat16 outputs,
    a float32 buffer to compute in."""
    if out.dtype in _HALF:
        return xp.empty(shape, np.float32)
    return out.reshape(shape)


def _round_into_half(xp, pairs):
    """For (output, buffer) pairs of _compute_buffer: the float32 buffers of float16/bfloat16 outputs rounded into
    them (the others are the outputs themselves)."""
    for target, value in pairs:
        if target.dtype in _HALF:
            xp.copyto(target, value.reshape(target.shape), casting="unsafe")


_BLOCK = 1 << 16  # elements per block of rows: a block's arrays stay in the L2 cache between passes


def _row_blocks(rows, size):
    """Slices covering range(rows) in blocks of about _BLOCK elements."""
    step = max(1, _BLOCK // max(size, 1))
    return [slice(start, start + step) for start in range(0, rows, step)]

# Passes a layer norm kernel, forward or backward, makes over each element: what a row of it costs.
_PASSES = 6


def _by_rows(rows, size, kernel):
    """kernel(block) for blocks of rows (slices), on the intra-op threads where that pays: each row's statistics
    are its own, so any split gives the bits of one call."""
    intra_op.parallel_chunks(rows, lambda start, stop: kernel(slice(start, stop)),
                             grain=intra_op.grain(_PASSES * size))


def _layer_norm_rows(xp, y, x, weight, bias, eps, mean, rstd):
    """y = (x - mean) * rstd * weight + bias for each row of the 2-D x, written into y; each row's mean and rstd
    written into the (rows, 1) arrays mean and rstd."""
    size = x.shape[1]
    xp.divide(_row_sums(xp, x), size, out=mean)
    xp.subtract(x, mean, out=y)
    xp.divide(xp.einsum("ij,ij->i", y, y)[:, None], size, out=rstd)  # the sum of squares with no squared temporary
    rstd += eps
    xp.reciprocal(xp.sqrt(rstd, out=rstd), out=rstd)
    y *= rstd
    if weight is not None:
        y *= weight
    if bias is not None:
        y += bias


def _compiled_kernels():
    """lantern.ops.nn_norm_numba, or None without numba (numba_kernels.py)."""
    return optional_kernels("nn_norm_numba")


def compiled_rows_apply(xp, *arrays):
    """Whether the compiled layer norm kernels serve these arrays (None for an absent weight): float32 or float64
    NumPy arrays of one dtype, numba installed, and not reference mode."""
    present = [a for a in arrays if a is not None]
    dtype = present[0].dtype
    return (mode.fast and xp is np and dtype in (np.float32, np.float64) and all(a.dtype == dtype for a in present)
            and _compiled_kernels() is not None)


def _compiled_on(backend):
    """Whether the compiled kernels serve this backend's arrays: NumPy's, numba installed (the derivatives' guards,
    whose tensors on_float_arrays has checked)."""
    return backend.xp is np and _compiled_kernels() is not None


@specialisation(replaces="nn_norm._layer_norm_rows (six NumPy passes over the rows)",
                when="compiled_rows_apply(xp, x, y, weight, bias): float32/float64 NumPy arrays of one dtype, numba "
                     "installed",
                parity_test="tests/test_nn_norm_compiled.py::test_compiled_forward_matches_numpy",
                ops=("native_layer_norm",))
def _layer_norm_rows_compiled(xp, y, x, weight, bias, eps, mean, rstd):
    """_layer_norm_rows in one numba loop per row (nn_norm_numba.layer_norm_rows)."""
    _compiled_kernels().layer_norm_rows(x, weight, bias, eps, y, mean, rstd)


def _flat_parameter(backend, t):
    """The 1-D array of a weight or bias (None for None), widened as _wide does."""
    return None if t is None else _wide(backend.array(t)).reshape(-1)


def _native_layer_norm(backend, input, normalized_shape, weight, bias, eps):
    shape, stats = _layer_norm_shapes(input, normalized_shape, weight, bias)
    out = backend.empty(shape, input.dtype)
    mean, rstd = backend.empty(stats, input.dtype), backend.empty(stats, input.dtype)
    if backend.xp is None or input.numel() == 0:
        return out, mean, rstd
    xp = backend.xp
    size = math.prod(normalized_shape)
    x = _rows(_wide(backend.array(input)), size)
    w, b = _flat_parameter(backend, weight), _flat_parameter(backend, bias)
    y = _compute_buffer(xp, backend.array(out), x.shape)
    m = _compute_buffer(xp, backend.array(mean), (len(x), 1))
    r = _compute_buffer(xp, backend.array(rstd), (len(x), 1))
    rows = _layer_norm_rows_compiled if compiled_rows_apply(xp, x, y, w, b) else _layer_norm_rows
    _by_rows(len(x), size, lambda block: rows(xp, y[block], x[block], w, b, eps, m[block], r[block]))
    _round_into_half(xp, ((backend.array(out), y), (backend.array(mean), m), (backend.array(rstd), r)))
    return out, mean, rstd


custom("native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> "
       "(Tensor, Tensor, Tensor)", _native_layer_norm, _native_layer_norm)


def _layer_norm_backward_meta(grad_out, input, normalized_shape, mean, rstd, weight, eps):
    if grad_out._size != input._size:
        raise RuntimeError(f"_layer_norm_input_backward: grad_out of shape {shape_str(grad_out._size)} does not "
                           f"match the input's shape {shape_str(input._size)}")
    return input._size, input.dtype


def _layer_norm_backward_impl(xp, out, dtype, grad_out, input, normalized_shape, mean, rstd, weight, eps):
    """rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, g = grad_out * weight, from the saved mean and rstd
    (eps is unused here: the derivative recomputes the statistics)."""
    if out.size == 0:
        return
    size = math.prod(normalized_shape)
    x = _rows(_wide(input), size)
    m, r = _wide(mean).reshape(-1, 1), _wide(rstd).reshape(-1, 1)
    g = _rows(_wide(grad_out), size)
    w = None if weight is None else _wide(weight).reshape(-1)
    result = _compute_buffer(xp, out, x.shape)
    rows = _layer_norm_backward_rows_compiled if compiled_rows_apply(xp, x, g, m, w) else _layer_norm_backward_rows
    _by_rows(len(x), size, lambda block: rows(xp, result[block], g[block], x[block], m[block], r[block], w))
    _round_into_half(xp, ((out, result),))


def _layer_norm_backward_rows(xp, result, g, x, m, r, weight):
    """The input gradient of the rows of x into result. As PyTorch's CPU kernel: rstd * g + c1 * x + c0 with
    per-row c1, c0 from Σ g and Σ g x. g lives in the result buffer and the last passes run a block of rows at a
    time through one small temporary: a full-size one would cost more in fresh pages than in arithmetic."""
    size = x.shape[1]
    if weight is not None:
        g = xp.multiply(g, weight, out=result)
    total = _row_sums(xp, g)
    c1 = (total * m - xp.einsum("ij,ij->i", g, x)[:, None]) * (r * r * r / size)
    c0 = -c1 * m - total * (r / size)
    scratch = xp.empty((min(len(x), max(1, _BLOCK // size)), size), x.dtype)
    for rows in _row_blocks(len(x), size):
        block = result[rows]
        xp.multiply(g[rows], r[rows], out=block)
        block += xp.multiply(x[rows], c1[rows], out=scratch[:len(block)])
        block += c0[rows]


@specialisation(replaces="nn_norm._layer_norm_backward_rows (seven NumPy passes over the rows)",
                when="compiled_rows_apply(xp, x, g, mean, weight): float32/float64 NumPy arrays of one dtype, numba "
                     "installed",
                parity_test="tests/test_nn_norm_compiled.py::test_compiled_input_backward_matches_numpy",
                ops=("_layer_norm_input_backward", "native_layer_norm"))
def _layer_norm_backward_rows_compiled(xp, result, g, x, m, r, weight):
    """_layer_norm_backward_rows in one numba loop per row (nn_norm_numba.layer_norm_input_backward_rows)."""
    _compiled_kernels().layer_norm_input_backward_rows(g, x, m, r, weight, result)


structured("_layer_norm_input_backward(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor mean, "
           "Tensor rstd, Tensor? weight, float eps) -> Tensor", _layer_norm_backward_meta, _layer_norm_backward_impl,
           inplace=False, out=False)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """torch.native_layer_norm: (output, mean, rstd), the statistics shaped to broadcast against the input and,
    as in PyTorch, carrying no gradient.

    >>> [t.shape for t in lantern.native_layer_norm(lantern.ones(2, 3), [3], None, None, 1e-5)]
    [lantern.Size([2, 3]), lantern.Size([2, 1]), lantern.Size([2, 1])]
    """
    out, mean, rstd = _op("native_layer_norm", input, tuple(normalized_shape), weight, bias, eps)
    return out, mean.detach(), rstd.detach()


composite("native_layer_norm", native_layer_norm, method=False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last len(normalized_shape) dims, then scale by weight and shift by bias."""
    if not isinstance(normalized_shape, (list, tuple)):
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    return _op("native_layer_norm", input, tuple(normalized_shape), weight, bias, eps)[0]


def _batch_norm_check(input, weight, bias, running_mean, running_var, training):
    _require_tensor("batch_norm", input)
    channels = input._size[1] if input.dim() > 1 else 0  # PyTorch reads a 1-D or 0-d input's size(1) as 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()} (batch_norm of input "
                               f"shape {shape_str(input._size)}: the input is (N, C, ...))")
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got 1) (batch_norm: "
                         f"input is (N, C, ...), got {input.dim()}-D)")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    if input.dtype.category != dt.FLOATING:  # the input's dtype before the parameters', as in PyTorch
        raise NotImplementedError(f'"batch_norm_cpu" not implemented for \'{input.dtype.legacy}\'')
    _check_parameter_dtypes("batch_norm", input, weight=weight, bias=bias, running_mean=running_mean,
                            running_var=running_var)


def _native_batch_norm(backend, input, weight, bias, running_mean, running_var, training, momentum, eps):
    _batch_norm_check(input, weight, bias, running_mean, running_var, training)
    channels = input._size[1]
    out = backend.empty(input._size, input.dtype)
    # the statistics used, for backward: the batch's when training, the running ones in evaluation (where PyTorch
    # returns empty tensors; saving them keeps running_mean/var out of the graph, free to be updated again)
    save_mean, save_rstd = (backend.empty((channels,), input.dtype) for _ in range(2))
    if backend.xp is None:
        return out, save_mean, save_rstd
    xp = backend.xp
    x = _wide(backend.array(input))
    axes = (0,) + tuple(range(2, x.ndim))
    per_channel = (1, channels) + (1,) * (x.ndim - 2)
    if training:
        count = x.size // channels
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{shape_str(input._size)}")
        y, m, v, r = _normalize_rows(xp, x, axes, eps)
        _update_running_stats(backend, running_mean, running_var, m.reshape(-1), v.reshape(-1), count, momentum)
    else:
        m = _wide(backend.array(running_mean)).reshape(per_channel)
        r = 1 / xp.sqrt(_wide(backend.array(running_var)).reshape(per_channel) + eps)
        y = (x - m) * r
    xp.copyto(backend.array(save_mean), m.reshape(-1), casting="unsafe")
    xp.copyto(backend.array(save_rstd), r.reshape(-1), casting="unsafe")
    if weight is not None:
        y = y * _wide(backend.array(weight)).reshape(per_channel)
    if bias is not None:
        y = y + _wide(backend.array(bias)).reshape(per_channel)
    xp.copyto(backend.array(out), y, casting="unsafe")
    return out, save_mean, save_rstd


def _update_running_stats(backend, running_mean, running_var, mean, biased_var, count, momentum):
    """running = (1 - momentum) * running + momentum * batch statistic (the variance unbiased), in place."""
    if running_mean is not None:
        rm = backend.array(running_mean)
        backend.xp.copyto(rm, (1 - momentum) * rm + momentum * mean, casting="unsafe")
        running_mean._bump_version()
    if running_var is not None:
        rv = backend.array(running_var)
        backend.xp.copyto(rv, (1 - momentum) * rv + momentum * biased_var * count / (count - 1), casting="unsafe")
        running_var._bump_version()


custom("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
       "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", _native_batch_norm,
       _native_batch_norm)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """torch.native_batch_norm: (output, save_mean, save_invstd) as PyTorch returns them: the statistics carry no
    gradient, and in evaluation they are empty (the op's record keeps the running ones for its backward)."""
    out, mean, rstd = _op("native_batch_norm", input, weight, bias, running_mean, running_var, training, momentum,
                          eps)
    if not training:
        return out, mean.new_empty((0,)), rstd.new_empty((0,))
    return out, mean.detach(), rstd.detach()


composite("native_batch_norm", native_batch_norm, method=False)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) by the batch's statistics when training (updating the running ones in
    place), or by running_mean/running_var in evaluation."""
    _require_tensor("batch_norm", input)
    if input.numel() == 0:  # PyTorch returns a clone at once, checking nothing else
        return input.clone()
    return _op("native_batch_norm", input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def _channel_affine(y, weight, bias):
    shape = (1, y._size[1]) + (1,) * (y.dim() - 2)
    if weight is not None:
        y = y * weight.view(shape)
    if bias is not None:
        y = y + bias.view(shape)
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each group of num_groups channel groups over its channels and spatial dims, then the per-channel
    affine."""
    _require_tensor("group_norm", input)
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, channels = input._size[:2]
    per_group = [n * channels // num_groups, num_groups, *input._size[2:]]  # as PyTorch's F.group_norm checks it
    if math.prod(per_group[:1] + per_group[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {per_group}")
    if channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {shape_str(input._size)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {shape_str(t._size)} and input of shape "
                               f"{shape_str(input._size)}")
    grouped = input.reshape(n, num_groups, channels // num_groups * math.prod(input._size[2:]))  # no -1: n may be 0
    y = _op("native_layer_norm", grouped, (grouped._size[-1],), None, None, eps)[0].reshape(input._size)
    return _channel_affine(y, weight, bias)


# the layouts PyTorch's group norm kernel reads its input in, by the input's number of dims (others: contiguous)
_GROUP_NORM_LAYOUTS = {4: (contiguous_format, channels_last), 5: (contiguous_format, channels_last_3d)}


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """torch.native_group_norm: (output, mean, rstd) of input (N, C, *) normalised over each of `group` channel
    groups, the statistics (N, group). Composed of lantern ops, so all three outputs are differentiable, as in
    PyTorch.

    >>> [t.shape for t in lantern.native_group_norm(lantern.ones(2, 4, 3), None, None, 2, 4, 3, 2, 1e-5)]
    [lantern.Size([2, 4, 3]), lantern.Size([2, 2]), lantern.Size([2, 2])]
    """
    _require_tensor("native_group_norm", input)
    if group <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {group}")
    if C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {shape_str(input._size)} and num_groups={group}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {shape_str(t._size)} and input of shape "
                               f"{shape_str(input._size)}")
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected X.numel() == N * C * HxW to be true, but got false (native_group_norm: input "
                           f"of size {shape_str(input._size)}, N={N}, C={C}, HxW={HxW})")
    layouts = [layout for layout in _GROUP_NORM_LAYOUTS.get(input.dim(), (contiguous_format,))
               if input.is_contiguous(memory_format=layout)]
    if not layouts:
        raise RuntimeError("Expected X.is_contiguous(memory_format) to be true, but got false (native_group_norm "
                           "reads its input in place: pass input.contiguous())")
    _check_parameter_dtypes("group_norm", input, weight=weight, bias=bias)
    if input.dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"GroupNormKernelImpl" not implemented for \'{input.dtype.legacy}\'')
    groups = input.reshape(N, group, C // group * HxW)
    mean = groups.mean(-1)
    rstd = (groups.var(-1, correction=0) + eps).rsqrt()  # a negative eps may leave a negative square: nan, as torch
    y = ((groups - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)).reshape(input._size)
    if weight is not None or bias is not None:
        y = _channel_affine(y.reshape(N, C, HxW), weight, bias).reshape(input._size)
    return y.contiguous(memory_format=layouts[0]), mean, rstd  # in the input's layout, as PyTorch's output


composite("native_group_norm", native_group_norm, method=False)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial dims; running stats, when given, are updated with the
    mean over the batch of the instances' statistics."""
    _require_tensor("instance_norm", input)
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or more input (got {input.dim()}D input) (instance_norm: (N, C, ...))")
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    n, channels = input._size[:2]
    flat = input.reshape(n, channels, -1)
    if flat._size[-1] <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{shape_str(input._size)}")
    if running_mean is not None or running_var is not None:
        rm = None if running_mean is None else running_mean.repeat(n)
        rv = None if running_var is None else running_var.repeat(n)
        y = batch_norm(flat.reshape(1, n * channels, -1), rm, rv, None, None, True, momentum, eps)
        _fold_running_stats(running_mean, rm, running_var, rv, n, channels)
        return _channel_affine(y.reshape(input._size), weight, bias)
    y = _op("native_layer_norm", flat, (flat._size[-1],), None, None, eps)[0].reshape(input._size)
    return _channel_affine(y, weight, bias)


def _fold_running_stats(running_mean, rm, running_var, rv, n, channels):
    """Per-instance running stats (n * channels) averaged back into the per-channel buffers, in place."""
    from ..autograd.grad_mode import no_grad
    with no_grad():
        for buffer, expanded in ((running_mean, rm), (running_var, rv)):
            if buffer is not None:
                buffer.copy_(expanded.view(n, channels).mean(0))


@overridable
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(‖input‖_p along dim, eps)."""
    norm = _op("linalg_vector_norm", input, p, [dim], True, None).clamp(min=eps).expand_as(input)
    if out is None:
        return input / norm
    return _op("div.out", input, norm, None, out)


def _top_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return layer_norm(input, normalized_shape, weight, bias, eps)


def _top_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _top_group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(input, num_groups, weight, bias, eps)


def _top_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                       cudnn_enabled):
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


for _name, _fn in (("layer_norm", _top_layer_norm), ("batch_norm", _top_batch_norm), ("group_norm", _top_group_norm),
                   ("instance_norm", _top_instance_norm)):
    composite(_name, _fn, method=False)

# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

def _standardized(input, dims, eps):
    """((input - mean) * rstd, rstd) over dims, recomputed from input so that double backward sees through them."""
    centered = input - input.mean(dims, True)
    rstd = ((centered * centered).mean(dims, True) + eps).rsqrt()
    return centered * rstd, rstd


def _normalization_input_grad(g, xhat, rstd, dims):
    """The gradient through (x - mean(x)) / std(x) over dims, for g the gradient of the standardized values."""
    return rstd * (g - g.mean(dims, True) - xhat * (g * xhat).mean(dims, True))


def _layer_dims(input, normalized_shape):
    return tuple(range(input.dim() - len(normalized_shape), input.dim()))


def _layer_norm_input_grad(grad, input, normalized_shape, weight, eps, mean, rstd):
    if grad is None:  # only the mean / rstd outputs were used: PyTorch gives them no gradient either
        return None
    return _op("_layer_norm_input_backward", grad, input, tuple(normalized_shape), mean, rstd, weight, eps)


def _layer_norm_backward_grad_out(grad, input, normalized_shape, mean, rstd, weight, eps):
    """The input gradient is linear in g = grad_out * weight through a symmetric map: its adjoint is itself."""
    projected = _op("_layer_norm_input_backward", grad, input, tuple(normalized_shape), mean, rstd, None, eps)
    return projected if weight is None else projected * weight


def _layer_norm_backward_weight(grad, grad_out, input, normalized_shape, mean, rstd, eps):
    return grad_out * _op("_layer_norm_input_backward", grad, input, tuple(normalized_shape), mean, rstd, None, eps)


def _layer_norm_backward_input(grad, grad_out, input, normalized_shape, weight, eps):
    """d/dx of <v, dx> with v = grad, for dx = r (g - mean(g) - xhat mean(g xhat)), xhat and r functions of x:
    -r² (xhat (mean(vg) - mean(g) mean(v) - 3 mean(g xhat) mean(v xhat)) + (g - mean(g)) mean(v xhat)
    + mean(g xhat) (v - mean(v))), recomputed from input so that it differentiates again."""
    dims = _layer_dims(input, normalized_shape)
    xhat, rstd = _standardized(input, dims, eps)
    g = grad_out if weight is None else grad_out * weight
    g_mean, v_mean = g.mean(dims, True), grad.mean(dims, True)
    gx, vx = (g * xhat).mean(dims, True), (grad * xhat).mean(dims, True)
    inner = xhat * ((grad * g).mean(dims, True) - g_mean * v_mean - 3 * gx * vx) + (g - g_mean) * vx
    return -(rstd * rstd) * (inner + gx * (grad - v_mean))


def _layer_norm_bias_grad(grad, normalized_shape):
    """grad summed over the dims before the normalized ones: the bias's gradient."""
    leading = tuple(range(grad.dim() - len(normalized_shape)))
    return grad.sum(leading) if leading else grad


def _layer_norm_weight_grad(grad, input, normalized_shape, eps):
    if grad is None:
        return None
    return grad * _standardized(input, _layer_dims(input, normalized_shape), eps)[0]


def _channel_dims(input):
    return (0,) + tuple(range(2, input.dim())), (1, input._size[1]) + (1,) * (input.dim() - 2)


def _batch_norm_xhat(input, mean, rstd, training, eps):
    """(standardized input, rstd): the batch's statistics recomputed from input when training; in evaluation the
    running ones the forward saved (its outputs 1 and 2), constants with respect to input."""
    dims, shape = _channel_dims(input)
    if training:
        return _standardized(input, dims, eps)
    rstd = rstd.view(shape)
    return (input - mean.view(shape)) * rstd, rstd


def _batch_norm_input_grad(grad, input, weight, mean, rstd, training, eps):
    if grad is None:  # only the saved statistics (outputs 1, 2) were used: they carry no gradient to the input
        return None
    dims, shape = _channel_dims(input)
    g = grad if weight is None else grad * weight.view(shape)
    xhat, rstd = _batch_norm_xhat(input, mean, rstd, training, eps)
    return _normalization_input_grad(g, xhat, rstd, dims) if training else g * rstd


def _batch_norm_weight_grad(grad, input, mean, rstd, training, eps):
    if grad is None:
        return None
    return (grad * _batch_norm_xhat(input, mean, rstd, training, eps)[0]).sum(_channel_dims(input)[0])


def weight_grad_from_statistics(grad, input, mean, rstd):
    """Whether layer_norm_weight_grad_on_arrays serves: a gradient, the forward's mean and rstd saved (they are when
    the input needs a gradient too), float32/float64 tensors of one dtype on NumPy, numba installed."""
    return (grad is not None and mean is not None and on_float_arrays(grad, input, mean, rstd)
            and _compiled_on(grad._backend))


@specialisation(replaces="native_layer_norm's weight derivative _layer_norm_weight_grad (the statistics recomputed "
                         "from the input in lantern ops, then the product summed)",
                when="backward without create_graph, fast paths on; weight_grad_from_statistics(grad, input, mean, "
                     "rstd)",
                parity_test="tests/test_nn_norm_compiled.py::test_weight_grad_on_arrays_matches_formula",
                ops=("native_layer_norm",))
def layer_norm_weight_grad_on_arrays(grad, input, normalized_shape, mean, rstd):
    """Σ over the rows of grad * (input - mean) * rstd from the saved statistics, in one numba loop
    (nn_norm_numba.layer_norm_weight_backward)."""
    backend = grad._backend
    size = math.prod(normalized_shape)
    out = backend.empty(tuple(normalized_shape), grad.dtype)
    rows = [backend.array(t).reshape(-1, n) for t, n in ((grad, size), (input, size), (mean, 1), (rstd, 1))]
    _compiled_kernels().layer_norm_weight_backward(*rows, backend.array(out).reshape(-1))
    return out


def input_grad_from_statistics(grad, input, weight, mean, rstd):
    """Whether layer_norm_input_grad_on_arrays serves: a gradient, float32/float64 tensors of one dtype on NumPy
    (the weight too, where there is one), numba installed."""
    tensors = [t for t in (grad, input, mean, rstd, weight) if t is not None]
    return grad is not None and on_float_arrays(*tensors) and _compiled_on(grad._backend)


@specialisation(replaces="native_layer_norm's input derivative _layer_norm_input_grad (the "
                         "_layer_norm_input_backward op through the dispatcher)",
                when="backward without create_graph, fast paths on; input_grad_from_statistics(grad, input, weight, "
                     "mean, rstd): the op's compiled rows serve",
                parity_test="tests/test_nn_norm_compiled.py::test_input_and_bias_grads_on_arrays_match_formulas",
                ops=("native_layer_norm",))
def layer_norm_input_grad_on_arrays(grad, input, normalized_shape, weight, mean, rstd):
    """The _layer_norm_input_backward op's array kernel (_layer_norm_backward_impl, compiled rows on the intra-op
    threads) called directly, without a dispatch."""
    backend = grad._backend
    out = backend.empty(input._size, grad.dtype)
    w = None if weight is None else backend.array(weight)
    _layer_norm_backward_impl(backend.xp, backend.array(out), grad.dtype, backend.array(grad), backend.array(input),
                              normalized_shape, backend.array(mean), backend.array(rstd), w, None)
    return out


def bias_grad_on_arrays_applies(grad):
    """Whether layer_norm_bias_grad_on_arrays serves: a float32/float64 gradient on NumPy, numba installed."""
    return grad is not None and on_float_arrays(grad) and _compiled_on(grad._backend)


@specialisation(replaces="native_layer_norm's bias derivative _layer_norm_bias_grad (a dispatched sum over the "
                         "leading dims)",
                when="backward without create_graph, fast paths on; bias_grad_on_arrays_applies(grad)",
                parity_test="tests/test_nn_norm_compiled.py::test_input_and_bias_grads_on_arrays_match_formulas",
                ops=("native_layer_norm",))
def layer_norm_bias_grad_on_arrays(grad, normalized_shape):
    """The column sums of grad seen as rows of the normalized shape, in one numba loop
    (nn_norm_numba.column_sums)."""
    backend = grad._backend
    out = backend.empty(tuple(normalized_shape), grad.dtype)
    size = math.prod(normalized_shape)
    _compiled_kernels().column_sums(backend.array(grad).reshape(-1, size), backend.array(out).reshape(-1))
    return out


_HELPERS = {name: globals()[name] for name in (
    "_layer_norm_input_grad", "_layer_norm_weight_grad", "_layer_norm_bias_grad", "_layer_norm_backward_grad_out",
    "_layer_norm_backward_weight", "_layer_norm_backward_input", "_batch_norm_input_grad",
    "_batch_norm_weight_grad", "_channel_dims",
)}

derivative("native_layer_norm", input="_layer_norm_input_grad(grad, input, normalized_shape, weight, eps, result1, result2)",
           weight="_layer_norm_weight_grad(grad, input, normalized_shape, eps)",
           bias="_layer_norm_bias_grad(grad, normalized_shape)", helpers=_HELPERS)
specialise_derivative("native_layer_norm", {
    "_layer_norm_input_grad(grad, input, normalized_shape, weight, eps, result1, result2)": (
        "layer_norm_input_grad_on_arrays(grad, input, normalized_shape, weight, result1, result2)",
        "input_grad_from_statistics(grad, input, weight, result1, result2)"),
    "_layer_norm_weight_grad(grad, input, normalized_shape, eps)": (
        "layer_norm_weight_grad_on_arrays(grad, input, normalized_shape, result1, result2)",
        "weight_grad_from_statistics(grad, input, result1, result2)"),
    "_layer_norm_bias_grad(grad, normalized_shape)": (
        "layer_norm_bias_grad_on_arrays(grad, normalized_shape)", "bias_grad_on_arrays_applies(grad)"),
}, helpers=dict(_HELPERS, **{f.__name__: f for f in (
    layer_norm_input_grad_on_arrays, input_grad_from_statistics, layer_norm_weight_grad_on_arrays,
    weight_grad_from_statistics, layer_norm_bias_grad_on_arrays, bias_grad_on_arrays_applies)}))
derivative("_layer_norm_input_backward",
           grad_out="_layer_norm_backward_grad_out(grad, input, normalized_shape, mean, rstd, weight, eps)",
           input="_layer_norm_backward_input(grad, grad_out, input, normalized_shape, weight, eps)",
           weight="_layer_norm_backward_weight(grad, grad_out, input, normalized_shape, mean, rstd, eps)",
           helpers=_HELPERS)
derivative("native_batch_norm",
           input="_batch_norm_input_grad(grad, input, weight, result1, result2, training, eps)",
           weight="_batch_norm_weight_grad(grad, input, result1, result2, training, eps)",
           bias="None if grad is None else grad.sum(_channel_dims(grad)[0])", helpers=_HELPERS)
