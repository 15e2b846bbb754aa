"""RAdam: Adam with a rectifier that turns the adaptive step off while the variance estimate is unreliable
(torch.optim.RAdam).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.RAdam([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w
tensor([ 0.9500, -1.9000], requires_grad=True)
"""
from .optimizer import (Optimizer, _check_betas, _check_lr, _closure_loss, _new_scalar, _no_grad_unless_differentiable,
                        _refuse_complex, _scalars_to_tensors, _to_scalar, _value)
import lantern

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """m̂ = m/(1−β1ᵗ); while ρₜ ≤ 5 the step is lr·m̂ (SGD with momentum), afterwards lr·m̂·r·√(1−β2ᵗ)/(√v + eps)
    with the rectification r. State: `step`, `exp_avg`, `exp_avg_sq`."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)
        _scalars_to_tensors(self)

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One RAdam update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, weight_decay = group["eps"], group["weight_decay"]
            decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
            rho_inf = 2 / (1 - beta2) - 1
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if grad.is_sparse:
                    raise RuntimeError("RAdam does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    _refuse_complex(p, "RAdam")
                    state["step"] = _new_scalar()
                    state["exp_avg"] = lantern.zeros_like(p)
                    state["exp_avg_sq"] = lantern.zeros_like(p)
                if maximize:
                    grad = -grad
                step_t = state["step"]
                step_t.add_(1)
                step = step_t.item()
                if weight_decay != 0:
                    if decoupled:
                        p.mul_(_value(1 - lr * weight_decay))
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                update = (exp_avg / bias_correction1).mul_(lr)
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    update.mul_(bias_correction2 ** 0.5 / exp_avg_sq.sqrt().add_(eps)).mul_(rect)
                p.add_(update, alpha=-1.0)
        return loss
