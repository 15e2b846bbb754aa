"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule (torch.optim.NAdam).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.NAdam([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w, opt.state[w]['mu_product']
(tensor([ 0.8944, -1.8944], requires_grad=True), tensor(0.4501))
"""
import lantern
from .optimizer import Optimizer
from ._common import (_closure_loss, _decay_param, _init_group, _new_scalar, _no_grad_unless_differentiable,
                      _to_scalar, _update_grad, _validate, _value)

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    """Adam whose update mixes the current gradient and the momentum with the schedule
    μₜ = β1·(1 − ½·0.96^(t·momentum_decay)). State: `step`, `mu_product` (∏μ, a scalar tensor), `exp_avg`,
    `exp_avg_sq`; decoupled_weight_decay=True scales p by 1 − lr·λ instead of adding λ·p to g."""

    _group_flag_defaults = {"maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                            "decoupled_weight_decay": False}
    _scalar_state_keys = ("step", "mu_product")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _validate(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _new_state(self, p, group):
        return {"step": _new_scalar(), "mu_product": _new_scalar(1.0),
                "exp_avg": lantern.zeros_like(p), "exp_avg_sq": lantern.zeros_like(p)}

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One NAdam update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, states = _init_group(self, group, "NAdam")
            beta1, beta2 = group["betas"]
            nadam(params, grads, [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                  [s["mu_product"] for s in states], [s["step"] for s in states],
                  decoupled_weight_decay=group["decoupled_weight_decay"], foreach=group["foreach"],
                  differentiable=group["differentiable"], maximize=group["maximize"], beta1=beta1, beta2=beta2,
                  lr=group["lr"], weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"],
                  eps=group["eps"])
        return loss


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, decoupled_weight_decay=False,
          foreach=None, capturable=False, differentiable=False, has_complex=False, maximize=False, *, beta1, beta2,
          lr, weight_decay, momentum_decay, eps):
    """Functional NAdam (torch.optim.nadam.nadam). lantern has no multi-tensor NAdam: every `foreach` runs
    `_single_tensor_nadam`."""
    _single_tensor_nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, beta1=beta1, beta2=beta2,
                         lr=lr, weight_decay=weight_decay, momentum_decay=momentum_decay, eps=eps,
                         decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)


def _single_tensor_nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, *, beta1, beta2, lr,
                         weight_decay, momentum_decay, eps, decoupled_weight_decay, maximize):
    """The readable NAdam update, one parameter at a time (torch's `_single_tensor_nadam`)."""
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step = step_t.add_(1).item()
        if decoupled_weight_decay:
            _decay_param(param, lr, weight_decay)
        grad = _update_grad(param, grads[i], maximize, 0 if decoupled_weight_decay else weight_decay)
        bias_correction2 = 1 - beta2 ** step
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product = mu_products[i].mul_(mu).item()
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt_().add_(eps)
        param.addcdiv_(grad, denom, value=_value(-lr * (1.0 - mu) / (1.0 - mu_product)))
        param.addcdiv_(exp_avg, denom, value=_value((-lr * mu_next) / (1.0 - mu_product * mu_next)))
