"""Helpers shared by the distributions (torch.distributions.utils)."""
import numbers

import lantern

__all__ = ["broadcast_all", "clamp_probs", "logits_to_probs", "probs_to_logits"]


def broadcast_all(*values):
    """Tensors of one shape from tensors and Python numbers (numbers take the default dtype, or the tensors')."""
    if not all(isinstance(v, (lantern.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    tensors = [v for v in values if isinstance(v, lantern.Tensor)]
    dtype = tensors[0].dtype if tensors else lantern.get_default_dtype()
    as_tensors = [v if isinstance(v, lantern.Tensor) else lantern.tensor(v, dtype=dtype) for v in values]
    return lantern.broadcast_tensors(*as_tensors)


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
