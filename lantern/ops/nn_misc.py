"""torch.nn.functional outside activations, losses and normalization: linear/bilinear, dropout (and rrelu,
gumbel_softmax), embedding, one_hot, distances and scaled_dot_product_attention, with the torch.<name> top-level
forms of dropout, alpha_dropout and the distances. Op records with derivatives, plus the Python frontends.

>>> import lantern.nn.functional as F
>>> F.one_hot(lantern.tensor([0, 2]), 3).tolist()
[[1, 0, 0], [0, 0, 1]]
"""
import math

import numpy as np
from scipy import sparse

from ..core import dtype as dt
from ..core.reference import mode, specialisation
from .numba_kernels import optional_kernels
from .meta_util import shape_str, wrap_dim
from .nn_activation import leaky_relu
from .nn_common import _op, _where, _wide
from .pointwise_common import _require_tensor
from .registry import COMPOSITES as _COMPOSITES, composite, custom
from .sparse_coo import embedding_sparse_backward
from .derivative import derivative, nondifferentiable
from ..core.overridable import overridable
from ..core import user_warnings

__all__ = [
    "linear", "dropout", "embedding", "one_hot", "cosine_similarity", "pairwise_distance",
    "scaled_dot_product_attention", "alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout",
    "rrelu", "rrelu_", "gumbel_softmax", "bilinear",
]


# ---- linear and bilinear -------------------------------------------------------------------------------------

def bilinear(input1, input2, weight, bias=None):
    """y_o = x1ᵀ W_o x2 + b_o, with weight of shape (out_features, in1_features, in2_features)."""
    for name, t, k in (("input1", input1, 1), ("input2", input2, 2)):
        if weight.dim() != 3 or t._size[-1] != weight._size[k]:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {t._size[-1]} but "
                               f"expected {weight._size[k] if weight.dim() == 3 else '(a 3-D weight)'}")
    if input1._size[:-1] != input2._size[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {shape_str(input1._size[:-1])} "
                           f"and {shape_str(input2._size[:-1])}")
    left = input1.unsqueeze(-2).unsqueeze(-3).matmul(weight).squeeze(-2)  # (..., out, in2)
    out = (left * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


def linear(input, weight, bias=None):
    """input @ weight.T + bias, with weight of shape (out_features, in_features); one addmm for 2-D input, as
    PyTorch computes it."""
    if input.dim() == 2 and bias is not None and weight.dim() == 2:
        return _op("addmm", bias, input, weight.t(), 1, 1)
    out = None if bias is not None and _rows_of_one_addmm(input, weight) else input.matmul(weight.t())
    if bias is None:
        return out
    if bias.dtype is not input.dtype and input.is_contiguous():
        # PyTorch runs a contiguous input as one addmm over its rows, which refuses a bias of another dtype
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {bias.dtype.legacy} and "
                           f"{input.dtype.legacy} (linear: cast the bias with .to({input.dtype}))")
    if out is None:  # as PyTorch's _flatten_nd_linear: the rows of a contiguous 3-D input through one addmm
        rows = _op("addmm", bias, input.view(-1, input._size[-1]), weight.t(), 1, 1)
        return rows.view(*input._size[:-1], weight._size[0])
    return out.add_(bias)  # in place, as PyTorch: the result keeps the product's dtype


def _rows_of_one_addmm(input, weight):
    """PyTorch's fused case of linear with a bias: a contiguous 3-D input and a 2-D weight."""
    return input.dim() == 3 and weight.dim() == 2 and input.is_contiguous()


# ---- dropout, embedding, one_hot -----------------------------------------------------------------------------

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input, p, training, inplace, feature=False, alpha=False):
    """ATen's _dropout_impl: a bernoulli(1 - p) keep-mask (one per channel for feature dropout) drawn from lantern's
    generator, scaled by 1 / (1 - p); alpha dropout instead keeps SELU's mean and variance (a * mask * x + b)."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    if feature:
        if input.dim() < 2:
            raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input (got shape "
                               f"{shape_str(input._size)})")
        shape = input._size[:2] + (1,) * (input.dim() - 2)
        noise = _op("empty", shape, input.dtype, None, input.device, None, None)
    else:
        noise = _COMPOSITES["empty_like"](input)
    noise.bernoulli_(1 - p)
    if not alpha:
        noise.div_(1 - p)
        return input.mul_(noise) if inplace else input * noise
    a = 1 / math.sqrt((_ALPHA_DROPOUT * _ALPHA_DROPOUT * p + 1) * (1 - p))
    b = (noise - 1) * (_ALPHA_DROPOUT * a) + _ALPHA_DROPOUT * a * p
    noise.mul_(a)
    return (input.mul_(noise) if inplace else input * noise).add_(b)


_ALPHA_DROPOUT = 1.7580993408473766


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p (drawn from lantern's generator) and scale the rest by 1 / (1 - p)."""
    _check_p(p)
    return _dropout(input, p, training, inplace)


