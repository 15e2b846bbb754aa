"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule (torch.optim.NAdam).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.NAdam([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w, opt.state[w]['mu_product']
(tensor([ 0.8944, -1.8944], requires_grad=True), tensor(0.4501))
"""
from .optimizer import (Optimizer, _check_betas, _check_lr, _closure_loss, _new_scalar, _no_grad_unless_differentiable,
                        _refuse_complex, _scalars_to_tensors, _to_scalar, _value)
import lantern

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """Adam whose update mixes the current gradient and the momentum with the schedule
    μₜ = β1·(1 − ½·0.96^(t·momentum_decay)). State: `step`, `mu_product` (∏μ, a scalar tensor), `exp_avg`,
    `exp_avg_sq`; decoupled_weight_decay=True scales p by 1 − lr·λ instead of adding λ·p to g."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
        _scalars_to_tensors(self, ("step", "mu_product"))

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One NAdam update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, weight_decay, momentum_decay = group["eps"], group["weight_decay"], group["momentum_decay"]
            decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if grad.is_sparse:
                    raise RuntimeError("NAdam does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    _refuse_complex(p, "NAdam")
                    state["step"] = _new_scalar()
                    state["mu_product"] = _new_scalar(1.0)
                    state["exp_avg"] = lantern.zeros_like(p)
                    state["exp_avg_sq"] = lantern.zeros_like(p)
                if maximize:
                    grad = -grad
                step_t = state["step"]
                step_t.add_(1)
                step = step_t.item()
                bias_correction2 = 1 - beta2 ** step
                if weight_decay != 0:
                    if decoupled:
                        p.mul_(_value(1 - lr * weight_decay))
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product_t = state["mu_product"]
                mu_product = mu_product_t.mul_(mu).item()
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt_().add_(eps)
                p.addcdiv_(grad, denom, value=_value(-lr * (1.0 - mu) / (1.0 - mu_product)))
                p.addcdiv_(exp_avg, denom, value=_value((-lr * mu_next) / (1.0 - mu_product * mu_next)))
        return loss
