"""Muon: momentum SGD whose update matrix is orthogonalized by a Newton–Schulz iteration (torch.optim.Muon, from
torch.optim._muon).

For each 2-D parameter: the momentum buffer B ← lerp(B, g, 1 − momentum); the update (g lerped towards B by
momentum under Nesterov, else B) is replaced by an approximation of its orthogonal factor U·Vᵀ, computed in bfloat16
as torch does; then decoupled weight decay and p ← p − lr'·update, where lr' scales lr by the matrix's shape
(`adjust_lr_fn`).

>>> import lantern
>>> w = lantern.tensor([[1., 0.], [0., 2.]], requires_grad=True)
>>> opt = lantern.optim.Muon([w], lr=0.1, weight_decay=0.0)
>>> w.grad = lantern.tensor([[3., 0.], [0., 1.]]); opt.step()
>>> w
tensor([[0.9250, 0.0000],
        [0.0000, 1.8867]], requires_grad=True)
"""
import math

import lantern
from .optimizer import Optimizer
from ._common import _closure_loss, _init_group, _to_scalar

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """A bfloat16 matrix near grad's orthogonal factor U·Vᵀ (grad = U·S·Vᵀ): X ← X / ‖X‖, then `ns_steps` times
    X ← a·X + (b·A + c·A²)·X with A = X·Xᵀ, on the wide orientation of the matrix. The quintic's coefficients
    push every singular value towards 1 quickly rather than exactly (they end up roughly in [0.5, 1.5])."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    x = grad.bfloat16()
    if tall:
        x = x.T
    x.div_(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        polynomial = lantern.addmm(gram, gram, gram, beta=b, alpha=c)
        x = lantern.addmm(x, polynomial, x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """lr scaled for an A×B matrix: by √max(1, A/B) ("original", the default), or by 0.2·√max(A, B)
    ("match_rms_adamw": an update RMS like AdamW's)."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon for 2-D parameters only (give biases and embeddings to another optimizer such as AdamW).
    State: `momentum_buffer`."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        if isinstance(lr, lantern.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _new_state(self, p, group):
        return {"momentum_buffer": lantern.zeros_like(p.grad)}

    @lantern.no_grad()
    def step(self, closure=None):
        """One Muon update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, states = _init_group(self, group, "Muon", complex_is_error=True)
            muon(params, grads, [s["momentum_buffer"] for s in states], lr=group["lr"],
                 weight_decay=group["weight_decay"], momentum=group["momentum"], nesterov=group["nesterov"],
                 ns_coefficients=group["ns_coefficients"], eps=group["eps"], ns_steps=group["ns_steps"],
                 adjust_lr_fn=group["adjust_lr_fn"], has_complex=False)
        return loss


def muon(params, grads, muon_momentum_bufs, *, foreach=None, lr, weight_decay, momentum, nesterov, ns_coefficients,
         ns_steps, eps, adjust_lr_fn, has_complex):
    """Functional Muon (torch.optim._muon.muon); like torch, it has no `foreach` form."""
    if foreach:
        raise RuntimeError("Foreach is not supported for Muon yet")
    _single_tensor_muon(params, grads, muon_momentum_bufs, lr=lr, weight_decay=weight_decay, momentum=momentum,
                        nesterov=nesterov, ns_coefficients=ns_coefficients, ns_steps=ns_steps, eps=eps,
                        adjust_lr_fn=adjust_lr_fn, has_complex=has_complex)


def _single_tensor_muon(params, grads, muon_momentum_bufs, *, lr, weight_decay, momentum, nesterov,
                        ns_coefficients, ns_steps, eps, adjust_lr_fn, has_complex):
    """The readable Muon update, one parameter at a time (torch's `_single_tensor_muon`)."""
    lr = _to_scalar(lr)
    if has_complex:
        raise ValueError("Complex parameters are not supported")
    for param, grad, buf in zip(params, grads, muon_momentum_bufs):
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if nesterov else buf
        update = _zeropower_via_newtonschulz(update, ns_coefficients, ns_steps, eps)
        param.mul_(1 - lr * weight_decay)
        param.add_(update, alpha=-_adjust_lr(lr, adjust_lr_fn, param.shape))
