"""RMSprop: divide the gradient by a running root mean square of recent gradients (torch.optim.RMSprop).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.RMSprop([w], lr=0.01)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w
tensor([ 0.9000, -1.9000], requires_grad=True)
"""
from .optimizer import (Optimizer, _check_lr, _closure_loss, _new_scalar, _no_grad_unless_differentiable,
                        _refuse_complex, _scalars_to_tensors, _to_scalar, _value)
import lantern

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """v ← α·v + (1−α)·g²; with `centered`, also ḡ ← α·ḡ + (1−α)·g and v − ḡ² replaces v; the step is
    g/(√v + eps), through a momentum buffer when momentum > 0. State: `step`, `square_avg`, and
    `momentum_buffer` / `grad_avg` when used."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        _scalars_to_tensors(self)

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One RMSprop update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _value(_to_scalar(group["lr"]))
            alpha, eps, weight_decay = group["alpha"], group["eps"], group["weight_decay"]
            momentum, centered, maximize = group["momentum"], group["centered"], group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if grad.is_sparse:
                    raise RuntimeError("RMSprop does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    _refuse_complex(p, "RMSprop")
                    state["step"] = _new_scalar()
                    state["square_avg"] = lantern.zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = lantern.zeros_like(p)
                    if centered:
                        state["grad_avg"] = lantern.zeros_like(p)
                if maximize:
                    grad = -grad
                state["step"].add_(1)
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
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
