"""gradcheck / gradgradcheck: compare autograd's Jacobians with central finite differences (use float64).

>>> x = lantern.randn(3, dtype=lantern.float64, requires_grad=True)
>>> lantern.autograd.gradcheck(lambda t: (t * t).sin(), (x,))
True
"""
import warnings

import numpy as np

from ..core.state import tls
from ..core.tensor_impl import TensorImpl


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return (x,) if isinstance(x, TensorImpl) or not isinstance(x, (tuple, list)) else tuple(x)


def _outputs(func, inputs):
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, TensorImpl)]


def _flat_numpy(t):
    t = t.detach()
    return np.array(t._backend.array(t), dtype=_np_dtype(t)).reshape(-1)


def _one_hot_like(t, k):
    from ..ops.derivative_helpers import zeros_like
    seed = zeros_like(t)
    seed._backend.array(seed).flat[k] = 1
    return seed


def _numerical_jacobians(func, inputs, eps):
    """For each differentiable input: one row per input element, holding d(output_j)/d(x_i) for each output."""
    jac = []
    for x in inputs:
        if not (isinstance(x, TensorImpl) and x.requires_grad):
            jac.append(None)
            continue
        arr = x._backend.array(x)  # perturbed in place: the same memory func reads
        rows = []
        for idx in np.ndindex(arr.shape):
            orig = arr[idx].copy()
            # func runs with grad mode on: gradgradcheck's func itself calls autograd.grad
            arr[idx] = orig + eps
            plus = [_flat_numpy(o) for o in _outputs(func, inputs)]
            arr[idx] = orig - eps
            minus = [_flat_numpy(o) for o in _outputs(func, inputs)]
            arr[idx] = orig
            rows.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        jac.append(rows)
    return jac


def _analytical_jacobians(func, inputs):
    """Row k of each Jacobian is the vjp with the k-th unit vector of the output."""
    from . import grad as autograd_grad
    outs = _outputs(func, inputs)
    diff_inputs = [x for x in inputs if isinstance(x, TensorImpl) and x.requires_grad]
    result = {id(x): [np.zeros((x.numel(), o.numel()), dtype=_np_dtype(o)) for o in outs] for x in diff_inputs}
    for j, o in enumerate(outs):
        if not o.requires_grad:
            continue
        for k in range(o.numel()):
            grads = autograd_grad(o, diff_inputs, _one_hot_like(o, k), retain_graph=True, allow_unused=True)
            for x, g in zip(diff_inputs, grads):
                if g is not None:
                    result[id(x)][j][:, k] = _flat_numpy(g)
    return result, outs


def _np_dtype(t):
    return np.complex128 if t.dtype.is_complex else np.float64


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """True if d func / d inputs from autograd matches finite differences within atol + rtol * |numerical|."""
    inputs = _as_tuple(inputs)
    for i, x in enumerate(inputs):
        if isinstance(x, TensorImpl) and x.requires_grad and x.dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex. ", UserWarning, stacklevel=2)
    if not any(isinstance(x, TensorImpl) and x.requires_grad for x in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    prev = tls.grad_enabled
    tls.grad_enabled = True
    try:
        analytical, outs = _analytical_jacobians(func, inputs)
        numerical = _numerical_jacobians(func, inputs, eps)
    finally:
        tls.grad_enabled = prev
    for i, (x, rows) in enumerate(zip(inputs, numerical)):
        if rows is None:
            continue
        for j in range(len(outs)):
            num = np.array([r[j] for r in rows]).reshape(x.numel(), outs[j].numel()) if rows else \
                np.zeros((0, outs[j].numel()))
            ana = analytical[id(x)][j]
            if not np.allclose(ana, num, rtol=rtol, atol=atol, equal_nan=True):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {j} with respect to input {i},\n"
                                     f"numerical:{num}\nanalytical:{ana}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the first derivative: checks second-order gradients (double backward)."""
    from . import grad as autograd_grad
    from .._construct import tensor
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        outs = _outputs(func, inputs)
        grad_outputs = tuple(tensor(rng.standard_normal(o._size) if o._size else rng.standard_normal(),
                                    dtype=o.dtype, requires_grad=True) for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_derivative(*args):
        ins, gos = args[:n], args[n:]
        outs = _outputs(func, ins)
        pairs = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
        grads = autograd_grad([o for o, _ in pairs], [x for x in ins if isinstance(x, TensorImpl) and
                                                      x.requires_grad],
                              [g for _, g in pairs], create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)
    return gradcheck(first_derivative, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
