"""Adamax: Adam with the infinity norm in place of the second moment (torch.optim.Adamax).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.Adamax([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w, opt.state[w]['exp_inf']
(tensor([ 0.9000, -1.9000], requires_grad=True), tensor([0.5000, 1.0000]))
"""
import lantern
from .optimizer import Optimizer
from ._common import (_closure_loss, _new_scalar, _no_grad_unless_differentiable, _params_with_grad, _to_scalar,
                      _validate, _value)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """m ← β1·m + (1−β1)·g, u ← max(β2·u, |g| + eps), p ← p − lr/(1−β1ᵗ)·m/u.
    State: `step`, `exp_avg` (m) and `exp_inf` (u)."""

    _group_flag_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _validate(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _new_state(self, p, group):
        return {"step": _new_scalar(), "exp_avg": lantern.zeros_like(p), "exp_inf": lantern.zeros_like(p)}

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One Adamax update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            for p, grad, state in _params_with_grad(self, group, "Adamax"):
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(grad, 1 - beta1)
                lantern.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
                clr = _value(lr / (1 - beta1 ** state["step"].item()))
                p.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
