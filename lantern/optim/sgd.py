"""SGD: stochastic gradient descent with optional momentum, dampening, Nesterov and weight decay (torch.optim.SGD).

>>> import lantern
>>> w = lantern.tensor([1.], requires_grad=True)
>>> opt = lantern.optim.SGD([w], lr=0.1, momentum=0.9)
>>> for _ in range(2):
...     w.grad = lantern.tensor([1.]); opt.step()
>>> w, opt.state[w]['momentum_buffer']
(tensor([0.7100], requires_grad=True), tensor([1.9000]))
"""
from .optimizer import Optimizer
from ._foreach import sgd_group
from ._common import (_check_fused, _closure_loss, _no_grad_unless_differentiable, _params_with_grad, _to_scalar,
                      _validate, _value)

__all__ = ["SGD"]


class SGD(Optimizer):
    """p ← p − lr·b with b ← μ·b + (1−τ)·(g + λ·p) (b = g on the first step); Nesterov uses g + μ·b instead of b.
    State per parameter: `momentum_buffer` (only when momentum ≠ 0)."""

    _group_flag_defaults = {"nesterov": False, "maximize": False, "foreach": None, "differentiable": False,
                            "fused": False}

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _validate(lr=lr, momentum=momentum, weight_decay=weight_decay, nan_passes=True)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One SGD update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            if sgd_group(self, group):
                continue
            lr = _value(_to_scalar(group["lr"]))
            momentum, dampening, nesterov = group["momentum"], group["dampening"], group["nesterov"]
            for p, grad, _ in _params_with_grad(self, group, "SGD", stateful=False, sparse_hint=" in lantern"):
                if momentum != 0:
                    p_state = self.state[p]
                    buf = p_state.get("momentum_buffer")
                    if buf is None:
                        buf = p_state["momentum_buffer"] = grad.detach().clone()
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buf, alpha=momentum) if nesterov else buf
                p.add_(grad, alpha=-lr)
        return loss
