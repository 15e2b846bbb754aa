"""torch's nn functions at the top level (torch.cosine_embedding_loss, torch.gru_cell, torch.feature_dropout, ...):
ATen's forms of what lantern.nn.functional computes, with ATen's argument conventions.

- A loss takes its reduction as ATen's integer: 0 none, 1 mean, 2 sum. Called without one, torch 2.13's top-level
  losses do not reduce (the binding's default does not parse as Mean), and any other integer reduces nothing
  either; lantern does the same.
- Dropouts take `train` positionally and check p with a RuntimeError (nn.functional's check is a ValueError).
- The RNN cells take their weights as arguments: one step of nn.RNNCell / LSTMCell / GRUCell.

>>> import lantern as torch
>>> a, b, same = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]]), torch.tensor([1.0])
>>> torch.cosine_embedding_loss(a, b, same).tolist(), torch.cosine_embedding_loss(a, b, same, 0.0, 1).item()
([1.0], 1.0)
"""
from .autograd.kernel import _check_inplace_allowed
from .core import dtype as dt
from .core.state import tls
from .core.warn_always import warn_once
from . import linalg
from .nn import functional as F
from .nn.modules.rnn import _gru_cell, _linear, _lstm_cell
from .ops.keyword_aliases import with_keyword_aliases
from .ops.nn_extra import _bag_layout
from .ops.nn_misc import _dropout, _renorm_rows
from .core.overridable import overridable

__all__ = ["cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss",
           "triplet_margin_loss", "ctc_loss", "rrelu", "rrelu_", "dropout_", "alpha_dropout_", "feature_dropout",
           "feature_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "native_dropout", "rnn_tanh_cell",
           "rnn_relu_cell", "lstm_cell", "gru_cell", "frobenius_norm", "nuclear_norm", "norm_except_dim", "conv_tbc",
           "embedding_renorm_", "affine_grid_generator", "embedding_bag"]

_NONE = 0


def _reduction(name, reduction):
    """ATen's reduction integer as nn.functional's name: 1 mean, 2 sum, anything else none."""
    if type(reduction) is not int:
        raise TypeError(f"{name}(): argument 'reduction' must be int, not {type(reduction).__name__}")
    return {1: "mean", 2: "sum"}.get(reduction, "none")


# ---- losses ------------------------------------------------------------------------------------------------------

@overridable
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=_NONE):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


@overridable
def hinge_embedding_loss(input, target, margin=1.0, reduction=_NONE):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


@overridable
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=_NONE):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


@overridable
def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


@overridable
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=_NONE):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


@overridable
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=_NONE, zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction("ctc_loss", reduction),
                      zero_infinity)


# ---- dropouts and rrelu ------------------------------------------------------------------------------------------

def _checked_p(p):
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


@overridable
def dropout_(input, p, train):
    return _dropout(input, _checked_p(p), train, True)


@overridable
def alpha_dropout_(input, p, train):
    return _dropout(input, _checked_p(p), train, True, alpha=True)


@overridable
def feature_dropout(input, p, train):
    """Dropout of whole channels: dim 1 of (N, C, ...), one draw per (sample, channel)."""
    return _dropout(input, _checked_p(p), train, False, feature=True)


@overridable
def feature_dropout_(input, p, train):
    return _dropout(input, _checked_p(p), train, True, feature=True)


@overridable
def feature_alpha_dropout(input, p, train):
    return _dropout(input, _checked_p(p), train, False, feature=True, alpha=True)


@overridable
def feature_alpha_dropout_(input, p, train):
    return _dropout(input, _checked_p(p), train, True, feature=True, alpha=True)


@overridable
def native_dropout(input, p, train):
    """(output, keep mask): training draws a bool bernoulli(1 - p) mask and scales what it keeps by 1 / (1 - p);
    otherwise the output is a copy of input and the mask all True."""
    if not train:
        return input.clone(), input.new_ones(input.shape, dtype=dt.bool)
    keep = 1 - p
    mask = input.new_empty(input.shape, dtype=dt.bool).bernoulli_(keep)
    return input * mask * (1 / keep if keep else 0.0), mask


@overridable
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    _no_generator(generator)
    return F.rrelu(input, lower, upper, training)


@overridable
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    _no_generator(generator)
    return F.rrelu_(input, lower, upper, training)


def _no_generator(generator):
    if generator is not None:
        raise NotImplementedError("rrelu with an explicit generator: lantern's rrelu draws from the default "
                                  "generator only")


# ---- recurrent cells ---------------------------------------------------------------------------------------------

def _check_cell(input, hx, w_ih, w_hh):
    if input._size[-1] != w_ih._size[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input._size[-1]} expected {w_ih._size[1]}")
    if hx._size[-1] != w_hh._size[1]:
        raise RuntimeError(f"hidden0 has inconsistent hidden_size: got {hx._size[-1]}, expected {w_hh._size[1]}")


@overridable
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """tanh(input W_ih^T + b_ih + hx W_hh^T + b_hh): one step of an Elman RNN."""
    _check_cell(input, hx, w_ih, w_hh)
    return (_linear(input, w_ih, b_ih) + _linear(hx, w_hh, b_hh)).tanh()


