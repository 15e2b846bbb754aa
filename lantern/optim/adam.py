"""Adam (and, with decoupled_weight_decay=True, AdamW): adaptive moment estimation (torch.optim.Adam).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.Adam([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w, opt.state[w]['step']
(tensor([ 0.9000, -1.9000], requires_grad=True), tensor(1.))
"""
import lantern
from .optimizer import Optimizer
from ._foreach import adam_group
from ._common import (_check_fused, _closure_loss, _new_scalar, _no_grad_unless_differentiable, _params_with_grad,
                      _to_scalar, _validate, _value)
from .._tensor import Tensor

__all__ = ["Adam"]


def _check_adam_args(lr, betas, eps, weight_decay, foreach, capturable):
    """torch's hyperparameter checks shared by Adam and AdamW, in torch's order."""
    if isinstance(lr, Tensor) and foreach and not capturable:
        raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
    _validate(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
    if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
        raise ValueError("betas must be either both floats or both Tensors")
    for i in (0, 1):
        if isinstance(betas[i], Tensor):
            if not capturable and foreach:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
            if betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")


class Adam(Optimizer):
    """m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g², p ← p − lr·m̂/(√v̂ + eps) with bias-corrected m̂, v̂.
    weight_decay adds λ·p to g, or (decoupled_weight_decay=True, AdamW) scales p by 1 − lr·λ first.
    State per parameter: `step` (a scalar tensor), `exp_avg`, `exp_avg_sq` and, with amsgrad, `max_exp_avg_sq`."""

    _group_flag_defaults = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                            "differentiable": False, "decoupled_weight_decay": False, "fused": None}
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_adam_args(lr, betas, eps, weight_decay, foreach, capturable)
        defaults = dict(lr=lr, betas=tuple(_to_scalar(b) for b in betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    def _new_state(self, p, group):
        state = {"step": _new_scalar(fused=group["fused"]),
                 "exp_avg": lantern.zeros_like(p), "exp_avg_sq": lantern.zeros_like(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = lantern.zeros_like(p)
        return state

    @_no_grad_unless_differentiable
    def step(self, closure=None):
        """One Adam update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        name = type(self).__name__
        for group in self.param_groups:
            if adam_group(self, group):
                continue
            lr = _to_scalar(group["lr"])  # a tensor lr stays one: torch rounds lr-derived factors to its dtype
            beta1, beta2 = (_value(b) for b in group["betas"])
            eps, amsgrad = group["eps"], group["amsgrad"]
            for p, grad, state in _params_with_grad(
                    self, group, name, sparse_hint=", please consider SparseAdam instead",
                    decoupled_weight_decay=group["decoupled_weight_decay"]):
                step = state["step"].item()
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    lantern.maximum(max_sq, exp_avg_sq, out=max_sq)
                    denom = max_sq.sqrt().div_(bias_correction2_sqrt).add_(eps)
                else:
                    denom = exp_avg_sq.sqrt().div_(bias_correction2_sqrt).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-_value(lr / (1 - beta1 ** step)))
        return loss
