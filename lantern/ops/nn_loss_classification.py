"""Classification losses: binary_cross_entropy (and with logits), nll_loss, cross_entropy, ctc_loss.

- Losses are kernels in their stable forms (log-sum-exp, log1p(exp(-|x|))) or, where PyTorch composes them too,
  composites over log_softmax and nll_loss.
- cross_entropy of 2-D logits with class indices, no weight and no smoothing is one fused op (log-sum-exp minus the
  target logit; backward softmax - one_hot), its node named NllLossBackward0 as PyTorch's graph top is.

>>> import lantern.nn.functional as F
>>> x = lantern.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
>>> round(F.cross_entropy(x, lantern.tensor([2, 0])).item(), 4)
0.7531
>>> round(F.binary_cross_entropy_with_logits(lantern.zeros(2), lantern.ones(2)).item(), 4)  # log 2
0.6931
"""
import numpy as np

from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .meta_util import pointwise_binary, shape_str
from .nn_common import _op, _row_sums, _where, _wide
from .pointwise_common import _require_tensor
from .registry import custom, structured
from .derivative import derivative
from .nn_loss import _apply_reduction, _loss_grad, _pair_loss_meta, _reduce_into, _reduction_enum
from ..core.overridable import overridable
from ..core.reference import mode, specialisation
from .numba_kernels import optional_kernels


__all__ = [
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "ctc_loss",
]


def _bce_meta(self, target, weight=None, reduction=1):
    shape, dtype = _pair_loss_meta("binary_cross_entropy")(self, target, reduction)
    if weight is not None:
        pointwise_binary(self, weight)
    return shape, dtype


def _bce_impl(xp, out, dtype, self, target, weight=None, reduction=1):
    x, t = _wide(self), _wide(target.astype(dtype, copy=False))
    if ((x < 0) | (x > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1 (binary_cross_entropy takes "
                           "probabilities: apply sigmoid first, or use binary_cross_entropy_with_logits)")
    losses = -(t * xp.maximum(xp.log(x), -100) + (1 - t) * xp.maximum(xp.log1p(-x), -100))
    if weight is not None:
        losses = losses * _wide(weight)
    _reduce_into(xp, out, losses, reduction)


structured("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor",
           _bce_meta, _bce_impl, inplace=False, out=False, method=False)


def _bce_logits_meta(self, target, weight=None, pos_weight=None, reduction=1):
    shape, dtype = _bce_meta(self, target, weight, reduction)
    if pos_weight is not None:
        pointwise_binary(self, pos_weight)
    return shape, dtype


def _bce_logits_impl(xp, out, dtype, self, target, weight=None, pos_weight=None, reduction=1):
    """(1 - t) x + (1 + (pw - 1) t) softplus(-x), with softplus(-x) = log1p(exp(-|x|)) + max(-x, 0): stable."""
    x, t = _wide(self), _wide(target.astype(dtype, copy=False))
    softplus_neg = xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, 0)
    coefficient = 1 if pos_weight is None else 1 + (_wide(pos_weight) - 1) * t
    losses = (1 - t) * x + coefficient * softplus_neg
    if weight is not None:
        losses = losses * _wide(weight)
    _reduce_into(xp, out, losses, reduction)


structured("binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
           "Tensor? pos_weight=None, int reduction=1) -> Tensor", _bce_logits_meta, _bce_logits_impl,
           inplace=False, out=False, method=False)


def _shapes(self, target):
    """The '(nll_loss of input shape ..., target shape ...)' of an error message (written only when one is raised:
    the text costs more than the checks)."""
    return f"(nll_loss of input shape {shape_str(self._size)}, target shape {shape_str(target._size)})"


def _nll_batch_shape(self, target):
    """The loss's shape before reduction (the batch's), with the target's shape checked as PyTorch checks it, so
    that a call wrong in several ways gets PyTorch's exception class: input rank, batch size, the rest."""
    if self.dim() == 0:
        raise ValueError(f"Expected 1 or more dimensions (got 0) {_shapes(self, target)}: input is (C,) or "
                         "(N, C, ...)")
    if self.dim() == 1:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported "
                               f"{_shapes(self, target)}")
        if target._size not in ((), (1,)):
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target._size[0]} "
                             f"{_shapes(self, target)}")
        return ()
    if not target._size:
        raise (IndexError("Dimension specified as 0 but tensor has no dimensions") if self._size[0] == 0 else
               ValueError(f"Expected input batch_size ({self._size[0]}) to match target batch_size (0). "
                          f"{_shapes(self, target)}"))
    if self._size[0] != target._size[0]:
        raise ValueError(f"Expected input batch_size ({self._size[0]}) to match target batch_size "
                         f"({target._size[0]}). {_shapes(self, target)}")
    batch = self._size[:1] + self._size[2:]
    if self.dim() == 2 and target.dim() != 1:
        raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported {_shapes(self, target)}")
    if target._size != batch:
        raise RuntimeError(f"Expected target size {shape_str(batch)}, got {shape_str(target._size)} "
                           f"{_shapes(self, target)}")
    return batch


