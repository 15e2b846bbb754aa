"""The multi-tensor fast path of SGD and Adam/AdamW: a group's update straight on the parameters' arrays.

torch's `foreach` implementations update every parameter of a group with a few fused kernels instead of a handful
of ops per parameter. lantern's equivalent skips the dispatcher: under no_grad, with nothing watching the dispatcher
(tracer, profiler), for dense float32/float64 parameters whose state already exists, each update is a few NumPy
calls on the raw arrays. The arithmetic is the for-loop's, operation for operation (each op's rounding and operand
order, so results are bitwise equal), in-place writes bump the same version counters, and the state keeps its
layout. Anything else (a first step, which creates the state; tensor hyperparameters; sparse, complex or half
precision parameters; a grad of another shape than its parameter's; `differentiable=True`) returns False and the caller runs its ordinary loop.

>>> import lantern
>>> w = lantern.tensor([1.], requires_grad=True)
>>> opt = lantern.optim.SGD([w], lr=0.1, momentum=0.9)
>>> w.grad = lantern.tensor([1.]); opt.step()         # first step: the loop creates momentum_buffer
>>> w.grad = lantern.tensor([1.])
>>> with lantern.no_grad():
...     sgd_group(opt, opt.param_groups[0])                # what opt.step() runs from now on
True
>>> w, opt.state[w]['momentum_buffer'], w._version
(tensor([0.7100], requires_grad=True), tensor([1.9000]), 2)
"""
from ..core import dtype as dt
from ..core.state import tls
from .._tensor import Tensor

_DTYPES = (dt.float32, dt.float64)


def _arrays(group):
    """[(param, its array, its grad's array)] for the params of `group` that have a grad, or None when the fast
    path does not apply to one of them."""
    if tls.grad_enabled or tls.observed:
        return None
    items = []
    for p in group["params"]:
        grad = p.grad
        if grad is None:
            continue
        backend = p._backend
        if (backend.xp is None or p.dtype not in _DTYPES or grad.dtype is not p.dtype or grad._backend is not backend
                or grad.is_sparse or p._is_inference or grad._size != p._size):  # the loop's ops check shapes
            return None
        items.append((p, backend.array(p), backend.array(grad)))
    return items


def _bump(*tensors):
    for t in tensors:
        t._vc[0] += 1


def _scaled(xp, a, alpha):
    """`a` times alpha as add(..., alpha=) computes it: untouched for an alpha of 1."""
    return a if alpha == 1 else xp.multiply(a, alpha)


def sgd_group(optimizer, group):
    """One SGD step of `group` on its arrays; False (nothing done) when the fast path does not apply."""
    lr = group["lr"]
    if isinstance(lr, Tensor):
        return False
    items = _arrays(group)
    if items is None:
        return False
    momentum, dampening, nesterov = group["momentum"], group["dampening"], group["nesterov"]
    maximize, weight_decay = group["maximize"], group["weight_decay"]
    state = optimizer.state
    buffers = []
    if momentum != 0:
        for p, _, _ in items:
            buf = state[p].get("momentum_buffer") if p in state else None
            if buf is None or buf.dtype is not p.dtype or buf._size != p._size:
                return False  # the loop makes the buffer on the first step
            buffers.append(buf)
    for k, (p, param, grad) in enumerate(items):
        xp = p._backend.xp
        if maximize:
            grad = xp.negative(grad)
        if weight_decay != 0:
            grad = xp.add(grad, xp.multiply(param, weight_decay))
        if momentum != 0:
            buf_tensor = buffers[k]
            buf = buf_tensor._backend.array(buf_tensor)
            xp.multiply(buf, momentum, out=buf)
            xp.add(buf, _scaled(xp, grad, 1 - dampening), out=buf)
            _bump(buf_tensor, buf_tensor)
            grad = xp.add(grad, xp.multiply(buf, momentum)) if nesterov else buf
        xp.add(param, xp.multiply(grad, -lr), out=param)
        _bump(p)
    return True


def adam_group(optimizer, group):
    """One Adam/AdamW step of `group` on its arrays; False (nothing done) when the fast path does not apply."""
    lr, betas = group["lr"], group["betas"]
    if isinstance(lr, Tensor) or isinstance(betas[0], Tensor) or isinstance(betas[1], Tensor):
        return False
    items = _arrays(group)
    if items is None:
        return False
    amsgrad = group["amsgrad"]
    states = []
    for p, _, _ in items:
        s = optimizer.state[p] if p in optimizer.state else None
        if not s or (amsgrad and "max_exp_avg_sq" not in s) or s["exp_avg"].dtype is not p.dtype:
            return False  # the loop makes the state on the first step
        states.append(s)
    beta1, beta2 = betas
    eps, maximize, weight_decay = group["eps"], group["maximize"], group["weight_decay"]
    decoupled = group["decoupled_weight_decay"]
    for (p, param, grad), s in zip(items, states):
        backend = p._backend
        xp, arr = backend.xp, backend.array
        step_t, avg_t, sq_t = s["step"], s["exp_avg"], s["exp_avg_sq"]
        step_a = arr(step_t)
        xp.add(step_a, 1, out=step_a)
        _bump(step_t)
        if maximize:
            grad = xp.negative(grad)
        if weight_decay != 0:
            if decoupled:
                xp.multiply(param, 1 - lr * weight_decay, out=param)
                _bump(p)
            else:
                grad = xp.add(grad, xp.multiply(param, weight_decay))
        step = float(step_a)
        avg, sq = arr(avg_t), arr(sq_t)
        # exp_avg.lerp_(grad, 1 - beta1), by lerp's two-sided formula
        weight = 1 - beta1
        diff = xp.subtract(grad, avg)
        if abs(weight) < 0.5:
            diff *= weight
            avg += diff
        else:
            diff *= 1 - weight
            xp.subtract(grad, diff, out=avg)
        # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        xp.multiply(sq, beta2, out=sq)
        term = xp.multiply(grad, 1 - beta2)
        term *= grad
        sq += term
        _bump(avg_t, sq_t, sq_t)
        source = sq
        if amsgrad:
            max_t = s["max_exp_avg_sq"]
            source = arr(max_t)
            xp.maximum(source, sq, out=source)
            _bump(max_t)
        denom = xp.sqrt(source)
        denom /= (1 - beta2 ** step) ** 0.5
        denom += eps
        # param.addcdiv_(exp_avg, denom, value=-step_size)
        update = xp.multiply(avg, -(lr / (1 - beta1 ** step)))
        update /= denom
        param += update
        _bump(p)
    return True