@overridable
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, hx, w_ih, w_hh)
    return (_linear(input, w_ih, b_ih) + _linear(hx, w_hh, b_hh)).relu()


@overridable
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: hx is (h, c); returns the new (h, c)."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    h, c = hx
    _check_cell(input, h, w_ih, w_hh)
    return _lstm_cell(_linear(input, w_ih, b_ih) + _linear(h, w_hh, b_hh), c)


@overridable
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, hx, w_ih, w_hh)
    return _gru_cell(_linear(input, w_ih, b_ih), _linear(hx, w_hh, b_hh), hx)


# ---- norms -------------------------------------------------------------------------------------------------------

@with_keyword_aliases  # axis=, keepdims= as torch's argument parser takes them
def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The 2-norm over `dim` (deprecated by torch: use linalg.vector_norm)."""
    warn_once("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
              "a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
              stacklevel=3)
    return linalg.vector_norm(input, 2.0, dim, keepdim, out=out)


@with_keyword_aliases
def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of the singular values of the matrices over `dim` (the last two dims of a matrix by default;
    deprecated by torch: use linalg.matrix_norm(A, 'nuc'))."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    warn_once("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
              "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
              stacklevel=3)
    return linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, out=out)


@overridable
def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm of each slice of v along `dim`, shaped to broadcast against v (weight_norm's g); dim=-1 is the
    norm of the whole tensor."""
    if dim == -1:
        return v.norm(pow)
    dim = v._wrap_dim(dim)
    shape = [1] * v.dim()
    shape[dim] = v._size[dim]
    if dim == 0:
        return v.contiguous().view(v._size[0], -1).norm(pow, 1).view(shape)
    if dim == v.dim() - 1:
        return v.contiguous().view(-1, v._size[dim]).norm(pow, 0).view(shape)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


# ---- the rest ----------------------------------------------------------------------------------------------------

@overridable
def conv_tbc(input, weight, bias, pad=0):
    """A 1-D convolution over time-major input (time, batch, channels) with weight (kernel, in, out)."""
    if bias is None or not hasattr(bias, "dim"):
        raise TypeError(f"conv_tbc(): argument 'bias' (position 3) must be Tensor, not {type(bias).__name__}")
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1).contiguous()


@overridable
def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale, in place, the rows of `input` that `indices` names whose norm exceeds max_norm (to max_norm)."""
    if tls.grad_enabled:
        _check_inplace_allowed(input)
    _renorm_rows(input, indices, max_norm, norm_type)
    return input


@overridable
def affine_grid_generator(theta, size, align_corners):
    """affine_grid's grid: the sampling positions of the affine maps theta over an output of `size`."""
    return F.affine_grid(theta, size, align_corners)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}
_FAST_SUM_DTYPES = (dt.float32, dt.float16, dt.bfloat16)


@overridable
def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """ATen's embedding_bag: (output, offset2bag, bag_size, max_indices). The output is nn.functional.embedding_bag's
    (mode 0 sum, 1 mean, 2 max); the rest is what ATen's backward reads, laid out as its CPU kernel leaves it:
    - sum: offset2bag the bag of each index, but empty on ATen's fast path (float32 and half-precision weights
      without a padding_idx); bag_size and max_indices zeros, one per offset (one per bag when the weights
      require grad, which takes ATen's differentiable path);
    - mean: offset2bag the bag of each index, bag_size the indices (not padding_idx) in each bag, max_indices the
      same counts;
    - max: offset2bag and bag_size as mean's, max_indices the row each output element came from (0 for an empty
      bag)."""
    if offsets is None or not hasattr(offsets, "dim"):
        raise TypeError(f"embedding_bag(): argument 'offsets' (position 3) must be Tensor, not "
                        f"{type(offsets).__name__}")
    output = F.embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq, _BAG_MODES[mode], sparse,
                             per_sample_weights, include_last_offset, padding_idx)
    _, bag, bags = _bag_layout(indices, offsets, include_last_offset)
    bag = bag.to(indices.dtype)
    if mode == 0:
        fast_path = weight.dtype in _FAST_SUM_DTYPES and padding_idx is None
        offset2bag = indices.new_zeros(0) if fast_path else bag
        recorded = weight.requires_grad or (per_sample_weights is not None and per_sample_weights.requires_grad)
        zeros = indices.new_zeros(bags if recorded else offsets.numel())
        return output, offset2bag, zeros, zeros.clone()
    counted = indices if padding_idx is None else indices != padding_idx % weight._size[0]
    ones = indices.new_ones(indices.numel()) if padding_idx is None else counted.to(indices.dtype)
    bag_size = indices.new_zeros(bags).index_add(0, bag, ones)
    if mode == 1:
        return output, bag, bag_size, bag_size.clone()
    max_indices = indices.new_zeros((bags, weight._size[1]))
    table = weight.detach()
    for b in range(bags):
        members = indices[(bag == b) & (counted if padding_idx is not None else True)]
        if members.numel():
            max_indices[b] = members[table[members].argmax(0)]
    return output, bag, bag_size, max_indices