def _nll_loss_meta(self, target, weight=None, reduction=1, ignore_index=-100):
    _require_tensor("nll_loss", self)
    _require_tensor("nll_loss", target, 2, "target")
    batch = _nll_batch_shape(self, target)
    if target.dtype not in (dt.int64, dt.uint8):
        got = target.dtype.legacy.replace("Tensor", "")
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {got} (nll_loss: pass class indices "
                           "as target.long())")
    classes = self._size[1 if self.dim() > 1 else 0]
    if weight is not None and (weight.dim() != 1 or weight._size[0] != classes):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but got "
                           f"weight tensor of shape: {shape_str(weight._size)}")
    if self.dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"nll_loss_out_frame" not implemented for \'{self.dtype.legacy}\'')
    return batch if reduction == 0 else (), self.dtype


def _nll_loss_impl(xp, out, dtype, self, target, weight=None, reduction=1, ignore_index=-100):
    x = _wide(self)
    axis = 1 if x.ndim > 1 else 0
    target = target.reshape(()) if x.ndim == 1 else target  # unbatched: a 0-d target or one of shape (1,)
    valid = target != ignore_index
    picked_class = xp.where(valid, target, 0).astype(np.int64)
    bad = (picked_class < 0) | (picked_class >= x.shape[axis])
    if bad.any():
        raise IndexError(f"Target {int(picked_class[bad].flat[0])} is out of bounds.")
    picked = xp.take_along_axis(x, xp.expand_dims(picked_class, axis), axis).squeeze(axis)
    w = valid.astype(x.dtype) if weight is None else _wide(weight)[picked_class] * valid
    losses = -picked * w
    if reduction == 1:
        out[...] = losses.sum() / w.sum()
    else:
        _reduce_into(xp, out, losses, reduction)


structured("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, int ignore_index=-100) "
           "-> Tensor", _nll_loss_meta, _nll_loss_impl, inplace=False, out=False, method=False)


def _nll_loss_backward_meta(grad_output, self, target, weight=None, reduction=1, ignore_index=-100):
    return self._size, self.dtype


def _nll_loss_backward_impl(xp, out, dtype, grad_output, self, target, weight=None, reduction=1, ignore_index=-100):
    """-grad * w[target] (over the total weight for 'mean') at each target class, 0 elsewhere."""
    out[...] = 0
    axis = 1 if out.ndim > 1 else 0
    target = target.reshape(()) if out.ndim == 1 else target
    kept = target != ignore_index
    picked = xp.where(kept, target, 0).astype(np.int64)
    w = kept.astype(out.dtype) if weight is None else weight[picked] * kept
    if reduction == 1:
        w = w / w.sum()
    values = -grad_output * w
    xp.put_along_axis(out, xp.expand_dims(picked, axis), xp.expand_dims(values, axis).astype(out.dtype), axis)


