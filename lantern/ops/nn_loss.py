"""torch.nn.functional's losses, and the helpers they share (reduction= and the legacy size_average/reduce
arguments). This module holds the regression losses: mse, l1, smooth_l1, huber (kernels in their stable forms, with
derivatives), kl_div, poisson_nll and gaussian_nll (composites, as in PyTorch). The classification losses live in
nn_loss_classification, the margin and embedding losses in nn_loss_margin; lantern.nn.functional exports them all.

>>> import lantern.nn.functional as F
>>> x, t = lantern.tensor([1.0, 2.0, 4.0]), lantern.tensor([1.0, 1.0, 1.0])
>>> F.mse_loss(x, t).item(), F.l1_loss(x, t, reduction="sum").item(), F.smooth_l1_loss(x, t).tolist()
(3.3333332538604736, 4.0, 1.0)
"""
import math

from ..core import dtype as dt
from .meta_util import pointwise_binary
from .nn_common import _op, _where, _wide
from .pointwise_common import _require_tensor
from .registry import composite, structured
from .tensor_shape import broadcast_tensors
from .derivative import derivative
from ..core.overridable import overridable
from ..core import user_warnings


__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
]


# ---- losses ------------------------------------------------------------------------------------------------

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction_enum(reduction, size_average=None, reduce=None):
    """'none'/'mean'/'sum' as the int the ops take; the legacy size_average/reduce flags win when given."""
    if size_average is not None or reduce is not None:
        user_warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                      f"{_legacy_reduction(size_average, reduce)}' instead.", UserWarning, stacklevel=3)
        reduction = _legacy_reduction(size_average, reduce)
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def _reduce_into(xp, out, losses, reduction):
    """Write the per-element losses, their mean (nan when empty, as in PyTorch) or their sum into out."""
    if reduction == 0:
        xp.copyto(out, losses.reshape(out.shape), casting="unsafe")
    else:
        total = losses.sum()
        out[...] = total / losses.size if reduction == 1 else total


def _pair_loss_meta(name):
    """(shape, dtype) of an elementwise loss of self against target (broadcast), reduced or not."""
    def meta(self, target, reduction=1, *params):
        _require_tensor(name, self)
        _require_tensor(name, target, 2, "target")
        shape, dtype = pointwise_binary(self, target)
        if dtype.category != dt.FLOATING:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{dtype.legacy}\'')
        return shape if reduction == 0 else (), dtype
    return meta


def _pair_loss(fn):
    def impl(xp, out, dtype, self, target, reduction=1, *params):
        diff = _wide(self.astype(dtype, copy=False)) - _wide(target.astype(dtype, copy=False))
        _reduce_into(xp, out, fn(xp, diff, *params), reduction)
    impl.__name__ = fn.__name__
    return impl


def _mse(xp, d):
    return d * d


def _smooth_l1(xp, d, beta=1.0):
    a = xp.abs(d)
    return xp.where(a < beta, 0.5 * d * d / (beta if beta else 1), a - 0.5 * beta)


def _huber(xp, d, delta=1.0):
    a = xp.abs(d)
    return xp.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


structured("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", _pair_loss_meta("mse"),
           _pair_loss(_mse), inplace=False, out=False, method=False)
structured("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.0) -> Tensor",
           _pair_loss_meta("smooth_l1"), _pair_loss(_smooth_l1), inplace=False, out=False, method=False)
structured("huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.0) -> Tensor",
           _pair_loss_meta("huber"), _pair_loss(_huber), inplace=False, out=False, method=False)


def _loss_grad(grad, values, reduction):
    """The gradient of a reduced (or not) loss whose per-element derivatives are `values`."""
    return grad * values / values.numel() if reduction == 1 else grad * values


def _smooth_l1_grad(grad, self, target, reduction, beta):
    d = self - target
    return _loss_grad(grad, d.sign() if beta == 0 else (d / beta).clamp(-1, 1), reduction)


_HELPERS = {f.__name__: f for f in (_loss_grad, _smooth_l1_grad)}

