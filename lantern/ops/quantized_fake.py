"""Fake quantization: a float tensor rounded onto a quantized grid and back, for quantization-aware training.

`fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max)` is
(clamp(round(x / scale) + zero_point, quant_min, quant_max) - zero_point) * scale, in x's dtype; its gradient is the
straight-through estimate: the incoming gradient where x landed inside [quant_min, quant_max], 0 where it was
clamped. The ops behind them (`*_cachemask`) return the output and that mask, which the backward reads, as torch's
do.

>>> x = lantern.tensor([-0.3, 0.26, 20.0], requires_grad=True)
>>> y = lantern.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127)
>>> y.sum().backward()
>>> y.detach(), x.grad
(tensor([-0.3000,  0.3000, 12.7000]), tensor([1., 1., 0.]))
"""
import numpy as np

from ..core import dtype as dt
from ..core.state import tls
from .derivative import derivative
from .dispatcher import call
from .quantized import choose_qparams
from .registry import composite, custom, get


def fake_quantize_array(x, scale, zero_point, quant_min, quant_max, per_channel):
    """(values, mask) of x on the grid, rounded as torch's kernels round: x * float32(1 / scale) in x's precision
    (float64 for float64 input, else float32; a float zero point added before rounding), and back as
    (q - zero_point) * scale in float32, or per channel in x's precision."""
    work = np.float64 if x.dtype == np.float64 else np.float32
    scale = np.asarray(scale, dtype=np.float32)
    inverse = (np.float32(1) / scale).astype(np.float32)
    zero_point = np.asarray(zero_point)
    with np.errstate(all="ignore"):
        if zero_point.dtype.kind == "f":
            rounded = np.rint((x.astype(work) * inverse + zero_point.astype(np.float32)).astype(work))
        else:
            rounded = np.rint((x.astype(work) * inverse).astype(work)) + zero_point
        mask = (rounded >= quant_min) & (rounded <= quant_max)
        back = work if per_channel else np.float32
        values = (np.clip(rounded, quant_min, quant_max) - zero_point).astype(back) * scale.astype(back)
    return values.astype(x.dtype), mask


def _check_range(x, zero_points, quant_min, quant_max):
    if x.dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"fake_quantize_tensor_cachemask_kernel_type_handling" not implemented for '
                                  f"'{x.dtype.legacy}'")
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")
    if any(not quant_min <= zp <= quant_max for zp in zero_points):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _outputs(backend, x, values, mask):
    out, kept = backend.empty(x._size, x.dtype), backend.empty(x._size, dt.bool)
    backend.array(out)[...] = values
    backend.array(kept)[...] = mask
    return out, kept


def _per_tensor_kernel(backend, x, scale, zero_point, quant_min, quant_max):
    _check_range(x, [zero_point], quant_min, quant_max)
    return _outputs(backend, x, *fake_quantize_array(backend.array(x), scale, zero_point, quant_min, quant_max,
                                                       per_channel=False))


def _per_tensor_meta(backend, x, scale, zero_point, quant_min, quant_max):
    _check_range(x, [zero_point], quant_min, quant_max)
    return backend.empty(x._size, x.dtype), backend.empty(x._size, dt.bool)


def _per_channel_kernel(backend, x, scale, zero_point, axis, quant_min, quant_max):
    values = _check_channels(x, scale, zero_point, axis, quant_min, quant_max)
    if values is None:
        return backend.empty(x._size, x.dtype), backend.empty(x._size, dt.bool)
    shape = [1] * x.dim()
    shape[axis % x.dim()] = -1
    scales = backend.array(scale).astype(np.float32).reshape(shape)
    zero_points = backend.array(zero_point).reshape(shape)
    return _outputs(backend, x, *fake_quantize_array(backend.array(x), scales, zero_points, quant_min, quant_max,
                                                     per_channel=True))


def _per_channel_meta(backend, x, scale, zero_point, axis, quant_min, quant_max):
    _check_channels(x, scale, zero_point, axis, quant_min, quant_max, meta=True)
    return backend.empty(x._size, x.dtype), backend.empty(x._size, dt.bool)


def _check_channels(x, scale, zero_point, axis, quant_min, quant_max, meta=False):
    """torch's checks, in its order; the zero points as a list (None on the meta device)."""
    if zero_point.dtype not in (dt.int32, dt.float32, dt.float16):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found {zero_point.dtype.legacy}")
    if scale.dim() != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.dim() != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.numel() != zero_point.numel():
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if scale.numel() != x.size(axis):
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input tensor")
    if meta:
        return None
    zero_points = zero_point.tolist()
    _check_range(x, [] if zero_point.dtype.is_floating_point else zero_points, quant_min, quant_max)
    return zero_points