structured("nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
           "int ignore_index=-100) -> Tensor", _nll_loss_backward_meta, _nll_loss_backward_impl, inplace=False,
           out=False)


def _checked_classes(xp, target, ignore_index, classes):
    """(target with ignored entries as class 0, the kept mask); IndexError for a class out of range. The mask is
    None when every entry is kept, decided by the target's minimum and maximum alone (the common case: no
    ignore_index among the targets)."""
    if target.size:
        low, high = int(target.min()), int(target.max())
        if 0 <= low and high < classes and not low <= ignore_index <= high:
            return target.astype(np.int64, copy=False), None
    kept = target != ignore_index
    picked = xp.where(kept, target, 0).astype(np.int64)
    bad = (picked < 0) | (picked >= classes)
    if bad.any():
        raise IndexError(f"Target {int(picked[bad].flat[0])} is out of bounds.")
    return picked, kept


def _row_scale(xp, grad, kept, reduction, dtype, rows):
    """Each row's factor on its loss gradient: grad (per row for 'none'), masked, over the kept count for 'mean'
    (all rows ignored: zero, as PyTorch's gradient is)."""
    if kept is None:  # every row kept: the same factors without the mask
        scale = xp.ones(rows, dtype)
        if reduction == 1:
            scale /= dtype.type(rows)
        return scale * grad
    scale = kept.astype(dtype)
    if reduction == 1:
        scale /= scale.sum() or 1
    return scale * grad


def _cross_entropy_index_meta(self, target, reduction=1, ignore_index=-100):
    return _nll_loss_meta(self, target, None, reduction, ignore_index)


def _cross_entropy_index(backend, self, target, reduction=1, ignore_index=-100):
    """(log-sum-exp of each row minus its target's logit, reduced; softmax(self), saved for backward) without
    materialising log_softmax: one exp over the logits serves forward and backward."""
    shape, dtype = _cross_entropy_index_meta(self, target, reduction, ignore_index)
    loss, probs = backend.empty(shape, dtype), backend.empty(self._size, dtype)
    if backend.xp is None:
        return loss, probs
    xp = backend.xp
    x, p, classes = _wide(backend.array(self)), backend.array(probs), backend.array(target)
    rows = None
    if _compiled_forward_applies(xp, x, p):
        rows = _cross_entropy_rows_compiled(xp, x, classes, ignore_index, p)
    losses, kept = rows if rows is not None else _cross_entropy_rows(xp, x, classes, ignore_index, p)
    total = backend.array(loss)
    if reduction == 1:
        total[...] = xp.add.reduce(losses) / (len(losses) if kept is None else kept)
    else:
        _reduce_into(xp, total, losses, reduction)
    return loss, probs


def _cross_entropy_rows(xp, x, target, ignore_index, p):
    """(each row's loss, 0 where ignored; the kept rows' count, None when every row is kept), softmax(x) written
    into p."""
    picked, kept = _checked_classes(xp, target, ignore_index, x.shape[1])
    top = xp.maximum.reduce(x, axis=1, keepdims=True)
    e = xp.subtract(x, top, out=p if p.dtype == x.dtype else None)
    xp.exp(e, out=e)
    sums = _row_sums(xp, e)
    losses = xp.log(sums[:, 0]) + top[:, 0] - x[xp.arange(len(x)), picked]
    if kept is not None:
        losses *= kept
    e *= 1 / sums
    if e is not p:
        xp.copyto(p, e, casting="unsafe")
    return losses, None if kept is None else kept.sum()


_SHORT_ROWS = 64  # up to this many classes the forward's kernel finds the row maxima itself (measured: 5x faster
# than NumPy's maximum.reduce at 27 classes, even at 100, 5x slower at 1000)


