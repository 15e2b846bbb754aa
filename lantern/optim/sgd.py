"""SGD: stochastic gradient descent with optional momentum, dampening, Nesterov and weight decay (torch.optim.SGD).

As in torch, `SGD.step` gathers each group's params, grads and momentum buffers and hands them to the functional
`sgd`, which runs the readable per-parameter loop `_single_tensor_sgd`, or the named fast path `_multi_tensor_sgd`
where it applies (never with foreach=False or in reference mode; see lantern/optim/_foreach.py).

>>> import lantern
>>> w = lantern.tensor([1.], requires_grad=True)
>>> opt = lantern.optim.SGD([w], lr=0.1, momentum=0.9)
>>> for _ in range(2):
...     w.grad = lantern.tensor([1.]); opt.step()
>>> w, opt.state[w]['momentum_buffer']
(tensor([0.7100], requires_grad=True), tensor([1.9000]))
"""
from functools import partial

from ..core.reference import specialisation
from .optimizer import Optimizer
from ._foreach import array, arrays_apply, bump, compiled_kernels, on_flat_ranges, scaled, use_multi_tensor
from ._common import (_check_fused, _closure_loss, _init_group, _no_grad_unless_differentiable, _refuse_grad_scaling,
                      _to_scalar, _update_grad, _validate, _value)
from .._tensor import Tensor

__all__ = ["SGD", "sgd"]


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
            params, grads, _ = _init_group(self, group, "SGD", stateful=False, sparse_ok=True)
            momentum = group["momentum"]
            momentum_buffer_list = [self.state[p].get("momentum_buffer") for p in params] if momentum != 0 else []
            sgd(params, grads, momentum_buffer_list, foreach=group["foreach"], fused=group["fused"],
                weight_decay=group["weight_decay"], momentum=momentum, lr=group["lr"],
                dampening=group["dampening"], nesterov=group["nesterov"], maximize=group["maximize"])
            for p, buf in zip(params, momentum_buffer_list):
                self.state[p]["momentum_buffer"] = buf
        return loss


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None, grad_scale=None,
        found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """Functional SGD (torch.optim.sgd.sgd): update `params` in place; a momentum buffer made on the first step is
    written into `momentum_buffer_list`. Runs `_multi_tensor_sgd` where it applies, else `_single_tensor_sgd`."""
    _refuse_grad_scaling(grad_scale, found_inf)
    kwargs = dict(weight_decay=weight_decay, momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                  maximize=maximize)
    if use_multi_tensor(foreach) and _multi_tensor_sgd_applies(params, d_p_list, momentum_buffer_list, lr, momentum):
        _multi_tensor_sgd(params, d_p_list, momentum_buffer_list, **kwargs)
    else:
        _single_tensor_sgd(params, d_p_list, momentum_buffer_list, **kwargs)


def _single_tensor_sgd(params, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening, nesterov,
                       maximize):
    """The readable SGD update, one parameter at a time (torch's `_single_tensor_sgd`)."""
    lr = _value(_to_scalar(lr))
    for i, param in enumerate(params):
        grad = _update_grad(param, grads[i], maximize, weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = momentum_buffer_list[i] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)


def _multi_tensor_sgd_applies(params, grads, momentum_buffer_list, lr, momentum):
    """`_multi_tensor_sgd` needs raw arrays (`arrays_apply`), a number lr and, with momentum, every buffer made
    (the loop makes them on the first step) with its parameter's dtype and shape."""
    if isinstance(lr, Tensor) or not arrays_apply(params, grads):
        return False
    return momentum == 0 or all(buf is not None and buf.dtype is p.dtype and buf._size == p._size
                                for p, buf in zip(params, momentum_buffer_list))


@specialisation(replaces="optim.SGD: _single_tensor_sgd",
                when="foreach is not False, not reference mode, no_grad and nothing watching the dispatcher, "
                     "float32/float64 dense params and grads, a number lr, momentum buffers already made",
                parity_test="tests/test_optim_foreach.py::test_multi_tensor_sgd_equals_single_tensor")
def _multi_tensor_sgd(params, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening, nesterov,
                      maximize):
    """`_single_tensor_sgd` op for op on the raw arrays (NumPy calls, no dispatcher), where it applies; each
    parameter's update by flat ranges on the intra-op threads (`on_flat_ranges`)."""
    hyper = dict(weight_decay=weight_decay, momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                 maximize=maximize)
    for i, (param, grad_t) in enumerate(zip(params, grads)):
        buf_t = momentum_buffer_list[i] if momentum != 0 else None
        arrays = [array(t) for t in (param, grad_t, buf_t) if t is not None]
        kernels = compiled_kernels(arrays) if buf_t is not None else None
        if kernels is not None and _compiled_sgd_applies(arrays[0].dtype, weight_decay, maximize):
            on_flat_ranges(arrays, partial(_sgd_compiled, kernels, **hyper))
        else:
            on_flat_ranges(arrays, partial(_sgd_arrays, param._backend.xp, **hyper))
        if buf_t is not None:
            bump(buf_t, buf_t)
        bump(param)


def _sgd_arrays(xp, param_a, grad, buf=None, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """One SGD update of the arrays (or the same flat range of each), `_single_tensor_sgd`'s ops in order."""
    if maximize:
        grad = xp.negative(grad)
    if weight_decay != 0:
        grad = xp.add(grad, xp.multiply(param_a, weight_decay))
    if buf is not None:
        xp.multiply(buf, momentum, out=buf)
        xp.add(buf, scaled(xp, grad, 1 - dampening), out=buf)
        grad = xp.add(grad, xp.multiply(buf, momentum)) if nesterov else buf
    xp.add(param_a, xp.multiply(grad, -lr), out=param_a)


def _compiled_sgd_applies(dtype, weight_decay, maximize):
    """`_sgd_compiled` leaves maximize to the NumPy update (see sgd_momentum) and takes weight_decay in the params'
    dtype, which must not round a nonzero one to 0 (the NumPy update would still add param·0, NaN for an infinite
    param)."""
    return not maximize and (weight_decay == 0 or dtype.type(weight_decay) != 0)


@specialisation(replaces="optim.SGD: _multi_tensor_sgd's NumPy update, _sgd_arrays",
                when="_multi_tensor_sgd runs with momentum and without maximize, numba importable, NumPy arrays all "
                     "C-contiguous",
                parity_test="tests/test_optim_compiled.py::test_compiled_sgd_equals_numpy_update")
def _sgd_compiled(kernels, param_a, grad, buf, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """`_sgd_arrays` with momentum in one pass over the (flat) arrays: the numba kernel sgd_momentum."""
    f = param_a.dtype.type
    kernels.sgd_momentum(param_a, grad, buf, f(momentum), f(1 - dampening), f(-lr), f(weight_decay), bool(nesterov))