derivative("mse_loss", self="_loss_grad(grad, (self - target) * 2, reduction)",
           target="_loss_grad(grad, (target - self) * 2, reduction)", helpers=_HELPERS)
derivative("smooth_l1_loss", self="_smooth_l1_grad(grad, self, target, reduction, beta)",
           target="_smooth_l1_grad(grad, target, self, reduction, beta)", helpers=_HELPERS)
derivative("huber_loss", self="_loss_grad(grad, (self - target).clamp(-delta, delta), reduction)",
           target="_loss_grad(grad, (target - self).clamp(-delta, delta), reduction)", helpers=_HELPERS)


def _apply_reduction(losses, reduction):
    return losses if reduction == 0 else losses.mean() if reduction == 1 else losses.sum()


def _broadcast_pair(name, input, target):
    """input and target broadcast to one shape, with PyTorch's warning when they differ. Broadcast first, as
    PyTorch's functional losses do, a 0-d operand no longer promotes as a scalar would (float32 input, 0-d float64
    target: a float64 loss)."""
    if input.shape == target.shape:
        return input, target
    user_warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                  "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                  "same size.", UserWarning, stacklevel=3)
    return broadcast_tensors(input, target)


@overridable
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean (or sum, or each) of the squared differences."""
    input, target = _broadcast_pair("mse_loss", input, target)
    reduction = _reduction_enum(reduction, size_average, reduce)
    if weight is not None:
        return _apply_reduction(_op("mse_loss", input, target, 0) * weight, reduction)
    return _op("mse_loss", input, target, reduction)


@overridable
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean (or sum, or each) of the absolute differences (a composite in PyTorch too)."""
    input, target = _broadcast_pair("l1_loss", input, target)
    losses = (input - target).abs()
    if weight is not None:
        losses = losses * weight
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


@overridable
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d² / beta where |d| < beta, else |d| - 0.5 beta; beta=0 is the L1 loss."""
    input, target = _broadcast_pair("smooth_l1_loss", input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction=_legacy_or(reduction, size_average, reduce))
    return _op("smooth_l1_loss", input, target, _reduction_enum(reduction, size_average, reduce), float(beta))


def _legacy_or(reduction, size_average, reduce):
    return reduction if size_average is None and reduce is None else _legacy_reduction(size_average, reduce)


@overridable
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d² where |d| < delta, else delta (|d| - 0.5 delta)."""
    input, target = _broadcast_pair("huber_loss", input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    reduction = _reduction_enum(reduction)
    if weight is not None:
        return _apply_reduction(_op("huber_loss", input, target, 0, float(delta)) * weight, reduction)
    return _op("huber_loss", input, target, reduction, float(delta))


@overridable
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input), input holding log-probabilities; 'batchmean' divides the sum by the batch."""
    if reduction == "mean":
        user_warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if log_target:
        losses = target.exp() * (target - input)
    else:
        losses = target * _where(target == 0, 1.0, target).log() - target * input  # xlogy(t, t) - t * input
    if reduction == "batchmean":
        total = losses.sum()
        return total / input._size[0] if input.dim() else total
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


@overridable
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), or input - target * log(input + eps); full adds Stirling's term."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    losses = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = _where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        losses = losses + _where(target > 1, stirling, 0.0)
    return _apply_reduction(losses, reduction)


@overridable
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log var + (input - target)² / var), var clamped at eps without changing its gradient (as PyTorch).
    A float var is one shared variance; a var with one size-1 dim where input has more broadcasts."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * input.new_ones(input._size)
    elif (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    if var._size != input._size:
        if input._size[:-1] == var._size:
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim()
                  and sum(v for i, v in zip(input._size, var._size) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    from ..autograd.grad_mode import no_grad
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    diff = input - target
    losses = (var.log() + diff * diff / var) * 0.5
    if full:
        losses = losses + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(losses, _REDUCTIONS[reduction])


def _top_kl_div(input, target, reduction=1, *, log_target=False):
    return kl_div(input, target, reduction={0: "none", 1: "mean", 2: "sum"}[reduction], log_target=log_target)


composite("kl_div", _top_kl_div, method=False)