def _compiled_forward_applies(xp, x, p):
    """Whether nn_loss_numba's kernels may serve the forward's rows: not reference mode, numba installed,
    float32/float64 NumPy logits with at least one class, softmax's row-major array of their dtype."""
    return (mode.fast and xp is np and x.dtype in (np.float32, np.float64) and p.dtype == x.dtype
            and p.flags.c_contiguous and x.shape[1] > 0 and optional_kernels("nn_loss_numba") is not None)


@specialisation(replaces="_cross_entropy_rows (range check, shift, target gather, sum, normalisation: a NumPy "
                         "call each)",
                when="_compiled_forward_applies: float32/float64 NumPy logits, numba installed; every target a "
                     "class or ignore_index (else the NumPy version runs, and raises)",
                parity_test="tests/test_nn_loss_compiled.py::test_compiled_cross_entropy_forward_equals_numpy",
                ops=("_cross_entropy_index",))
def _cross_entropy_rows_compiled(xp, x, target, ignore_index, p):
    """_cross_entropy_rows with its elementwise parts in numba passes (kept_rows, shift_rows, finish_rows) around
    NumPy's exp, row sums and log (and row maxima, for rows longer than _SHORT_ROWS); None where a target is out of
    range."""
    kernels = optional_kernels("nn_loss_numba")
    kept = kernels.kept_rows(target, x.shape[1], ignore_index)
    if kept < 0:
        return None
    short = x.shape[1] <= _SHORT_ROWS
    top = xp.empty(len(x), x.dtype) if short else xp.maximum.reduce(x, axis=1)
    kernels.shift_rows(x, top, short, p)
    xp.exp(p, out=p)
    sums = _row_sums(xp, p)[:, 0]
    losses = xp.empty_like(sums)
    kernels.finish_rows(x, target, ignore_index, top, xp.log(sums), sums, p, losses)
    return losses, None if kept == len(x) else np.int64(kept)  # the NumPy version's count is an int64 too


custom("_cross_entropy_index(Tensor self, Tensor target, int reduction=1, int ignore_index=-100) -> "
       "(Tensor, Tensor)", _cross_entropy_index, _cross_entropy_index)


def _cross_entropy_index_backward_meta(grad_output, probs, target, reduction=1, ignore_index=-100):
    return probs._size, probs.dtype


def _cross_entropy_index_backward_impl(xp, out, dtype, grad_output, probs, target, reduction=1, ignore_index=-100):
    """(probs - one_hot(target)) times each row's gradient factor."""
    if (_compiled_backward_applies(xp, out, grad_output, probs, reduction)
            and _cross_entropy_backward_compiled(out, grad_output, probs, target, reduction, ignore_index)):
        return
    p = _wide(probs)
    picked, kept = _checked_classes(xp, target, ignore_index, p.shape[1])
    scale = _row_scale(xp, _wide(grad_output), kept, reduction, p.dtype, len(p))
    result = xp.multiply(p, scale[:, None], out=out if out.dtype == p.dtype else None)
    result[xp.arange(len(p)), picked] -= scale
    if result is not out:
        xp.copyto(out, result, casting="unsafe")


def _compiled_backward_applies(xp, out, grad_output, probs, reduction):
    """Whether nn_loss_numba's kernel may serve this backward: not reference mode, numba installed, a reduced loss
    (one gradient for every row) of at least one row, row-major float32/float64 NumPy arrays of one dtype."""
    return (mode.fast and xp is np and reduction != 0 and len(probs) > 0 and probs.dtype in (np.float32, np.float64)
            and out.dtype == probs.dtype == grad_output.dtype and probs.flags.c_contiguous and out.flags.c_contiguous
            and optional_kernels("nn_loss_numba") is not None)


@specialisation(replaces="_cross_entropy_index_backward_impl (range check, row factors, product, fancy-indexed "
                         "subtraction: a NumPy call each)",
                when="_compiled_backward_applies: reduced loss, row-major float32/float64 NumPy arrays, numba "
                     "installed; every target a class or ignore_index (else the NumPy version runs, and raises)",
                parity_test="tests/test_nn_loss_compiled.py::test_compiled_cross_entropy_backward_equals_numpy",
                ops=("_cross_entropy_index_backward",))
