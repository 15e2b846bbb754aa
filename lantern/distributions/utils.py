"""Helpers shared by the distributions (torch.distributions.utils).

>>> import lantern
>>> from lantern.distributions.utils import vec_to_tril_matrix, tril_matrix_to_vec
>>> m = vec_to_tril_matrix(lantern.tensor([1.0, 2.0, 3.0]))
>>> m.tolist(), tril_matrix_to_vec(m).tolist()
([[1.0, 0.0], [2.0, 3.0]], [1.0, 2.0, 3.0])
"""
import functools
import numbers

import lantern

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values):
    """Tensors of one shape from tensors and Python numbers (numbers take the default dtype, or the tensors')."""
    if not all(isinstance(v, (lantern.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    tensors = [v for v in values if isinstance(v, lantern.Tensor)]
    dtype = tensors[0].dtype if tensors else lantern.get_default_dtype()
    as_tensors = [v if isinstance(v, lantern.Tensor) else lantern.tensor(v, dtype=dtype) for v in values]
    return lantern.broadcast_tensors(*as_tensors)


def _standard_normal(shape, dtype, device):
    return lantern.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """value summed over its `dim` rightmost dims (unchanged for dim 0)."""
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1) if dim > 0 else value


def _probs_or_logits(dist, probs, logits, *others):
    """Set the one of dist.probs and dist.logits given (the other is a lazy_property, derived on first use),
    broadcast with `others` as broadcast_all does; returns (*others, the parameter), broadcast."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    name, given = ("probs", probs) if probs is not None else ("logits", logits)
    broadcast = broadcast_all(*others, given)
    setattr(dist, name, broadcast[-1])
    return broadcast


def clamp_probs(probs):
    """Probabilities kept inside (eps, 1 - eps) of their dtype, so their logs are finite."""
    eps = lantern.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Log-probabilities (or, for one binary event, log-odds) from probabilities."""
    clamped = clamp_probs(probs)
    return clamped.log() - (-clamped).log1p() if is_binary else clamped.log()


def logits_to_probs(logits, is_binary=False):
    """Probabilities from log-odds (sigmoid) or from unnormalised log-probabilities (softmax over the last dim)."""
    return logits.sigmoid() if is_binary else lantern.softmax(logits, -1)


class lazy_property:
    """A property computed on first access and then stored on the instance (under grad mode, so a value derived
    from parameters that require grad keeps its graph). Distributions use it for the parameterisation not given:
    Categorical(logits=...).probs."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with lantern.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _tril_mask(n, diag, device):
    return lantern.ones(n, n, dtype=lantern.bool, device=device).tril(diag)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (below diagonal `diag`) of the last two dims, row by row, as a vector."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of tril_matrix_to_vec: a square matrix whose lower triangle holds vec, zeros elsewhere."""
    m = vec.shape[-1]
    n = round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2)
    mask = _tril_mask(n, diag, vec.device)
    if int(mask.sum()) != m:
        raise ValueError("Incorrect size of vec.")
    mat = vec.new_zeros(vec.shape[:-1] + (n, n))
    mat[..., mask] = vec
    return mat
