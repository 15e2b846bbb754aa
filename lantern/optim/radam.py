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
from ._common import (_closure_loss, _decay_param, _init_group, _new_scalar, _no_grad_unless_differentiable,
                      _to_scalar, _update_grad, _validate)

__all__ = ["RAdam", "radam"]


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
            params, grads, states = _init_group(self, group, "RAdam")
            beta1, beta2 = group["betas"]
            radam(params, grads, [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                  [s["step"] for s in states], decoupled_weight_decay=group["decoupled_weight_decay"],
                  foreach=group["foreach"], differentiable=group["differentiable"], maximize=group["maximize"],
                  beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"])
        return loss


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False, foreach=None,
          differentiable=False, capturable=False, has_complex=False, maximize=False, *, beta1, beta2, lr,
          weight_decay, eps):
    """Functional RAdam (torch.optim.radam.radam). lantern has no multi-tensor RAdam: every `foreach` runs
    `_single_tensor_radam`."""
    _single_tensor_radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1=beta1, beta2=beta2, lr=lr,
                         weight_decay=weight_decay, eps=eps, decoupled_weight_decay=decoupled_weight_decay,
                         maximize=maximize)


def _single_tensor_radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, beta1, beta2, lr, weight_decay, eps,
                         decoupled_weight_decay, maximize):
    """The readable RAdam update, one parameter at a time (torch's `_single_tensor_radam`)."""
    lr = _to_scalar(lr)
    rho_inf = 2 / (1 - beta2) - 1
    for param, grad, exp_avg, exp_avg_sq, step_t in zip(params, grads, exp_avgs, exp_avg_sqs, state_steps):
        step = step_t.add_(1).item()
        if decoupled_weight_decay:
            _decay_param(param, lr, weight_decay)
        grad = _update_grad(param, grad, maximize, 0 if decoupled_weight_decay else weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        update = (exp_avg / bias_correction1).mul_(lr)
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            update.mul_(bias_correction2 ** 0.5 / exp_avg_sq.sqrt().add_(eps)).mul_(rect)
        param.add_(update, alpha=-1.0)
