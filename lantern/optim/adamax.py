"""Adamax: Adam with the infinity norm in place of the second moment (torch.optim.Adamax).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.Adamax([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w, opt.state[w]['exp_inf']
(tensor([ 0.9000, -1.9000], requires_grad=True), tensor([0.5000, 1.0000]))
"""
from .optimizer import (Optimizer, _check_betas, _check_lr, _closure_loss, _new_scalar, _no_grad_unless_differentiable,
                        _refuse_complex, _scalars_to_tensors, _to_scalar, _value)
import lantern

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """m ← β1·m + (1−β1)·g, u ← max(β2·u, |g| + eps), p ← p − lr/(1−β1ᵗ)·m/u.
    State: `step`, `exp_avg` (m) and `exp_inf` (u)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
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
        """One Adamax update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, weight_decay, maximize = group["eps"], group["weight_decay"], group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if grad.is_sparse:
                    raise RuntimeError("Adamax does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    _refuse_complex(p, "Adamax")
                    state["step"] = _new_scalar()
                    state["exp_avg"] = lantern.zeros_like(p)
                    state["exp_inf"] = lantern.zeros_like(p)
                if maximize:
                    grad = -grad
                step_t = state["step"]
                step_t.add_(1)
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(grad, 1 - beta1)
                lantern.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
                clr = _value(lr / (1 - beta1 ** step_t.item()))
                p.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