@overridable
def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped elements take SELU's negative saturation, and an affine map keeps the
    mean and variance."""
    _check_p(p)
    return _dropout(input, p, training, inplace, alpha=True)


def _warn_channel_dims(name, input, dims):
    if input.dim() not in dims:
        user_warnings.warn(f"{name}: Received a {input.dim()}-D input to {name}, which is deprecated and will result in an "
                      f"error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with "
                      f"{dims[0] - 1} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{dims[0]}D or {dims[1]}D inputs).", UserWarning, stacklevel=3)


def _unbatched_feature_dropout(input, p, training, inplace):
    """Channel dropout of one unbatched sample: as a batch of one."""
    out = _dropout(input.unsqueeze(0), p, training, inplace, feature=True)
    return input if inplace else out.squeeze(0)


@overridable
def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) input with probability p."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.dim() == 2:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _dropout(input, p, training, inplace, feature=True)


@overridable
def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability p (3-D input is read as (N, C, L), as PyTorch)."""
    _check_p(p)
    _warn_channel_dims("dropout2d", input, (3, 4))
    return _dropout(input, p, training, inplace, feature=True)


@overridable
def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p."""
    _check_p(p)
    _warn_channel_dims("dropout3d", input, (4, 5))
    if input.dim() != 5:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _dropout(input, p, training, inplace, feature=True)


@overridable
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout over whole channels."""
    _check_p(p)
    return _dropout(input, p, training, inplace, feature=True, alpha=True)


@overridable
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """leaky_relu with a random slope in [lower, upper] per element when training, their mean otherwise."""
    if lower > upper:
        raise RuntimeError(f"Lower bound should be less than or equal to the upper bound (rrelu: got lower={lower}, "
                           f"upper={upper})")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    # As ATen: a slope for each element <= 0 only, drawn in order as a uniform double, the others keep slope 1.
    negative = input <= 0
    slopes = _COMPOSITES["ones_like"](input)
    count = int(negative.sum().item())
    draws = _op("empty", (count,), dt.float64, None, input.device, None, None).uniform_(lower, upper)
    slopes[negative] = draws.to(input.dtype)
    return input.mul_(slopes) if inplace else input * slopes


@overridable
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


@overridable
def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau); hard=True returns one-hot samples whose gradient is the soft one's
    (the straight-through estimator)."""
    gumbels = -_COMPOSITES["empty_like"](logits).exponential_().log()
    y_soft = _op("softmax", (logits + gumbels) / tau, dim, None)
    if not hard:
        return y_soft
    d = wrap_dim(dim, logits.dim())
    index = y_soft.max(d, True)[1]
    shape = [1] * logits.dim()
    shape[d] = logits._size[d]
    positions = _op("arange", logits._size[d], None, 1, dt.int64, None, logits.device, None, False).view(shape)
    y_hard = (positions == index).to(logits.dtype)
    return y_hard - y_soft.detach() + y_soft


@overridable
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """The rows of weight at the indices in input; the row at padding_idx gets no gradient."""
    _require_tensor("embedding", input)
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx >= weight._size[0] or padding_idx < -weight._size[0]:
        raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        padding_idx += weight._size[0]
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    return _op("embedding", weight, input, padding_idx, scale_grad_by_freq, sparse)


def _renorm_rows(weight, indices, max_norm, norm_type):
    """embedding's max_norm: the looked-up rows whose norm exceeds max_norm are rescaled in place (no grad)."""
    from ..autograd.grad_mode import no_grad
    with no_grad():
        rows = indices.reshape(-1)
        norms = _op("linalg_vector_norm", weight[rows], norm_type, [1], True, None)
        scale = _where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = weight[rows] * scale


