"""gradcheck / gradgradcheck: compare autograd's vector-Jacobian products with central finite differences.

Use float64 (or complex128). For a complex input z = a + ib, autograd's gradient is dL/da + i dL/db (PyTorch's
convention); for a complex output, backward is checked with seeds 1 and 1j, so both parts of the Jacobian count.

>>> x = lantern.randn(3, dtype=lantern.float64, requires_grad=True)
>>> lantern.autograd.gradcheck(lambda t: (t * t).sin(), (x,))
True
"""

import functools
import warnings

import numpy as np

from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..ops.derivative_helpers import zeros_like
from ..ops.dispatcher import call
from ..ops.registry import get
from ..core import user_warnings
from . import forward_ad


class GradcheckError(RuntimeError):
    """A Jacobian computed by autograd differs from the numerical one."""


def _as_tuple(x):
    return (x,) if isinstance(x, TensorImpl) or not isinstance(x, (tuple, list)) else tuple(x)


def _outputs(func, inputs):
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, TensorImpl)]


def _flat(t):
    """A tensor's values as a flat NumPy copy (complex stays complex, the rest becomes float64)."""
    t = t.detach()
    return np.array(t._backend.array(t), dtype=np.complex128 if t.dtype.is_complex else np.float64).reshape(-1)


def _seed(t, k, value):
    """Zeros shaped like t, with `value` at flat position k."""
    seed = zeros_like(t)
    seed._backend.array(seed).flat[k] = value
    return seed


def _differentiable(inputs):
    return [i for i, x in enumerate(inputs) if isinstance(x, TensorImpl) and x.requires_grad]


def _numerical(func, inputs, i, eps):
    """[(d outputs / d a_k for every element k), and for a complex input the same along b_k]: central differences,
    perturbing the input's memory in place (the memory func reads)."""
    x = inputs[i]
    arr = x._backend.array(x)
    directions = (1, 1j) if x.dtype.is_complex else (1,)
    per_direction = []
    for step in directions:
        columns = []
        for idx in np.ndindex(arr.shape):
            orig = arr[idx].copy()
            arr[idx] = orig + eps * step
            plus = [_flat(o) for o in _outputs(func, inputs)]
            arr[idx] = orig - eps * step
            minus = [_flat(o) for o in _outputs(func, inputs)]
            arr[idx] = orig
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        per_direction.append(columns)
    return per_direction


def _check_pair(i, j, x, out, seeds_grads, numerical, rtol, atol):
    """For each seed s of output j: autograd's vjp rows against Re(conj(s) dO/da) (+ i Re(conj(s) dO/db))."""
    for s, analytical in seeds_grads:
        expected = np.zeros((x.numel(), out.numel()), dtype=np.complex128 if x.dtype.is_complex else np.float64)
        for d, columns in enumerate(numerical):
            part = np.array([c[j] for c in columns]).reshape(x.numel(), out.numel()) if columns else \
                np.zeros((0, out.numel()))
            expected = expected + (1j if d else 1) * np.real(np.conj(s) * part)
        if not np.allclose(analytical, expected, rtol=rtol, atol=atol, equal_nan=True):
            seed = "" if s == 1 else f" (backward seed {s})"
            return (f"Jacobian mismatch for output {j} with respect to input {i}{seed},\nnumerical:{expected}\n"
                    f"analytical:{analytical}\n")
    return None


def _analytical(func, inputs, diff):
    """{(input, output, seed): matrix whose column k is the vjp of seed * e_k}, and the outputs."""
    from . import grad as autograd_grad  # cycle: lantern.autograd (where grad is) imports this module
    outs = _outputs(func, inputs)
    xs = [inputs[i] for i in diff]
    table = {}
    for j, o in enumerate(outs):
        for s in ((1, 1j) if o.dtype.is_complex else (1,)):
            mats = [np.zeros((x.numel(), o.numel()), dtype=np.complex128 if x.dtype.is_complex else np.float64)
                    for x in xs]
            if o.requires_grad:
                for k in range(o.numel()):
                    grads = autograd_grad(o, xs, _seed(o, k, s), retain_graph=True, allow_unused=True)
                    for m, g in zip(mats, grads):
                        if g is not None:
                            m[:, k] = _flat(g)
            for i, m in zip(diff, mats):
                table.setdefault((i, j), []).append((s, m))
    return table, outs


