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
from ._common import (_closure_loss, _init_group, _new_scalar, _no_grad_unless_differentiable, _to_scalar,
                      _update_grad, _validate, _value)

__all__ = ["RMSprop", "rmsprop"]


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
            params, grads, states = _init_group(self, group, "RMSprop")
            rmsprop(params, grads, [s["square_avg"] for s in states],
                    [s["grad_avg"] for s in states] if group["centered"] else [],
                    [s["momentum_buffer"] for s in states] if group["momentum"] > 0 else [],
                    [s["step"] for s in states], foreach=group["foreach"], maximize=group["maximize"],
                    differentiable=group["differentiable"], lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                    weight_decay=group["weight_decay"], momentum=group["momentum"], centered=group["centered"])
        return loss


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, foreach=None, maximize=False,
            differentiable=False, capturable=False, has_complex=False, *, lr, alpha, eps, weight_decay, momentum,
            centered):
    """Functional RMSprop (torch.optim.rmsprop.rmsprop). lantern has no multi-tensor RMSprop: every `foreach`
    runs `_single_tensor_rmsprop`."""
    _single_tensor_rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, lr=lr,
                           alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered,
                           maximize=maximize)


def _single_tensor_rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, *, lr, alpha,
                           eps, weight_decay, momentum, centered, maximize):
    """The readable RMSprop update, one parameter at a time (torch's `_single_tensor_rmsprop`)."""
    lr = _value(_to_scalar(lr))
    for i, param in enumerate(params):
        state_steps[i].add_(1)
        grad = _update_grad(param, grads[i], maximize, weight_decay)
        square_avg = square_avgs[i]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffer_list[i]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)
