"""Adagrad: per-coordinate steps scaled by the root of the summed squared gradients (torch.optim.Adagrad).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.Adagrad([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w, opt.state[w]['sum']
(tensor([ 0.9000, -1.9000], requires_grad=True), tensor([0.2500, 1.0000]))
"""
from .optimizer import (Optimizer, _check_lr, _closure_loss, _new_scalar, _no_grad_unless_differentiable,
                        _refuse_complex, _scalars_to_tensors, _to_scalar, _value)
import lantern

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """s ← s + g², p ← p − clr·g/(√s + eps) with clr = lr/(1 + (t−1)·lr_decay). State (made for every
    parameter at construction): `step` and `sum`, which starts at initial_accumulator_value."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        _refuse_complex(p, "Adagrad")
        state = self.state[p]
        state["step"] = lantern.tensor(0.0, dtype=lantern.float32) if group["fused"] else _new_scalar()
        # torch reads the accumulator's start from the optimizer's defaults, not from the group
        init = self.defaults["initial_accumulator_value"]
        state["sum"] = lantern.full_like(p, init)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
        _scalars_to_tensors(self)

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
            lr_decay, eps, weight_decay, maximize = (group["lr_decay"], group["eps"], group["weight_decay"],
                                                     group["maximize"])
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if grad.is_sparse:
                    raise RuntimeError("Adagrad does not support sparse gradients in lantern")
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(p, group)
                step_t = state["step"]
                step_t.add_(1)
                step = step_t.item()
                if maximize:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                clr = _value(lr / (1 + (step - 1) * lr_decay))
                state_sum = state["sum"]
                state_sum.addcmul_(grad, grad, value=1)
                p.addcdiv_(grad, state_sum.sqrt().add_(eps), value=-clr)
        return loss
