"""Rprop: resilient backpropagation, steps of a per-element size that follows only the gradient's sign
(torch.optim.Rprop).

Each element keeps its own step size: it grows by etaplus while the gradient keeps its sign, shrinks by etaminus
when the sign flips (and that element then skips its move), and stays within `step_sizes`.

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.Rprop([w], lr=0.1)
>>> for grad in ([1., -1.], [1., 1.]):
...     w.grad = lantern.tensor(grad); opt.step()
>>> w, opt.state[w]['step_size']
(tensor([ 0.7800, -1.9000], requires_grad=True), tensor([0.1200, 0.0500]))
"""
import lantern
from .optimizer import Optimizer
from ._common import (_as_real, _closure_loss, _init_group, _new_scalar, _no_grad_unless_differentiable,
                      _to_scalar, _validate, _value)

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """s ← clamp(s·η, step_sizes) with η = etaplus where g·g_prev > 0, etaminus where < 0 (g then counts as 0),
    1 where = 0; p ← p − sign(g)·s. State: `step`, `prev` (the last g) and `step_size` (s, starting at lr)."""

    _group_flag_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _validate(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _new_state(self, p, group):
        lr = _value(_to_scalar(group["lr"]))
        # a complex element is two independent real numbers, each with a step size
        first_size = complex(lr, lr) if p.is_complex() else lr
        return {"step": _new_scalar(), "prev": lantern.zeros_like(p), "step_size": lantern.full_like(p, first_size)}

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One Rprop update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, states = _init_group(self, group, "Rprop", complex_ok=True)
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            rprop(params, grads, [s["prev"] for s in states], [s["step_size"] for s in states],
                  [s["step"] for s in states], foreach=group["foreach"], maximize=group["maximize"],
                  differentiable=group["differentiable"], step_size_min=step_size_min, step_size_max=step_size_max,
                  etaminus=etaminus, etaplus=etaplus)
        return loss


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False, maximize=False,
          differentiable=False, has_complex=False, *, step_size_min, step_size_max, etaminus, etaplus):
    """Functional Rprop (torch.optim.rprop.rprop). lantern has no multi-tensor Rprop: every `foreach` runs
    `_single_tensor_rprop`."""
    _single_tensor_rprop(params, grads, prevs, step_sizes, state_steps, step_size_min=step_size_min,
                         step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus, maximize=maximize,
                         differentiable=differentiable)


def _single_tensor_rprop(params, grads, prevs, step_sizes, state_steps, *, step_size_min, step_size_max, etaminus,
                         etaplus, maximize, differentiable):
    """The readable Rprop update, one parameter at a time (torch's `_single_tensor_rprop`)."""
    for param, grad, prev, step_size, step_t in zip(params, grads, prevs, step_sizes, state_steps):
        step_t.add_(1)
        param, grad, prev, step_size = _as_real(param, -grad if maximize else grad, prev, step_size)
        sign = grad.mul(prev.clone() if differentiable else prev).sign()
        factor = lantern.where(sign.gt(0), etaplus, sign)
        factor = lantern.where(factor.lt(0), etaminus, factor)
        factor = lantern.where(factor.eq(0), 1, factor)
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        grad = lantern.where(factor.eq(etaminus), 0, grad)
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)
