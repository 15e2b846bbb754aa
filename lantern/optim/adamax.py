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
from ._common import (_closure_loss, _init_group, _new_scalar, _no_grad_unless_differentiable, _to_scalar,
                      _update_grad, _validate, _value)

__all__ = ["Adamax", "adamax"]


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
            params, grads, states = _init_group(self, group, "Adamax")
            beta1, beta2 = group["betas"]
            adamax(params, grads, [s["exp_avg"] for s in states], [s["exp_inf"] for s in states],
                   [s["step"] for s in states], foreach=group["foreach"], maximize=group["maximize"],
                   differentiable=group["differentiable"], eps=group["eps"], beta1=beta1, beta2=beta2,
                   lr=group["lr"], weight_decay=group["weight_decay"])
        return loss


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False, differentiable=False,
           capturable=False, has_complex=False, *, eps, beta1, beta2, lr, weight_decay):
    """Functional Adamax (torch.optim.adamax.adamax). lantern has no multi-tensor Adamax: every `foreach` runs
    `_single_tensor_adamax`."""
    _single_tensor_adamax(params, grads, exp_avgs, exp_infs, state_steps, eps=eps, beta1=beta1, beta2=beta2, lr=lr,
                          weight_decay=weight_decay, maximize=maximize)


def _single_tensor_adamax(params, grads, exp_avgs, exp_infs, state_steps, *, eps, beta1, beta2, lr, weight_decay,
                          maximize):
    """The readable Adamax update, one parameter at a time (torch's `_single_tensor_adamax`)."""
    lr = _to_scalar(lr)
    for param, grad, exp_avg, exp_inf, step_t in zip(params, grads, exp_avgs, exp_infs, state_steps):
        step_t.add_(1)
        grad = _update_grad(param, grad, maximize, weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        lantern.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
        clr = _value(lr / (1 - beta1 ** step_t.item()))
        param.addcdiv_(exp_avg, exp_inf, value=-clr)
