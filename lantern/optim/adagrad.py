"""Adagrad: per-coordinate steps scaled by the root of the summed squared gradients (torch.optim.Adagrad).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.Adagrad([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w, opt.state[w]['sum']
(tensor([ 0.9000, -1.9000], requires_grad=True), tensor([0.2500, 1.0000]))
"""
import lantern
from .optimizer import Optimizer
from ._common import (_check_fused, _closure_loss, _init_state, _new_scalar, _no_grad_unless_differentiable,
                      _params_with_grad, _to_scalar, _validate, _value)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """s ← s + g², p ← p − clr·g/(√s + eps) with clr = lr/(1 + (t−1)·lr_decay). State (made for every
    parameter at construction): `step` and `sum`, which starts at initial_accumulator_value."""

    _group_flag_defaults = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _validate(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                  initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                _init_state(self, p, group, "Adagrad")

    def _new_state(self, p, group):
        # torch reads the accumulator's start from the optimizer's defaults, not from the group
        return {"step": _new_scalar(fused=group["fused"]),
                "sum": lantern.full_like(p, self.defaults["initial_accumulator_value"])}

    def share_memory(self):
        """Move every `sum` accumulator to shared memory."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One Adagrad update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            lr_decay, eps = group["lr_decay"], group["eps"]
            for p, grad, state in _params_with_grad(self, group, "Adagrad", sparse_hint=" in lantern"):
                clr = _value(lr / (1 + (state["step"].item() - 1) * lr_decay))
                state_sum = state["sum"]
                state_sum.addcmul_(grad, grad, value=1)
                p.addcdiv_(grad, state_sum.sqrt().add_(eps), value=-clr)
        return loss