custom("fake_quantize_per_tensor_affine_cachemask(Tensor self, float scale, int zero_point, int quant_min, "
       "int quant_max) -> (Tensor output, Tensor mask)", _per_tensor_kernel, _per_tensor_meta, method=False)
custom("fake_quantize_per_channel_affine_cachemask(Tensor self, Tensor scale, Tensor zero_point, int axis, "
       "int quant_min, int quant_max) -> (Tensor output, Tensor mask)", _per_channel_kernel, _per_channel_meta,
       method=False)
derivative("fake_quantize_per_tensor_affine_cachemask", self="grad * mask")
derivative("fake_quantize_per_channel_affine_cachemask", self="grad * mask")


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """x on the quantized grid of (scale, zero_point) and back, in x's dtype; gradient 1 inside the range, 0 where
    clamped. scale and zero_point may be one-element tensors."""
    scale = scale.item() if hasattr(scale, "item") else scale
    zero_point = int(zero_point.item()) if hasattr(zero_point, "item") else zero_point
    op = get("fake_quantize_per_tensor_affine_cachemask")
    return call(op, (input, float(scale), zero_point, quant_min, quant_max))[0]


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """Per channel along `axis`: scale (float) and zero_point (int32, or float) tensors, one entry per channel."""
    op = get("fake_quantize_per_channel_affine_cachemask")
    return call(op, (input, scale, zero_point, axis, quant_min, quant_max))[0]


composite("fake_quantize_per_tensor_affine", fake_quantize_per_tensor_affine, method=False)
composite("fake_quantize_per_channel_affine", fake_quantize_per_channel_affine, method=False)


# ---- the observer and fake quantization in one op (torch.ao's FusedMovingAvgObsFakeQuantize) -----------------------

def _moving_average(running, observed, averaging_const):
    """running += averaging_const * (observed - running); a running value still at ±inf takes the observation."""
    fresh = running.isinf()
    running.copy_(running.where(~fresh, observed) + (averaging_const * (observed - running)).where(~fresh, 0.0))


def _qparams(x_min, x_max, quant_min, quant_max, symmetric):
    """(scale, zero_point) of each (min, max) pair, as the observer chooses them (lantern.ops.quantized)."""
    pairs = [choose_qparams(lo, hi, quant_min, quant_max, False, symmetric)
             for lo, hi in zip(x_min.reshape(-1).tolist(), x_max.reshape(-1).tolist())]
    return [s for s, _ in pairs], [z for _, z in pairs]


def fused_moving_avg_obs_fake_quant(input, observer_on, fake_quant_on, running_min, running_max, scale, zero_point,
                                    averaging_const, quant_min, quant_max, ch_axis, per_row_fake_quant=False,
                                    symmetric_quant=False):
    """Observe input's range into running_min/running_max (a moving average; per row along ch_axis with
    per_row_fake_quant), choose scale and zero_point from it (both updated in place), and fake-quantize input with
    them. observer_on and fake_quant_on are one-element tensors switching each step."""
    enabled, tls.grad_enabled = tls.grad_enabled, False  # the observer's updates are not part of the graph
    try:
        if observer_on.item():
            if per_row_fake_quant:
                rows = input.detach().movedim(ch_axis, 0).reshape(input.size(ch_axis), -1)
                x_min, x_max = rows.amin(1), rows.amax(1)
            else:
                x_min, x_max = input.detach().min(), input.detach().max()
            _moving_average(running_min, x_min, averaging_const)
            _moving_average(running_max, x_max, averaging_const)
        fake_quantizing = bool(fake_quant_on.item())
        if fake_quantizing:
            scales, zero_points = _qparams(running_min, running_max, quant_min, quant_max, symmetric_quant)
            scale.copy_(scale.new_tensor(scales).reshape(scale.shape))
            zero_point.copy_(zero_point.new_tensor(zero_points).reshape(zero_point.shape))
    finally:
        tls.grad_enabled = enabled
    if not fake_quantizing:
        return input.clone()  # a new tensor, as torch's op returns
    if per_row_fake_quant:
        return fake_quantize_per_channel_affine(input, scale, zero_point, ch_axis, quant_min, quant_max)
    return fake_quantize_per_tensor_affine(input, scale.item(), int(zero_point.item()), quant_min, quant_max)


composite("fused_moving_avg_obs_fake_quant", fused_moving_avg_obs_fake_quant, method=False)
