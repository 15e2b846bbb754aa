"""What the optimizer algorithms share: torch's hyperparameter checks, the walk over parameters that `step()` makes,
and small conversions of hyperparameters and state counters. Each algorithm keeps its own update arithmetic.

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


def _init_state(optimizer, p, group, name):
    """Fill p's empty state with `optimizer._new_state(p, group)`, refusing a complex p first."""
    _refuse_complex(p, name)
    optimizer.state[p].update(optimizer._new_state(p, group))


def _params_with_grad(optimizer, group, name, *, stateful=True, sparse_hint="", decoupled_weight_decay=False):
    """Yield (param, grad, state) for every param of `group` that has a grad, after what every algorithm does first.

    A sparse grad is refused ("<name> does not support sparse gradients<sparse_hint>"). With `stateful`, a param's
    state is made by `_init_state` on its first step and its `step` counter is incremented; without it (SGD keeps
    state only for momentum) state is not touched and None is yielded. The grad is negated under `maximize`, and
    weight decay λ adds λ·p to it, or with `decoupled_weight_decay` scales p by 1 − lr·λ instead."""
    maximize, weight_decay = group["maximize"], group["weight_decay"]
    lr = _to_scalar(group["lr"])
    all_state = optimizer.state
    for p in group["params"]:
        grad = p.grad
        if grad is None:
            continue
        if grad.is_sparse:
            raise RuntimeError(f"{name} does not support sparse gradients{sparse_hint}")
        state = None
        if stateful:
            state = all_state[p]
            if len(state) == 0:
                _init_state(optimizer, p, group, name)
            state["step"].add_(1)
        if maximize:
            grad = -grad
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(_value(1 - lr * weight_decay))
            else:
                grad = grad.add(p, alpha=_value(weight_decay))
        yield p, grad, state


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