def _forward_columns(func, inputs, i, directions):
    """[per direction: [per element k: [flat tangent of each output]]]: forward-mode AD's Jacobian columns for
    input i, from a dual tensor whose tangent is the unit step along element k (forward_ad)."""
    x = inputs[i]
    per_direction = []
    for step in directions:
        columns = []
        for k in range(x.numel()):
            with forward_ad.dual_level():
                duals = list(inputs)
                duals[i] = forward_ad.make_dual(x, _seed(x.detach(), k, step))  # x's graph kept: fwd-over-rev
                outs = _outputs(func, duals)
                columns.append([_flat_tangent(forward_ad.unpack_dual(o).tangent, o) for o in outs])
        per_direction.append(columns)
    return per_direction


def _flat_tangent(tangent, out):
    if tangent is None:
        return np.zeros(out.numel(), dtype=np.complex128 if out.dtype.is_complex else np.float64)
    return _flat(tangent)


def _check_forward(func, inputs, diff, numerical, rtol, atol):
    """Forward mode's Jacobian columns against the numerical ones: the error text, or None."""
    for i in diff:
        directions = (1, 1j) if inputs[i].dtype.is_complex else (1,)
        forward = _forward_columns(func, inputs, i, directions)
        for columns, expected_columns in zip(forward, numerical[i]):
            for j in range(len(expected_columns[0]) if expected_columns else 0):
                analytical = np.array([c[j] for c in columns])
                expected = np.array([c[j] for c in expected_columns])
                if not np.allclose(analytical, expected, rtol=rtol, atol=atol, equal_nan=True):
                    return (f"Jacobian computed with forward mode mismatch for output {j} with respect to input "
                            f"{i},\nnumerical:{expected.T}\nanalytical:{analytical.T}\n")
    return None


FAILED_BATCHED_GRAD_MSG = """
gradcheck or gradgradcheck failed while testing batched gradient computation.
To compute batched grads (e.g., jacobians, hessians), we vmap over the backward computation (a gradient is computed
for a batch of grad_outputs at once, and compared with the gradients computed one grad_output at a time). The most
common failure is a vmap-incompatible operation in the backward pass (reading values, in-place writes into an
unbatched tensor) or a wrong batching rule. Call gradcheck/gradgradcheck with `check_batched_grad=False` to skip
this check.""".strip()

FAILED_BATCHED_GRAD_MSG_FWD_AD = """
gradcheck failed while testing batched gradient computation with forward-mode AD (a batch of tangents pushed at
once, under vmap, compared with the tangents pushed one at a time). Call gradcheck with
`check_batched_forward_grad=False` to skip this check.""".strip()


def _batched_problem(output_idx, input_idx, result, expected, message):
    """torch's report of a batched result that differs from the per-example one."""
    return f"For output {output_idx} and input {input_idx}:\n\n{message}\n\nGot:\n{result}\n\nExpected:\n{expected}"


def _randn_like(t, rng):
    """A tensor like t (complex stays complex) of standard normal values from the NumPy generator rng."""
    values = rng.standard_normal(t._size)
    if t.dtype.is_complex:
        values = values + 1j * rng.standard_normal(t._size)
    r = zeros_like(t.detach())
    r._backend.array(r)[...] = values
    return r


def _zeros_if_none(grads, like, batch=()):
    """Gradients with zeros in place of None (expanded over a leading batch dim when given one)."""
    return tuple(zeros_like(x.detach()).expand(*batch, *x.shape) if g is None else g for g, x in zip(grads, like))


def _check_batched_grad(inputs, diff, output, output_idx, rng):
    """The vjps of two random grad_outputs computed in one batched backward pass (grad(is_grads_batched=True),
    a vmap over the backward) against the two computed one at a time, as torch's _test_batched_grad."""
    from . import grad as autograd_grad  # cycle: lantern.autograd (where grad is) imports this module
    xs = [inputs[i] for i in diff]
    seeds = [_randn_like(output, rng) for _ in range(2)]
    singles = [_zeros_if_none(autograd_grad(output, xs, s, retain_graph=True, allow_unused=True), xs) for s in seeds]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="There is a performance drop")
        try:
            batched = autograd_grad(output, xs, _stacked(seeds), retain_graph=True, allow_unused=True,
                                    is_grads_batched=True)
        except RuntimeError as ex:
            raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n{FAILED_BATCHED_GRAD_MSG}") \
                from ex
    for input_idx, (got, pair) in enumerate(zip(_zeros_if_none(batched, xs, (2,)), zip(*singles))):
        expected = _stacked(pair)
        if not np.allclose(_flat(got), _flat(expected)):
            raise GradcheckError(_batched_problem(output_idx, input_idx, got, expected, FAILED_BATCHED_GRAD_MSG))


def _stacked(tensors):
    return call(get("stack"), (list(tensors), 0))