def _cross_entropy_backward_compiled(out, grad_output, probs, target, reduction, ignore_index):
    """The backward in numba passes (nn_loss_numba.kept_rows, cross_entropy_backward), the row factors made as
    _row_scale makes them (1 or 0 over the kept count for 'mean', over 1 for 'sum', then times the gradient, each
    rounded in the dtype); False where a target is out of range."""
    kernels = optional_kernels("nn_loss_numba")
    kept = kernels.kept_rows(target, probs.shape[1], ignore_index)
    if kept < 0:
        return False
    f, grad = probs.dtype.type, grad_output[()]
    divisor = f(kept or 1) if reduction == 1 else f(1)
    kernels.cross_entropy_backward(probs, target, ignore_index, f(1) / divisor * grad, f(0) / divisor * grad, out)
    return True


structured("_cross_entropy_index_backward(Tensor grad_output, Tensor probs, Tensor target, int reduction=1, "
           "int ignore_index=-100) -> Tensor", _cross_entropy_index_backward_meta, _cross_entropy_index_backward_impl,
           inplace=False, out=False)


def _weighted(values, weight):
    return values if weight is None else values * weight


def _bce_logits_grad(grad, self, target, weight, pos_weight, reduction):
    s = self.sigmoid()
    values = s - target if pos_weight is None else (pos_weight * target + 1 - target) * s - pos_weight * target
    return _loss_grad(grad, _weighted(values, weight), reduction)


def _bce_logits_target_grad(grad, self, target, weight, pos_weight, reduction):
    values = -self if pos_weight is None else -self - (pos_weight - 1) * _op("log_sigmoid", self)
    return _loss_grad(grad, _weighted(values, weight), reduction)


def _kept_rows(target, reduction, ignore_index, dtype):
    """(kept mask as dtype, over the kept count for 'mean'; target with ignored entries as class 0)."""
    kept = target != ignore_index
    factor = kept.to(dtype)
    return (factor / factor.sum() if reduction == 1 else factor), _where(kept, target, 0)


def _cross_entropy_index_grad(grads, probs, target, reduction, ignore_index):
    """The loss's gradient, plus softmax's for a gradient that reached the saved probabilities (double backward)."""
    loss_grad, probs_grad = grads
    total = None if loss_grad is None else _op("_cross_entropy_index_backward", loss_grad, probs, target, reduction,
                                                ignore_index)
    if probs_grad is not None:
        through_softmax = _op("_softmax_backward_data", probs_grad, probs, 1, probs.dtype)
        total = through_softmax if total is None else total + through_softmax
    return total


def _cross_entropy_backward_grad_output(grad, probs, target, reduction, ignore_index):
    """The backward is linear in grad_output: its adjoint sums (probs - one_hot(target)) * grad over each row."""
    factor, safe = _kept_rows(target, reduction, ignore_index, grad.dtype)
    rows = ((probs * grad).sum(1) - grad.gather(1, safe.unsqueeze(1)).squeeze(1)) * factor
    return rows if reduction == 0 else rows.sum()


_HELPERS = {name: globals()[name] for name in (
    "_op", "_loss_grad", "_weighted", "_bce_logits_grad", "_bce_logits_target_grad", "_cross_entropy_index_grad",
    "_cross_entropy_backward_grad_output", "_kept_rows",
)}


derivative("binary_cross_entropy",
           self="_loss_grad(grad, _weighted((self - target) / ((1 - self) * self).clamp(min=1e-12), weight), "
                "reduction)",
           target="_loss_grad(grad, _weighted((1 - self).log().clamp(min=-100) - self.log().clamp(min=-100), "
                  "weight), reduction)", helpers=_HELPERS)
derivative("binary_cross_entropy_with_logits",
           self="_bce_logits_grad(grad, self, target, weight, pos_weight, reduction)",
           target="_bce_logits_target_grad(grad, self, target, weight, pos_weight, reduction)", helpers=_HELPERS)
