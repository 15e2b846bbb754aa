"""SGD: stochastic gradient descent with optional momentum, dampening, Nesterov and weight decay (torch.optim.SGD).

>>> import lantern
>>> w = lantern.tensor([1.], requires_grad=True)
>>> opt = lantern.optim.SGD([w], lr=0.1, momentum=0.9)
>>> for _ in range(2):
...     w.grad = lantern.tensor([1.]); opt.step()
>>> w, opt.state[w]['momentum_buffer']
(tensor([0.7100], requires_grad=True), tensor([1.9000]))
"""
from .optimizer import Optimizer, _closure_loss, _no_grad_unless_differentiable, _to_scalar, _value
from .._tensor import Tensor

__all__ = ["SGD"]


class SGD(Optimizer):
    """p ← p − lr·b with b ← μ·b + (1−τ)·(g + λ·p) (b = g on the first step); Nesterov uses g + μ·b instead of b.
    State per parameter: `momentum_buffer` (only when momentum ≠ 0)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One SGD update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            lr = _value(_to_scalar(group["lr"]))
            weight_decay = _value(group["weight_decay"])
            momentum, dampening = group["momentum"], group["dampening"]
            nesterov, maximize = group["nesterov"], group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if grad.is_sparse:
                    raise RuntimeError("SGD does not support sparse gradients in lantern")
                if maximize:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                if momentum != 0:
                    p_state = state[p]
                    buf = p_state.get("momentum_buffer")
                    if buf is None:
                        buf = p_state["momentum_buffer"] = grad.detach().clone()
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buf, alpha=momentum) if nesterov else buf
                p.add_(grad, alpha=-lr)
        return loss
