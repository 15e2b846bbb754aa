"""numba kernels for the optimizers' multi-tensor paths: one loop over a parameter's elements instead of a NumPy
call (and a temporary array) per operation of the update.

Each element goes through `_multi_tensor_<name>`'s NumPy operations in the same order, each product and sum rounded
on its own: the kernels are compiled without fastmath, so LLVM neither fuses a multiply and an add nor reorders, and
the results are the NumPy path's bits. The hyperparameters come in as scalars of the arrays' dtype, as NumPy
converts a Python float operand of a float32 array (NEP 50). Arrays are 1-D and contiguous (a flat range of a
parameter); `nogil` lets the intra-op threads run their ranges at once.

>>> import numpy as np
>>> p, g, b = np.ones(3, np.float32), np.full(3, 0.5, np.float32), np.ones(3, np.float32)
>>> f = np.float32
>>> sgd_momentum(p, g, b, f(0.9), f(1), f(-0.1), f(0), False)
>>> p, b
(array([0.86, 0.86, 0.86], dtype=float32), array([1.4, 1.4, 1.4], dtype=float32))
"""
import numba
import numpy as np

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


@numba.njit(**_JIT)
def sgd_momentum(param, grad, buf, momentum, grad_scale, neg_lr, weight_decay, nesterov):
    """SGD with momentum in place on param and buf: g = grad (+ weight_decay·param); buf = buf·momentum +
    g·grad_scale; param += (g + buf·momentum if nesterov else buf)·neg_lr (`_sgd_arrays`'s operations, less
    maximize's negation: numba's -x keeps a NaN's sign where NumPy's negative flips it)."""
    for i in range(param.size):
        g = grad[i]
        if weight_decay != 0:
            g = g + param[i] * weight_decay
        b = buf[i] * momentum + g * grad_scale
        buf[i] = b
        step = g + b * momentum if nesterov else b
        param[i] = param[i] + step * neg_lr


@numba.njit(**_JIT)
def adam(param, grad, avg, sq, factors, decay_mode, lerp_near_avg):
    """Adam in place on param, avg and sq (`_adam_arrays`'s operations, less maximize and amsgrad): factors =
    (weight_decay, decay, lerp weight, beta2, 1 - beta2, bias_correction2_sqrt, eps, -step_size); decay_mode 0: no
    weight decay, 1: L2 (g += weight_decay·param), 2: decoupled (param ·= decay); avg moves to g by lerp's
    two-sided formula (avg + w·(g - avg) when lerp_near_avg, else g - (g - avg)·w)."""
    weight_decay, decay, w, beta2, one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size = factors
    for i in range(param.size):
        g = grad[i]
        p = param[i]
        if decay_mode == 1:
            g = g + p * weight_decay
        elif decay_mode == 2:
            p = p * decay
        diff = g - avg[i]
        a = avg[i] + diff * w if lerp_near_avg else g - diff * w
        avg[i] = a
        s = sq[i] * beta2 + g * one_minus_beta2 * g
        sq[i] = s
        denom = np.sqrt(s) / bias_correction2_sqrt + eps
        param[i] = p + a * neg_step_size / denom
