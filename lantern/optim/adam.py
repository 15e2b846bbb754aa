"""Adam (and, with decoupled_weight_decay=True, AdamW): adaptive moment estimation (torch.optim.Adam).

`Adam.step` gathers each group's params, grads and state lists and hands them to the functional `adam`, which runs
the readable per-parameter loop `_single_tensor_adam`, or the named fast path `_multi_tensor_adam` where it
applies (never with foreach=False or in reference mode; see lantern/optim/_foreach.py).

>>> import lantern
>>> w = lantern.tensor([1., -2.], requires_grad=True)
>>> opt = lantern.optim.Adam([w], lr=0.1)
>>> w.grad = lantern.tensor([0.5, -1.]); opt.step()
>>> w, opt.state[w]['step']
(tensor([ 0.9000, -1.9000], requires_grad=True), tensor(1.))
"""
from functools import partial

import lantern
from ..core.reference import specialisation
from ..ops.pointwise_ternary import lerp_arrays
from .optimizer import Optimizer
from ._foreach import array, arrays_apply, bump, compiled_kernels, on_flat_ranges, use_multi_tensor
from ._common import (_check_fused, _closure_loss, _decay_param, _init_group, _new_scalar,
                      _no_grad_unless_differentiable, _refuse_grad_scaling, _to_scalar, _update_grad, _validate, _value)
from .._tensor import Tensor

