"""What the optimizer algorithms share: torch's hyperparameter checks, the gathering of a group's params, grads and
state that `step()` does first, and small conversions of hyperparameters and state counters. Each algorithm keeps
its own update arithmetic in its `_single_tensor_<name>` loop.

>>> import lantern
>>> from lantern.optim._common import _validate
>>> _validate(lr=0.1, eps=-1.0)
Traceback (most recent call last):
ValueError: Invalid epsilon value: -1.0
>>> _validate(lr=0.1, betas=(0.9, 1.0))
Traceback (most recent call last):
ValueError: Invalid beta parameter at index 1: 1.0
"""
import functools

import lantern
from .._tensor import Tensor

# How torch's "Invalid ...: value" message names a hyperparameter and the largest value it allows (None: no limit);
# any name not listed here reads "<name> value" and only has to be >= 0.
_LIMITS = {"lr": ("learning rate", None), "eps": ("epsilon value", None), "rho": ("rho value", 1.0)}


def _validate(nan_passes=False, **hyperparameters):
    """torch's range checks, in the order the keywords are given: each value >= 0 (rho also <= 1, each of betas'
    first two in [0, 1)), a tensor lr 1-element. `nan_passes` is SGD's spelling `value < 0`, which lets NaN through."""
    for name, value in hyperparameters.items():
        if name == "betas":
            for i in (0, 1):
                if not 0.0 <= value[i] < 1.0:
                    raise ValueError(f"Invalid beta parameter at index {i}: {value[i]}")
            continue
        if name == "lr" and isinstance(value, Tensor) and value.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        label, upper = _LIMITS.get(name, (f"{name} value", None))
        if nan_passes:
            invalid = value < 0.0
        elif upper is None:
            invalid = not 0.0 <= value
        else:
            invalid = not 0.0 <= value <= upper
        if invalid:
            raise ValueError(f"Invalid {label}: {value}")


def _check_fused(fused, foreach, differentiable):
    """torch's checks of `fused=True` against the other implementation flags."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _no_grad_unless_differentiable(step):
    """Run `step` with grad mode set to the optimizer's `differentiable` default, restoring it afterwards."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        prev = lantern.is_grad_enabled()
        lantern.set_grad_enabled(self.defaults["differentiable"])
        try:
            return step(self, *args, **kwargs)
        finally:
            lantern.set_grad_enabled(prev)

    return wrapper


def _closure_loss(closure):
    """The loss from re-evaluating `closure` with grad enabled, or None without a closure."""
    if closure is None:
        return None
    with lantern.enable_grad():
        return closure()


def _refuse_complex(p, name):
    """torch runs these optimizers on complex params through view_as_real, which lantern does not have yet."""
    if p.is_complex():
        raise NotImplementedError(f"{name} does not support complex parameters in lantern yet (torch updates "
                                  "their real and imaginary parts as separate real numbers); optimize "
                                  "real-valued parameters instead")


def _init_state(optimizer, p, group, name, complex_ok=False):
    """Fill p's empty state with `optimizer._new_state(p, group)`, refusing a complex p first unless `complex_ok`."""
    if not complex_ok:
        _refuse_complex(p, name)
    optimizer.state[p].update(optimizer._new_state(p, group))


def _init_group(optimizer, group, name, *, stateful=True, sparse_hint="", sparse_ok=False, complex_ok=False,
                complex_is_error=False):
    """What every optimizer's step gathers from a group first: (params, grads, states) for its params that have a
    grad, as torch's `_init_group` methods do.

    A sparse grad is refused ("<name> does not support sparse gradients<sparse_hint>") unless `sparse_ok` (SGD
    and Adagrad take them, lantern.optim._sparse). With `stateful`, a param's
    state is made by `_init_state` on its first step; without it (SGD keeps state only for momentum) state is
    not touched and the states are None. `complex_ok` lets complex params through (the algorithms that update
    them through `_as_real`); `complex_is_error` refuses them as torch's newer algorithms do, with a RuntimeError
    "<name> does not support complex parameters" before any other check. The update itself (the `step` counter included) is left to
    the algorithm's `_single_tensor_<name>` loop."""
    params, grads, states = [], [], []
    for p in group["params"]:
        grad = p.grad
        if grad is None:
            continue
        if complex_is_error and p.is_complex():
            raise RuntimeError(f"{name} does not support complex parameters")
        if grad.is_sparse and not sparse_ok:
            raise RuntimeError(f"{name} does not support sparse gradients{sparse_hint}")
        state = None
        if stateful:
            state = optimizer.state[p]
            if len(state) == 0:
                _init_state(optimizer, p, group, name, complex_ok)
        params.append(p)
        grads.append(grad)
        states.append(state)
    return params, grads, states


def _refuse_grad_scaling(grad_scale, found_inf):
    """torch's fused kernels take GradScaler's scale and inf flag; lantern's optimizers have no fused kernels."""
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("grad_scale and found_inf (the fused optimizers' GradScaler hand-off) are not "
                                  "supported in lantern; unscale the gradients with GradScaler.unscale_ instead")


def _as_real(*tensors):
    """Complex tensors seen as real ones with a trailing dimension of 2 (view_as_real): torch updates a complex
    parameter's real and imaginary parts as two independent real numbers. Real tensors pass through."""
    return [lantern.view_as_real(t) if t.is_complex() else t for t in tensors]


def _update_grad(param, grad, maximize, weight_decay):
    """The gradient an update follows: negated under `maximize`, plus weight_decay·param (an L2 penalty)."""
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = grad.add(param, alpha=_value(weight_decay))
    return grad


def _decay_param(param, lr, weight_decay):
    """Decoupled weight decay (AdamW's): scale the parameter itself by 1 − lr·weight_decay."""
    if weight_decay != 0:
        param.mul_(_value(1 - lr * weight_decay))


def _scalar_dtype():
    """The dtype of a `step` counter: float64 when that is the default dtype, else float32 (as torch)."""
    return lantern.float64 if lantern.get_default_dtype() == lantern.float64 else lantern.float32


def _new_scalar(value=0.0, fused=False):
    """A CPU scalar tensor for counters such as `step`: float32 under `fused`, else `_scalar_dtype()`."""
    return lantern.tensor(value, dtype=lantern.float32 if fused else _scalar_dtype())


def _scalars_to_tensors(optimizer, keys=("step",)):
    """Old checkpoints kept counters such as `step` as numbers: make them scalar tensors again."""
    for group in optimizer.param_groups:
        dtype = lantern.float32 if group.get("fused") else _scalar_dtype()
        for p in group["params"]:
            p_state = optimizer.state.get(p)
            if p_state:
                for key in keys:
                    if key in p_state and not isinstance(p_state[key], Tensor):
                        p_state[key] = lantern.tensor(float(p_state[key]), dtype=dtype)


def _to_scalar(x):
    """A 1-element hyperparameter tensor squeezed to 0-d; anything else unchanged."""
    if isinstance(x, Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _value(x):
    """A Python number from a number or a 1-element tensor."""
    return x.item() if isinstance(x, Tensor) else x
