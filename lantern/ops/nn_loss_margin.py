"""Margin and embedding losses, composites as in PyTorch: margin_ranking, hinge_embedding, soft_margin,
cosine_embedding, triplet_margin (and with a distance function), multilabel_soft_margin, multi_margin,
multilabel_margin.

>>> import lantern.nn.functional as F
>>> F.margin_ranking_loss(lantern.tensor([1., 2.]), lantern.tensor([2., 1.]), lantern.tensor([1., 1.])).item()
0.5
>>> F.multi_margin_loss(lantern.tensor([[0.1, 0.2, 0.4]]), lantern.tensor([2])).item()
0.5
"""
from ..core import dtype as dt
from .meta_util import shape_str
from .nn_activation import logsigmoid
from .nn_common import _op, _where
from .nn_misc import pairwise_distance
from .pointwise_common import _require_tensor
from .nn_loss import _REDUCTIONS, _apply_reduction, _reduction_enum
from ..core.overridable import overridable


__all__ = [
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
    "multilabel_margin_loss",
]


def _same_dims(name, *tensors):
    if len({t.dim() for t in tensors}) > 1:
        sizes = ", ".join(f"{n}: {shape_str(t._size)}" for n, t in zip(("input1", "input2", "target"), tensors))
        raise RuntimeError(f"{name} : All input tensors should have same dimension but got sizes: {sizes}")


@overridable
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target (input1 - input2) + margin)."""
    _same_dims("margin_ranking_loss", input1, input2, target)
    losses = (-target * (input1 - input2) + margin).clamp(min=0)
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


@overridable
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1 (PyTorch's formula for other values too)."""
    margin_term = _where(target != 1, (margin - input).clamp(min=0), 0.0)
    losses = margin_term + _where(target != -1, input, 0.0)
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


@overridable
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    losses = (-input * target).exp().log1p()
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


@overridable
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1."""
    if input1.dim() not in (1, 2) or input1._size != input2._size or target.dim() != input1.dim() - 1:
        raise RuntimeError(f"cosine_embedding_loss: expected 1-D or 2-D inputs of one shape and a target with one "
                           f"dimension fewer, got input1 {shape_str(input1._size)}, input2 "
                           f"{shape_str(input2._size)} and target {shape_str(target._size)}")
    d = input1.dim() - 1
    product = (input1 * input2).sum(d)
    cos = product / (((input1 * input1).sum(d) + 1e-12) * ((input2 * input2).sum(d) + 1e-12)).sqrt()
    losses = _where(target == 1, 1 - cos, 0.0) + _where(target == -1, (cos - margin).clamp(min=0), 0.0)
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


@overridable
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the p-norm pairwise distance; swap uses the
    smaller of d(anchor, negative) and d(positive, negative)."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) > 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           "inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _op("minimum", d_neg, pairwise_distance(positive, negative, p, eps))
    losses = (d_pos - d_neg + margin).clamp(min=0)
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


@overridable
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """triplet_margin_loss with any distance_function(x1, x2) (pairwise_distance when None)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) > 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           "inputs")
    distance = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = _op("minimum", d_neg, distance(positive, negative))
    losses = (d_pos - d_neg + margin).clamp(min=0)
    return _apply_reduction(losses, _REDUCTIONS[reduction])


@overridable
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The mean over classes of the binary logistic losses of each class."""
    losses = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        losses = losses * weight
    losses = losses.sum(input.dim() - 1) / input._size[-1]
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def _check_multi_margin(input, target, p, weight):
    """multi_margin_loss's argument checks, in PyTorch's order (its Python wrapper's, then ATen's)."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if input.dim() > 2 or (input.dim() > 0 and input._size[-1] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{shape_str(input._size)}")
    batch = input._size[0] if input.dim() == 2 else 1
    if target.dim() > 1 or target.numel() != batch:
        raise RuntimeError(f"inconsistent target size: {shape_str(target._size)} for input of size: "
                           f"{shape_str(input._size)}")
    classes = input._size[-1] if input.dim() else 1
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got {shape_str(weight._size)}")
    if target.dtype is not dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.legacy}")


@overridable
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Σ_{i ≠ y} max(0, margin - x[y] + x[i])^p / C per sample (times weight[y])."""
    reduction = _reduction_enum(reduction, size_average, reduce)  # a bad name fails before ATen's checks
    _check_multi_margin(input, target, p, weight)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    classes = x._size[1]
    positions = _op("arange", classes, None, 1, dt.int64, None, x.device, None, False).view(1, classes)
    is_target = positions == t.unsqueeze(1)
    x_target = _where(is_target, x, 0.0).sum(1, True)
    terms = (x - x_target + margin).clamp(min=0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * _op("index.Tensor", weight, [t]).unsqueeze(1)
    losses = _where(is_target, 0.0, terms).sum(1) / classes
    if input.dim() < 2:
        losses = losses.reshape(target._size)
    return _apply_reduction(losses, reduction)


@overridable
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Σ_j Σ_{i not a target} max(0, 1 - (x[y_j] - x[i])) / C, the targets y_j being the entries of target before
    its first -1."""
    _require_tensor("multilabel_margin_loss", input)
    reduction = _reduction_enum(reduction, size_average, reduce)
    if input.dim() > 2 or (input.dim() > 0 and input._size[-1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{shape_str(input._size)}")
    if target._size != input._size:
        raise RuntimeError(f"inconsistent target size: {shape_str(target._size)} for input of size: "
                           f"{shape_str(input._size)}")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(x._size)
    classes = x._size[1]
    valid = (t >= 0).long().cumprod(1).bool()  # the entries before the first -1
    positions = _op("arange", classes, None, 1, dt.int64, None, x.device, None, False)
    is_target = ((t.unsqueeze(-1) == positions) & valid.unsqueeze(-1)).any(1)
    x_target = x.gather(1, t.clamp(min=0))
    terms = (1 - (x_target.unsqueeze(-1) - x.unsqueeze(-2))).clamp(min=0)
    counted = valid.unsqueeze(-1) & is_target.logical_not().unsqueeze(-2)
    losses = _where(counted, terms, 0.0).sum((1, 2)) / classes
    if input.dim() < 2:
        losses = losses.reshape(())
    return _apply_reduction(losses, reduction)