derivative("nll_loss", name=lambda args: "NllLoss2DBackward0" if args[0].dim() == 4 else "NllLossBackward0",
           self="_op('nll_loss_backward', grad, self, target, weight, reduction, ignore_index)", helpers=_HELPERS)
derivative("nll_loss_backward", grad_output="_op('nll_loss', grad, target, weight, reduction, ignore_index)",
           helpers=_HELPERS)
derivative("_cross_entropy_index", name="NllLossBackward0",
           self="_cross_entropy_index_grad(grads, result1, target, reduction, ignore_index)", helpers=_HELPERS)
derivative("_cross_entropy_index_backward",
           grad_output="_cross_entropy_backward_grad_output(grad, probs, target, reduction, ignore_index)",
           probs="grad * (_kept_rows(target, reduction, ignore_index, grad.dtype)[0] * grad_output).unsqueeze(1)",
           helpers=_HELPERS)


@overridable
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """The negative log likelihood of the target classes, given log-probabilities (N, C, d1, ...)."""
    return _op("nll_loss", input, target, weight, _reduction_enum(reduction, size_average, reduce), ignore_index)


def _class_shape(input, weight):
    """weight viewed to broadcast along the class dim of input."""
    shape = [1] * input.dim()
    shape[1 if input.dim() > 1 else 0] = weight.numel()
    return weight.view(shape)


@overridable
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for unbatched input) then nll_loss; target holds class indices or,
    shaped like input, class probabilities. label_smoothing mixes in the uniform distribution, as PyTorch does."""
    _require_tensor("cross_entropy", input)
    _require_tensor("cross_entropy", target, 2, "target")
    reduction = _reduction_enum(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1  # a 0-d input fails in log_softmax over dim 1, as in PyTorch
    if (input.dim() == 2 and weight is None and label_smoothing == 0.0 and target._size != input._size
            and input.dtype in (dt.float32, dt.float64)):  # float16 rounds log_softmax first in PyTorch's path
        return _op("_cross_entropy_index", input, target, reduction, ignore_index)[0]
    logp = _op("log_softmax", input, class_dim, None)
    classes = input._size[class_dim] if input.dim() else 1
    if target._size == input._size:
        return _cross_entropy_probabilities(logp, target, weight, reduction, label_smoothing, classes, class_dim)
    loss = _op("nll_loss", logp, target, weight, reduction, ignore_index)
    if label_smoothing == 0.0:
        return loss
    smooth = -(logp * _class_shape(logp, weight) if weight is not None else logp).sum(class_dim)
    ignored = target == ignore_index
    smooth = _where(ignored, 0.0, smooth)
    if reduction == 1:
        kept = ignored.logical_not()
        if weight is None:
            denominator = kept.sum()
        else:
            denominator = (_op("index.Tensor", weight, [_where(kept, target, 0)]) * kept.to(weight.dtype)).sum()
        smooth = smooth.sum() / denominator
    elif reduction == 2:
        smooth = smooth.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _cross_entropy_probabilities(logp, target, weight, reduction, label_smoothing, classes, class_dim):
    if target.dtype.category != dt.FLOATING:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{target.dtype.legacy.replace('Tensor', '')}")
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = logp * target
    if weight is not None:
        terms = terms * _class_shape(logp, weight)
    if reduction == 0:
        return -terms.sum(class_dim)
    total = -terms.sum()
    return total if reduction == 2 else total / (logp.numel() // classes)


@overridable
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), the logs clamped at -100 as in PyTorch."""
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {target.dtype.legacy} but expected {input.dtype.legacy} "
                           f"(binary_cross_entropy: cast the target with .to({input.dtype}))")
    reduction = _reduction_enum(reduction, size_average, reduce)
    return _op("binary_cross_entropy", input, target, weight, reduction)


