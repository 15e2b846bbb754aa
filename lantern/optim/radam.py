"""RAdam: Adam with a rectifier that turns the adaptive step off while the variance estimate is unreliable
(torch.optim.RAdam).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.RAdam([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w
tensor([ 0.9500, -1.9000], requires_grad=True)
"""
import lantern
from .optimizer import Optimizer
from ._common import (_closure_loss, _new_scalar, _no_grad_unless_differentiable, _params_with_grad, _to_scalar,
                      _validate)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """m̂ = m/(1−β1ᵗ); while ρₜ ≤ 5 the step is lr·m̂ (SGD with momentum), afterwards lr·m̂·r·√(1−β2ᵗ)/(√v + eps)
    with the rectification r. State: `step`, `exp_avg`, `exp_avg_sq`."""

    _group_flag_defaults = {"foreach": None, "maximize": False, "differentiable": False,
                            "decoupled_weight_decay": False, "capturable": False}
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _validate(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _new_state(self, p, group):
        return {"step": _new_scalar(), "exp_avg": lantern.zeros_like(p), "exp_avg_sq": lantern.zeros_like(p)}

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One RAdam update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            rho_inf = 2 / (1 - beta2) - 1
            for p, grad, state in _params_with_grad(self, group, "RAdam",
                                                    decoupled_weight_decay=group["decoupled_weight_decay"]):
                step = state["step"].item()
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
