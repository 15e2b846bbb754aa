"""RMSprop: divide the gradient by a running root mean square of recent gradients (torch.optim.RMSprop).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.RMSprop([w], lr=0.01, centered=True)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> sorted(opt.state[w]), opt.state[w]['grad_avg']
(['grad_avg', 'square_avg', 'step'], tensor([ 0.0050, -0.0100]))
"""
import lantern
from .optimizer import Optimizer
from ._common import (_closure_loss, _new_scalar, _no_grad_unless_differentiable, _params_with_grad, _to_scalar,
                      _validate, _value)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """v ← α·v + (1−α)·g²; with `centered`, also ḡ ← α·ḡ + (1−α)·g and v − ḡ² replaces v; the step is
    g/(√v + eps), through a momentum buffer when momentum > 0. State: `step`, `square_avg`, and
    `momentum_buffer` / `grad_avg` when used."""

    _group_flag_defaults = {"momentum": 0, "centered": False, "foreach": None, "maximize": False,
                            "differentiable": False, "capturable": False}
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _validate(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _new_state(self, p, group):
        state = {"step": _new_scalar(), "square_avg": lantern.zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = lantern.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = lantern.zeros_like(p)
        return state

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One RMSprop update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _value(_to_scalar(group["lr"]))
            alpha, eps, momentum, centered = group["alpha"], group["eps"], group["momentum"], group["centered"]
            for p, grad, state in _params_with_grad(self, group, "RMSprop"):
                square_avg = state["square_avg"]
                square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]
                    grad_avg.lerp_(grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg.add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).addcdiv_(grad, avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.addcdiv_(grad, avg, value=-lr)
        return loss
