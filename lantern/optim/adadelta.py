"""Adadelta: steps sized by the ratio of running RMS of updates and of gradients (torch.optim.Adadelta).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.Adadelta([w])
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w
tensor([ 0.9968, -1.9968], requires_grad=True)
"""
from .optimizer import (Optimizer, _check_lr, _closure_loss, _new_scalar, _no_grad_unless_differentiable,
                        _refuse_complex, _scalars_to_tensors, _to_scalar, _value)
import lantern

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """v ← ρ·v + (1−ρ)·g², Δ ← √(u + eps)/√(v + eps)·g, u ← ρ·u + (1−ρ)·Δ², p ← p − lr·Δ.
    State: `step`, `square_avg` (v) and `acc_delta` (u)."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        _scalars_to_tensors(self)

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One Adadelta update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _value(_to_scalar(group["lr"]))
            rho, eps, weight_decay, maximize = group["rho"], group["eps"], group["weight_decay"], group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if grad.is_sparse:
                    raise RuntimeError("Adadelta does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    _refuse_complex(p, "Adadelta")
                    state["step"] = _new_scalar()
                    state["square_avg"] = lantern.zeros_like(p)
                    state["acc_delta"] = lantern.zeros_like(p)
                state["step"].add_(1)
                if maximize:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
