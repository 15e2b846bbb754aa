"""linear_cross_entropy (torch.nn.functional.linear_cross_entropy): cross_entropy of linear(input, linear_weight),
a composite of lantern ops (so autograd comes free).

The reference path makes the logits (N, C, *out_features) at once: linear_weight (C, *out_features, in_features)
is one (C * prod(out_features), in_features) linear layer whose output is reshaped. With `options` (an
nn.LinearCrossEntropyOptions) the batch goes through in chunks of options.batch_chunk_size rows, each chunk's
logits made and turned into per-row losses on their own, then reduced together: the whole (N, C) logits never
exist at once in the forward pass (autograd still keeps each chunk's softmax for backward, where PyTorch's chunked
op precomputes the gradients instead). lantern does not guess a chunk size: batch_chunk_size None is one chunk.
Where PyTorch's chunked path does not apply (K-dimensional loss, label smoothing, class-probability targets), the
options are ignored with PyTorch's warning.

>>> F = lantern.nn.functional
>>> x, w = lantern.tensor([[1.0, 0.0], [0.0, 1.0]]), lantern.tensor([[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
>>> target = lantern.tensor([0, 2])
>>> round(F.linear_cross_entropy(x, w, target).item(), 4) == round(F.cross_entropy(x @ w.T, target).item(), 4)
True
>>> options = lantern.nn.LinearCrossEntropyOptions(batch_chunk_size=1)
>>> round(F.linear_cross_entropy(x, w, target, options=options).item(), 4)
1.2395
"""
import math

from ..core import dtype as dt
from .nn_common import _op
from .nn_loss_classification import cross_entropy
from .nn_misc import linear
from ..core.overridable import overridable
from ..core import user_warnings

__all__ = ["linear_cross_entropy"]


@overridable
def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...) with linear_weight of shape
    (C, *out_features, in_features) for a K-dimensional loss; ignore_index None means -100 for class indices
    (and may not be given with class-probability targets)."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions (in_features), got "
                           f"{in_features} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batch, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:  # cross_entropy's test for probabilities
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        if _chunked_path_applies(out_features, reduction, label_smoothing, target):
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                            options.batch_chunk_size)
        user_warnings.warn(f"linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                      f"{{'mean','sum','none'}}, label_smoothing == 0, target.dtype == int64, out_features == (). "
                      f"Got reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}", stacklevel=2)
    rows = math.prod(out_features, start=classes)
    logits = linear(input, linear_weight.reshape(rows, in_features),
                    None if linear_bias is None else linear_bias.reshape(rows))
    return cross_entropy(logits.reshape(logits_shape), target, weight=weight, reduction=reduction,
                         ignore_index=ignore_index, label_smoothing=label_smoothing)


def _chunked_path_applies(out_features, reduction, label_smoothing, target):
    return (not out_features and reduction in ("mean", "sum", "none") and label_smoothing == 0.0
            and target.dtype is dt.int64)


def _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, chunk_size):
    """The per-row losses of each chunk of rows (its logits made alone), then reduced: a mean divides by the
    total class weight of the rows not ignored, as cross_entropy's does."""
    unbatched = input.dim() == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    n = input.shape[0]
    step = chunk_size or max(n, 1)
    losses = [cross_entropy(linear(input[start:start + step], linear_weight, linear_bias), target[start:start + step],
                            weight=weight, reduction="none", ignore_index=ignore_index)
              for start in range(0, n, step)]
    loss = _op("cat", losses, 0) if losses else input.new_zeros((0,))
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    kept = target != ignore_index
    if weight is None:
        return loss.sum() / kept.sum()
    return loss.sum() / (weight[_op("where", kept, target, 0)] * kept.to(weight.dtype)).sum()