def _check_batched_forward_grad(func, inputs, diff, rng):
    """The tangents of two random input tangents pushed at once (a vmap over a jvp) against the two pushed one at
    a time, for each differentiable input, as torch's _test_batched_grad_forward_ad."""
    from . import _vmap  # cycle: lantern.autograd (where vmap is installed) imports this module
    for i in diff:
        if not (inputs[i].is_floating_point() or inputs[i].is_complex()):
            continue
        tangents = [_randn_like(inputs[i], rng) for _ in range(2)]
        jvp = functools.partial(_output_tangents, func, inputs, i)
        expected = [_stacked(pair) for pair in zip(*[jvp(t) for t in tangents])]
        try:
            result = _vmap[0](jvp)(_stacked(tangents))
        except RuntimeError as ex:
            raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n{FAILED_BATCHED_GRAD_MSG_FWD_AD}") \
                from ex
        for j, (got, want) in enumerate(zip(result, expected)):
            if not np.allclose(_flat(got), _flat(want)):
                raise GradcheckError(_batched_problem(j, j, got, want, FAILED_BATCHED_GRAD_MSG_FWD_AD))


def _output_tangents(func, inputs, i, tangent):
    """The tangents of func's outputs when input i (detached, like the others) has `tangent`: zeros for none."""
    with forward_ad.dual_level():
        duals = [x.detach() if isinstance(x, TensorImpl) else x for x in inputs]
        duals[i] = forward_ad.make_dual(duals[i], tangent)
        unpacked = [forward_ad.unpack_dual(o) for o in _outputs(func, duals)]
        return tuple(zeros_like(u.primal).expand(u.primal.shape) if u.tangent is None else u.tangent
                     for u in unpacked)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """True if d func / d inputs from autograd matches finite differences within atol + rtol * |numerical|: reverse
    mode's vjps (check_backward_ad) and, with check_forward_ad, forward mode's jvps (lantern.autograd.forward_ad).
    check_batched_grad / check_batched_forward_grad: vjps / jvps of a batch of random vectors, computed at once under
    vmap, equal those computed one at a time."""
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    inputs = _as_tuple(inputs)
    for i, x in enumerate(inputs):
        if isinstance(x, TensorImpl) and x.requires_grad and x.dtype.name not in ("float64", "complex128"):
            user_warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex. ", UserWarning, stacklevel=2)
    diff = _differentiable(inputs)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True.")
    prev = tls.grad_enabled
    tls.grad_enabled = True  # func may itself call autograd.grad (gradgradcheck's does)
    try:
        _check_jacobians(func, inputs, diff, eps, rtol, atol, check_forward_ad, check_backward_ad)
        rng = np.random.default_rng(0)
        if check_batched_forward_grad:
            _check_batched_forward_grad(func, inputs, diff, rng)
        if check_batched_grad:
            for j, out in enumerate(o for o in _outputs(func, inputs) if o.requires_grad):
                _check_batched_grad(inputs, diff, out, j, rng)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    finally:
        tls.grad_enabled = prev
    return True


def _check_jacobians(func, inputs, diff, eps, rtol, atol, check_forward_ad, check_backward_ad):
    """Raise GradcheckError for the first Jacobian block (reverse mode's, then forward mode's) that differs from the
    numerical one."""
    numerical = {i: _numerical(func, inputs, i, eps) for i in diff}
    problems = []
    if check_backward_ad:
        analytical, outs = _analytical(func, inputs, diff)
        problems += [_check_pair(i, j, inputs[i], out, analytical[(i, j)], numerical[i], rtol, atol)
                     for i in diff for j, out in enumerate(outs)]
    if check_forward_ad:
        problems.append(_check_forward(func, inputs, diff, numerical, rtol, atol))
    problem = next((p for p in problems if p is not None), None)
    if problem is not None:
        raise GradcheckError(problem)


def _random_like(t, rng):
    return _randn_like(t, rng).requires_grad_(True)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the first derivative (a vjp with random grad_outputs): checks double backward
    (check_rev_over_rev) and, with check_fwd_over_rev, forward-mode AD through the backward pass."""
    from . import grad as autograd_grad  # cycle: lantern.autograd (where grad is) imports this module
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_random_like(o, rng) for o in _outputs(func, inputs) if o.requires_grad)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_derivative(*args):
        ins, gos = args[:n], args[n:]
        outs = [o for o in _outputs(func, ins) if o.requires_grad]  # as torch: grad_outputs for these only
        grads = autograd_grad(outs, [ins[i] for i in _differentiable(ins)], list(gos), create_graph=True,
                              allow_unused=True)
        return tuple(g for g in grads if g is not None)
    return gradcheck(first_derivative, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, check_batched_grad=check_batched_grad)
