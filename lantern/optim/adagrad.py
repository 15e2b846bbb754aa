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
from ._sparse import refuse_sparse_weight_decay, sparse_adagrad_update
from ._common import (_check_fused, _closure_loss, _init_group, _init_state, _new_scalar,
                      _no_grad_unless_differentiable, _refuse_grad_scaling, _to_scalar, _update_grad, _validate,
                      _value)

__all__ = ["Adagrad", "adagrad"]


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
            params, grads, states = _init_group(self, group, "Adagrad", sparse_ok=True)
            adagrad(params, grads, [s["sum"] for s in states], [s["step"] for s in states], fused=group["fused"],
                    foreach=group["foreach"], differentiable=group["differentiable"], lr=group["lr"],
                    weight_decay=group["weight_decay"], lr_decay=group["lr_decay"], eps=group["eps"],
                    maximize=group["maximize"])
        return loss


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None, found_inf=None,
            has_sparse_grad=False, foreach=None, differentiable=False, has_complex=False, *, lr, weight_decay,
            lr_decay, eps, maximize):
    """Functional Adagrad (torch.optim.adagrad.adagrad). lantern has no multi-tensor or fused Adagrad: every
    `foreach` runs `_single_tensor_adagrad`."""
    _refuse_grad_scaling(grad_scale, found_inf)
    _single_tensor_adagrad(params, grads, state_sums, state_steps, lr=lr, weight_decay=weight_decay,
                           lr_decay=lr_decay, eps=eps, maximize=maximize)


def _single_tensor_adagrad(params, grads, state_sums, state_steps, *, lr, weight_decay, lr_decay, eps, maximize):
    """The readable Adagrad update, one parameter at a time (torch's `_single_tensor_adagrad`)."""
    lr = _to_scalar(lr)
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t.add_(1)
        refuse_sparse_weight_decay(grad, weight_decay)
        grad = _update_grad(param, grad, maximize, weight_decay)
        clr = _value(lr / (1 + (step_t.item() - 1) * lr_decay))
        if grad.is_sparse:
            sparse_adagrad_update(param, grad, state_sum, clr, eps)
            continue
        state_sum.addcmul_(grad, grad, value=1)
        param.addcdiv_(grad, state_sum.sqrt().add_(eps), value=-clr)