__all__ = ["Adam", "adam"]


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
        for group in self.param_groups:
            params, grads, states = _init_group(self, group, type(self).__name__,
                                                sparse_hint=", please consider SparseAdam instead")
            beta1, beta2 = group["betas"]
            adam(params, grads, [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                 [s["max_exp_avg_sq"] for s in states] if group["amsgrad"] else [], [s["step"] for s in states],
                 foreach=group["foreach"], differentiable=group["differentiable"], fused=group["fused"],
                 decoupled_weight_decay=group["decoupled_weight_decay"], amsgrad=group["amsgrad"], beta1=beta1,
                 beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
                 maximize=group["maximize"])
        return loss


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
         differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False,
         decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """Functional Adam (torch.optim.adam.adam): update `params` and the state lists in place. Runs
    `_multi_tensor_adam` where it applies, else `_single_tensor_adam`."""
    _refuse_grad_scaling(grad_scale, found_inf)
    kwargs = dict(amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
                  maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
    state = (exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps)
    if use_multi_tensor(foreach, differentiable) and _multi_tensor_adam_applies(params, grads, *state, **kwargs):
        _multi_tensor_adam(params, grads, *state, **kwargs)
    else:
        _single_tensor_adam(params, grads, *state, **kwargs)


def _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, amsgrad, beta1,
                        beta2, lr, weight_decay, eps, maximize, decoupled_weight_decay):
    """The readable Adam update, one parameter at a time (torch's `_single_tensor_adam`)."""
    lr = _to_scalar(lr)  # a tensor lr stays one: torch rounds lr-derived factors to its dtype
    beta1, beta2 = _value(beta1), _value(beta2)
    for i, param in enumerate(params):
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t.add_(1)
        if decoupled_weight_decay:
            _decay_param(param, lr, weight_decay)
        grad = _update_grad(param, grads[i], maximize, 0 if decoupled_weight_decay else weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = step_t.item()
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if amsgrad:
            lantern.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
            denom = max_exp_avg_sqs[i].sqrt().div_(bias_correction2_sqrt).add_(eps)
        else:
            denom = exp_avg_sq.sqrt().div_(bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-_value(lr / (1 - beta1 ** step)))


def _multi_tensor_adam_applies(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1,
                               beta2, **_):
    """`_multi_tensor_adam` needs raw arrays (`arrays_apply`), number hyperparameters and state in the
    parameters' dtype (a loaded checkpoint may hold another)."""
    if isinstance(lr, Tensor) or isinstance(beta1, Tensor) or isinstance(beta2, Tensor):
        return False
    return arrays_apply(params, grads) and all(avg.dtype is p.dtype for p, avg in zip(params, exp_avgs))


@specialisation(replaces="optim.Adam / optim.AdamW: _single_tensor_adam",
                when="foreach is not False, not reference mode, no_grad and nothing watching the dispatcher, "
                     "float32/float64 dense params and grads, number lr and betas, state in the params' dtype",
                parity_test="tests/test_optim_foreach.py::test_multi_tensor_adam_equals_single_tensor")
def _multi_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, amsgrad, beta1,
                       beta2, lr, weight_decay, eps, maximize, decoupled_weight_decay):
    """`_single_tensor_adam` op for op on the raw arrays (NumPy calls, no dispatcher), where it applies; each
    parameter's update by flat ranges on the intra-op threads (`on_flat_ranges`)."""
    for i, param in enumerate(params):
        xp, step_t, avg_t, sq_t = param._backend.xp, state_steps[i], exp_avgs[i], exp_avg_sqs[i]
        step_a = array(step_t)
        xp.add(step_a, 1, out=step_a)
        bump(step_t)
        step = float(step_a)
        max_t = max_exp_avg_sqs[i] if amsgrad else None
        tensors = [t for t in (param, grads[i], avg_t, sq_t, max_t) if t is not None]
        arrays = [array(t) for t in tensors]
        hyper = dict(beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps, maximize=maximize,
                     decoupled_weight_decay=decoupled_weight_decay, step_size=lr / (1 - beta1 ** step),
                     decay=1 - lr * weight_decay, bias_correction2_sqrt=(1 - beta2 ** step) ** 0.5)
        kernels = None if amsgrad or maximize else compiled_kernels(arrays)
        on_flat_ranges(arrays, partial(_adam_arrays, xp, **hyper) if kernels is None else
                       partial(_adam_compiled, kernels, **hyper))
        if weight_decay != 0 and decoupled_weight_decay:
            bump(param)
        bump(avg_t, sq_t, sq_t, *([max_t] if amsgrad else []), param)


def _adam_arrays(xp, param_a, grad, avg, sq, max_sq=None, *, beta1, beta2, weight_decay, eps, maximize,
                 decoupled_weight_decay, step_size, decay, bias_correction2_sqrt):
    """One Adam update of the arrays (or the same flat range of each), `_single_tensor_adam`'s ops in order."""
    if maximize:
        grad = xp.negative(grad)
    if weight_decay != 0:
        if decoupled_weight_decay:
            xp.multiply(param_a, decay, out=param_a)
        else:
            grad = xp.add(grad, xp.multiply(param_a, weight_decay))
    lerp_arrays(xp, avg, grad, 1 - beta1, out=avg)
    # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    xp.multiply(sq, beta2, out=sq)
    term = xp.multiply(grad, 1 - beta2)
    term *= grad
    sq += term
    source = sq
    if max_sq is not None:
        source = xp.maximum(max_sq, sq, out=max_sq)
    denom = xp.sqrt(source)
    denom /= bias_correction2_sqrt
    denom += eps
    # param.addcdiv_(exp_avg, denom, value=-step_size)
    update = xp.multiply(avg, -step_size)
    update /= denom
    param_a += update


@specialisation(replaces="optim.Adam / optim.AdamW: _multi_tensor_adam's NumPy update, _adam_arrays",
                when="_multi_tensor_adam runs without amsgrad or maximize, numba importable, NumPy arrays all "
                     "C-contiguous",
                parity_test="tests/test_optim_compiled.py::test_compiled_adam_equals_numpy_update")
def _adam_compiled(kernels, param_a, grad, avg, sq, *, beta1, beta2, weight_decay, eps, maximize,
                   decoupled_weight_decay, step_size, decay, bias_correction2_sqrt):
    """`_adam_arrays` without amsgrad or maximize in one pass over the (flat) arrays: the numba kernel adam, its
    factors in the params' dtype as NumPy rounds a Python float operand."""
    f, weight = param_a.dtype.type, 1 - beta1
    near_avg = abs(weight) < 0.5  # lerp_arrays's branch
    factors = (weight_decay, decay, weight if near_avg else 1 - weight, beta2, 1 - beta2, bias_correction2_sqrt,
               eps, -step_size)
    decay_mode = 0 if weight_decay == 0 else 2 if decoupled_weight_decay else 1
    kernels.adam(param_a, grad, avg, sq, tuple(f(v) for v in factors), decay_mode, near_avg)
