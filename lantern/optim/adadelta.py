"""Adadelta: steps sized by the ratio of running RMS of updates and of gradients (torch.optim.Adadelta).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.Adadelta([w])
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w
tensor([ 0.9968, -1.9968], requires_grad=True)
"""
import lantern
from .optimizer import Optimizer
from ._common import (_closure_loss, _init_group, _new_scalar, _no_grad_unless_differentiable, _to_scalar,
                      _update_grad, _validate, _value)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """v ← ρ·v + (1−ρ)·g², Δ ← √(u + eps)/√(v + eps)·g, u ← ρ·u + (1−ρ)·Δ², p ← p − lr·Δ.
    State: `step`, `square_avg` (v) and `acc_delta` (u)."""

    _group_flag_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _validate(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _new_state(self, p, group):
        return {"step": _new_scalar(), "square_avg": lantern.zeros_like(p), "acc_delta": lantern.zeros_like(p)}

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One Adadelta update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, states = _init_group(self, group, "Adadelta")
            adadelta(params, grads, [s["square_avg"] for s in states], [s["acc_delta"] for s in states],
                     [s["step"] for s in states], foreach=group["foreach"], differentiable=group["differentiable"],
                     lr=group["lr"], rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
                     maximize=group["maximize"])
        return loss


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False, foreach=None,
             differentiable=False, has_complex=False, *, lr, rho, eps, weight_decay, maximize):
    """Functional Adadelta (torch.optim.adadelta.adadelta). lantern has no multi-tensor Adadelta: every `foreach`
    runs `_single_tensor_adadelta`."""
    _single_tensor_adadelta(params, grads, square_avgs, acc_deltas, state_steps, lr=lr, rho=rho, eps=eps,
                            weight_decay=weight_decay, maximize=maximize)


def _single_tensor_adadelta(params, grads, square_avgs, acc_deltas, state_steps, *, lr, rho, eps, weight_decay,
                            maximize):
    """The readable Adadelta update, one parameter at a time (torch's `_single_tensor_adadelta`)."""
    lr = _value(_to_scalar(lr))
    for param, grad, square_avg, acc_delta, step_t in zip(params, grads, square_avgs, acc_deltas, state_steps):
        step_t.add_(1)
        grad = _update_grad(param, grad, maximize, weight_decay)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-lr)
