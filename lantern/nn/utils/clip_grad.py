"""Gradient clipping (torch.nn.utils.clip_grad): rescale or clamp the .grad of parameters in place.

clip_grad_norm_ is get_total_norm (the norm of all gradients taken as one vector) followed by
clip_grads_with_norm_ (every gradient times min(1, max_norm / (total + 1e-6))). It returns the total norm.

>>> import lantern
>>> from lantern.nn.utils import clip_grad_norm_, clip_grad_value_
>>> w = lantern.zeros(2, requires_grad=True)
>>> w.grad = lantern.tensor([3.0, 4.0])
>>> clip_grad_norm_([w], max_norm=1.0)
tensor(5.)
>>> [round(g, 4) for g in w.grad.tolist()]
[0.6, 0.8]
>>> clip_grad_value_(w, 0.7); [round(g, 4) for g in w.grad.tolist()]
[0.6, 0.7]
"""
import functools
import types

import lantern
from ...core import user_warnings

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grads_with_norm_", "clip_grad_value_", "get_total_norm"]


def _no_grad(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with lantern.no_grad():
            return fn(*args, **kwargs)
    return wrapper


def _on(t, device):
    """t moved to device, if it is elsewhere (a same-device .to() costs more than the test)."""
    return t if t.device == device else t.to(device)


def _as_list(tensors):
    return [tensors] if isinstance(tensors, lantern.Tensor) else list(tensors)


@_no_grad
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm_type-norm of all tensors taken together (the norm of their per-tensor norms), on the first's device.

    foreach is accepted for torch's signature; every device here takes the same path.
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return lantern.tensor(0.0)
    device = tensors[0].device
    norms = [_on(lantern.linalg.vector_norm(t, norm_type), device) for t in tensors]
    total = lantern.linalg.vector_norm(lantern.stack(norms), norm_type)
    if error_if_nonfinite and not bool(lantern.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total


@_no_grad
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale every parameter's grad in place by min(1, max_norm / (total_norm + 1e-6))."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(_on(coef, g.device))


@_no_grad
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Rescale the gradients so that their total norm is at most max_norm; returns the total norm (before)."""
    if isinstance(parameters, lantern.Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            user_warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of clip_grad_norm_ (warns)."""
    user_warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every parameter's grad in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
