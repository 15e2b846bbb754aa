"""ASGD: averaged stochastic gradient descent (torch.optim.ASGD).

SGD with a decaying step size eta and a weight decay lambd, which also keeps `ax`, a running average of the
parameter's values (Polyak averaging) once `t0` steps have passed.

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.ASGD([w], lr=0.1, t0=1)
>>> for _ in range(4):
...     w.grad = w.detach().clone(); opt.step()
>>> w, opt.state[w]['ax']
(tensor([ 0.6561, -1.3121], requires_grad=True), tensor([ 0.6925, -1.3851]))
>>> sorted(opt.state[w])
['ax', 'eta', 'mu', 'step']
"""
import lantern
from .optimizer import Optimizer
from ._common import (_as_real, _closure_loss, _init_group, _new_scalar, _no_grad_unless_differentiable,
                      _to_scalar, _update_grad, _validate, _value)

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """p ← p·(1 − lambd·eta) − eta·g; ax ← p while mu = 1, then ax ← ax + mu·(p − ax);
    eta ← lr / (1 + lambd·lr·t)^alpha and mu ← 1 / max(1, t − t0) after step t.
    State: `step`, `eta`, `mu` (scalar tensors) and `ax`."""

    _group_flag_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _scalar_state_keys = ("step", "eta", "mu")

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _validate(lr=lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _new_state(self, p, group):
        return {"step": _new_scalar(), "eta": _new_scalar(_value(_to_scalar(group["lr"]))),
                "mu": _new_scalar(1.0), "ax": lantern.zeros_like(p)}

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One ASGD update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, states = _init_group(self, group, "ASGD", complex_ok=True)
            asgd(params, grads, [s["ax"] for s in states], [s["mu"] for s in states], [s["eta"] for s in states],
                 [s["step"] for s in states], foreach=group["foreach"], maximize=group["maximize"],
                 differentiable=group["differentiable"], lambd=group["lambd"], lr=group["lr"], t0=group["t0"],
                 alpha=group["alpha"], weight_decay=group["weight_decay"])
        return loss


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False, differentiable=False,
         capturable=False, has_complex=False, *, lambd, lr, t0, alpha, weight_decay):
    """Functional ASGD (torch.optim.asgd.asgd). lantern has no multi-tensor ASGD: every `foreach` runs
    `_single_tensor_asgd`."""
    _single_tensor_asgd(params, grads, axs, mus, etas, state_steps, lambd=lambd, lr=lr, t0=t0, alpha=alpha,
                        weight_decay=weight_decay, maximize=maximize)


def _single_tensor_asgd(params, grads, axs, mus, etas, state_steps, *, lambd, lr, t0, alpha, weight_decay,
                        maximize):
    """The readable ASGD update, one parameter at a time (torch's `_single_tensor_asgd`)."""
    lr = _to_scalar(lr)
    for param, grad, ax, mu, eta, step_t in zip(params, grads, axs, mus, etas, state_steps):
        param, grad, ax = _as_real(param, -grad if maximize else grad, ax)
        step_t.add_(1)
        grad = _update_grad(param, grad, False, weight_decay)
        eta_value = eta.item()
        param.mul_(1 - lambd * eta_value)
        param.add_(grad, alpha=-eta_value)
        if mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)
        step = step_t.item()
        eta.copy_(lantern.as_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
        mu.copy_(lantern.as_tensor(1 / max(1, step - t0)))