@overridable
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) computed from the logits without overflow; pos_weight
    scales the positive term."""
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    reduction = _reduction_enum(reduction, size_average, reduce)
    return _op("binary_cross_entropy_with_logits", input, target, weight, pos_weight, reduction)


_CTC_NEG = -1e30  # log(0) stand-in: -inf would make the gradient nan on unreachable paths


def _logsumexp(x, dim):
    """log Σ exp(x) along dim, shifted by the (constant) maximum; written with elementary ops so that its double
    backward is exact (lantern's logsumexp fails gradgradcheck when its output feeds an expression of its input)."""
    peak = x.amax(dim, True).detach()
    return (x - peak).exp().sum(dim).log() + peak.squeeze(dim)


def _as_lengths(like, lengths):
    if isinstance(lengths, TensorImpl):
        return lengths.long()
    if not isinstance(lengths, (list, tuple)):
        raise TypeError(f"ctc_loss(): input_lengths and target_lengths must be tuples of ints or Tensors, not "
                        f"{type(lengths).__name__}")
    return like.new_tensor(list(lengths), dtype=dt.int64)


def _padded_targets(targets, target_lengths, batch):
    """(N, S) targets: as given, or cut from the 1-D concatenation of every sample's targets."""
    if targets.dim() == 2 or batch == 0:
        return targets.long()
    longest = max(int(target_lengths.max().item()), 1)
    starts = target_lengths.cumsum(0) - target_lengths
    positions = _op("arange", longest, None, 1, dt.int64, None, targets.device, None, False)
    index = (starts.unsqueeze(1) + positions).clamp(max=max(targets.numel() - 1, 0))
    return targets.long().reshape(-1)[index.reshape(-1)].reshape(batch, longest)


@overridable
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The Connectionist Temporal Classification loss: -log of the total probability of every alignment of the
    targets to the (T, N, C) log_probs, by the forward (alpha) recursion in log space, batched over samples and
    label positions (a loop over time steps only)."""
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0)
    steps, batch, _ = log_probs._size
    input_lengths = _as_lengths(targets, input_lengths).reshape(-1)
    target_lengths = _as_lengths(targets, target_lengths).reshape(-1)
    labels = _padded_targets(targets, target_lengths, batch)
    extended = labels.new_full((batch, 2 * labels._size[1] + 1), blank)  # blank, y1, blank, y2, ..., blank
    extended[:, 1::2] = labels
    width = extended._size[1]
    emissions = log_probs.gather(2, extended.unsqueeze(0).expand(steps, batch, width))
    skip = extended != blank
    skip[:, 2:] &= extended[:, 2:] != extended[:, :-2]
    skip[:, :2] = False
    alpha = _where(_op("arange", width, None, 1, dt.int64, None, log_probs.device, None, False) < 2,
                   emissions[0], _CTC_NEG)
    neg = alpha.new_full((batch, 2), _CTC_NEG)
    for t in range(1, steps):
        shift1 = _op("cat", [neg[:, :1], alpha[:, :-1]], 1)
        shift2 = _where(skip, _op("cat", [neg, alpha[:, :-2]], 1), _CTC_NEG)
        step = _logsumexp(_op("stack", [alpha, shift1, shift2], 0), 0) + emissions[t]
        alpha = _where((input_lengths > t).unsqueeze(1), step, alpha)
    last = alpha.gather(1, (2 * target_lengths).unsqueeze(1))
    before = _where((target_lengths > 0).unsqueeze(1),
                    alpha.gather(1, (2 * target_lengths - 1).clamp(min=0).unsqueeze(1)), _CTC_NEG)
    losses = -_logsumexp(_op("cat", [last, before], 1), 1)
    impossible = losses > -_CTC_NEG / 2
    losses = _where(impossible, 0.0 if zero_infinity else float("inf"), losses)
    if unbatched:
        losses = losses.squeeze(0)
    reduction = _reduction_enum(reduction)
    if reduction == 1:
        return (losses / target_lengths.clamp(min=1).to(losses.dtype).reshape(losses._size)).mean()
    return _apply_reduction(losses, reduction)