def _embedding_kernel(backend, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if indices.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{indices.dtype.legacy} instead (while checking arguments for "
                           "embedding)")
    if weight.dim() != 2:
        raise RuntimeError(f"'weight' must be 2-D (embedding got weight of shape {shape_str(weight._size)})")
    out = backend.empty(indices._size + weight._size[1:], weight.dtype)
    if backend.xp is not None and indices.numel():
        rows = backend.array(indices)
        if ((rows < 0) | (rows >= weight._size[0])).any():
            # PyTorch's kernel for an empty weight raises RuntimeError, the others IndexError
            raise (RuntimeError if weight.numel() == 0 else IndexError)(
                f"index out of range in self (embedding: indices must lie in [0, {weight._size[0]}) for a weight "
                f"of shape {shape_str(weight._size)})")
        if out.numel():
            backend.xp.take(backend.array(weight), rows, axis=0, out=backend.array(out))
    return out


custom("embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, "
       "bool sparse=False) -> Tensor", _embedding_kernel, _embedding_kernel)


def _embedding_dense_backward(backend, grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """The rows of grad_output summed into the rows of a (num_weights, dim) gradient, as one sparse-dense product
    (np.add.at is several times slower); padding_idx's row gets nothing, scale_grad_by_freq divides each
    contribution by its index's count in the batch."""
    dim = grad_output._size[-1]
    out = backend.empty((num_weights, dim), grad_output.dtype)
    if backend.xp is None:
        return out
    xp = backend.xp
    rows = backend.array(indices).reshape(-1)
    contributions = _wide(backend.array(grad_output)).reshape(-1, dim)
    target = backend.array(out)
    if (padding_idx < 0 and not scale_grad_by_freq and _rows_compiled_apply(xp, contributions, target)
            and _embedding_rows_summed_compiled(rows, contributions, target)):
        return out
    weights = xp.ones(rows.shape, contributions.dtype)
    if padding_idx >= 0:
        weights[rows == padding_idx] = 0
    if scale_grad_by_freq:
        weights /= xp.bincount(rows, minlength=num_weights)[rows]
    host = backend.to_host  # SciPy's sparse product runs on host arrays
    scatter = sparse.csr_matrix((host(weights), (host(rows), host(xp.arange(rows.size)))),
                                shape=(num_weights, rows.size))
    xp.copyto(target, backend.from_host(scatter @ host(contributions)), casting="unsafe")
    return out


custom("embedding_dense_backward(Tensor grad_output, Tensor indices, int num_weights, int padding_idx, "
       "bool scale_grad_by_freq) -> Tensor", _embedding_dense_backward, _embedding_dense_backward)


def _rows_kernels():
    """lantern.ops.nn_misc_numba, or None without numba (numba_kernels.py)."""
    return optional_kernels("nn_misc_numba")


def _rows_compiled_apply(xp, contributions, target):
    """Whether _embedding_rows_summed_compiled serves: float32/float64 NumPy arrays of one dtype, numba installed,
    not reference mode (the caller has checked: no padding_idx, no scale_grad_by_freq)."""
    return (mode.fast and xp is np and contributions.dtype in (np.float32, np.float64)
            and contributions.dtype == target.dtype and _rows_kernels() is not None)


@specialisation(replaces="embedding_dense_backward's sparse-dense product (SciPy)",
                ops=("embedding_dense_backward", "embedding"),
                when="no padding_idx or scale_grad_by_freq; _rows_compiled_apply: float32/float64 NumPy arrays, "
                     "numba installed",
                parity_test="tests/test_embedding_compiled.py::test_compiled_rows_match_the_sparse_product")
def _embedding_rows_summed_compiled(rows, contributions, out):
    """out[rows[k]] += contributions[k] over k (out zeroed first) in one numba loop; False (out not finished) for
    a row index outside out."""
    return _rows_kernels().add_rows(rows, contributions, out)


def _one_hot_kernel(backend, self, num_classes=-1):
    if self.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    values = None if backend.xp is None else backend.array(self)
    if values is not None and values.size and values.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if values is None:
            raise RuntimeError("one_hot: num_classes must be given for meta tensors (the size depends on the data)")
        if not values.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(values.max()) + 1
    elif values is not None and values.size and values.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = backend.empty(self._size + (num_classes,), dt.int64)
    if values is not None:
        backend.xp.equal(values[..., None], backend.xp.arange(num_classes), out=backend.array(out),
                         casting="unsafe")
    return out


custom("one_hot(Tensor self, int num_classes=-1) -> Tensor", _one_hot_kernel, _one_hot_kernel, method=False)


@overridable
def one_hot(tensor, num_classes=-1):
    """int64 tensor with a trailing dim of num_classes (default: max + 1), 1 at each value's class."""
    return _op("one_hot", tensor, num_classes)


# ---- distances and attention -----------------------------------------------------------------------------------

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Σ (x1 / max(‖x1‖, eps)) (x2 / max(‖x2‖, eps)) along dim, the inputs broadcast together."""
    _require_tensor("cosine_similarity", x1)
    _require_tensor("cosine_similarity", x2, 2, "x2")
    x1, x2 = _COMPOSITES["broadcast_tensors"](x1, x2)  # the norms are taken over the broadcast shape
    norm1 = _op("linalg_vector_norm", x1, 2, [dim], True, None).clamp(min=eps)
    norm2 = _op("linalg_vector_norm", x2, 2, [dim], True, None).clamp(min=eps)
    return ((x1 / norm1) * (x2 / norm2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """‖x1 - x2 + eps‖_p along the last dim."""
    _require_tensor("pairwise_distance", x1)
    _require_tensor("pairwise_distance", x2, 2, "x2")
    last = max(x1.dim(), x2.dim()) - 1
    return _op("linalg_vector_norm", x1 - x2 + eps, p, [last], keepdim, None)


@overridable
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q kᵀ * scale + mask) v; a bool mask keeps where True, a float mask is added; is_causal masks the
    future. dropout_p applies dropout to the attention weights (pass 0 in evaluation, as modules do)."""
    length, source = query._size[-2], key._size[-2]
    if enable_gqa and query.dim() >= 3 and key._size[-3] != query._size[-3]:
        groups = query._size[-3] // key._size[-3]
        key = key.repeat_interleave(groups, -3)
        value = value.repeat_interleave(groups, -3)
    scale = 1 / math.sqrt(query._size[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        causal = _op("ones", (length, source), dt.bool, None, query.device, None, False, None).tril()
        scores = _where(causal, scores, float("-inf"))
    elif attn_mask is not None:
        scores = _where(attn_mask, scores, float("-inf")) if attn_mask.dtype is dt.bool else scores + attn_mask
    weights = _op("softmax", scores, -1, None)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)


def _top_dropout(input, p, train):
    return dropout(input, p, train)


def _top_alpha_dropout(input, p, train):
    return alpha_dropout(input, p, train)


for _name, _fn in (("dropout", _top_dropout), ("alpha_dropout", _top_alpha_dropout),
                   ("cosine_similarity", cosine_similarity), ("pairwise_distance", pairwise_distance),
                   ("bilinear", bilinear)):
    composite(_name, _fn, method=False)

# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

def _embedding_double_backward(grad, indices, padding_idx, scale_grad_by_freq, num_weights):
    """embedding_dense_backward is linear in grad_output: its gradient reads grad's rows back, weighted alike."""
    rows = _op("embedding", grad, indices, -1, False, False)
    if padding_idx >= 0:
        rows = _where((indices != padding_idx).unsqueeze(-1), rows, 0.0)
    if scale_grad_by_freq:
        counts = _op("one_hot", indices.reshape(-1).long(), num_weights).sum(0)
        rows = rows / _op("index.Tensor", counts, [indices]).unsqueeze(-1).to(rows.dtype)
    return rows


_HELPERS = {name: globals()[name] for name in (
    "_op", "_embedding_double_backward",
)}

derivative("embedding", weight="embedding_sparse_backward(grad, indices, weight_meta.size[0], padding_idx, "
                              "scale_grad_by_freq) if sparse else _op('embedding_dense_backward', grad, indices, "
                              "weight_meta.size[0], padding_idx, scale_grad_by_freq)",
           helpers={**_HELPERS, "embedding_sparse_backward": embedding_sparse_backward})
derivative("embedding_dense_backward", grad_output="_embedding_double_backward(grad, indices, padding_idx, "
                                                   "scale_grad_by_freq, num_weights)", helpers=_HELPERS)
nondifferentiable("one_hot")
