"""Reverse-over-forward and forward-over-reverse through the derived forward derivatives (the double vjp,
lantern/ops/forward_derivative.py), over torch's OpInfo samples of the ops that have one, float64:
- reverse-over-forward: the gradient of the output tangent with respect to the primal and the tangent, against
  finite differences of the tangent (gradcheck of (x, t) -> tangent);
- forward-over-reverse: gradgradcheck(check_fwd_over_rev=True).
Where torch's reverse-over-forward differs (its jvp formulas for det, slogdet, solve and batch norm read auxiliary
outputs, LU or the saved statistics, as constants), torch's fails the same gradcheck: pinned below
(tests/deliberate_differences.py, "reverse-over-forward through jvps of auxiliary outputs").
"""
import warnings

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as torch_fwAD

import lantern
import lantern.autograd.forward_ad as fwAD
import opinfo_sweep  # tools/ is on pytest's pythonpath (pyproject.toml)
from deliberate_differences import DIFFERENCES
from lantern.ops.registry import REGISTRY
from oracle import assert_same, noncontig, to_lib

MAX_ELEMENTS = 40  # finite differences run the op twice per element of the primal and of the tangent
# Samples that fail here, each with the reason (the sweep fails on any other, and when one of these passes).
KNOWN = {
    "linalg.eig/0": "the gradient of eig's eigenvector tangents with respect to the primal goes through eig's "
                    "backward with a phase-dependent cotangent: lantern and torch raise the same RuntimeError "
                    "('... specified up to multiplication by e^{i phi} ... ill-defined')",
}


def _tangent_function(lib, ad, f):
    """(x, t) -> the tangents of f's floating outputs at x along t."""
    def tangents(x, t):
        with ad.dual_level():
            out = f(ad.make_dual(x, t))
            outs = out if isinstance(out, (tuple, list)) else (out,)
            found = [ad.unpack_dual(o).tangent for o in outs if isinstance(o, lib.Tensor) and o.is_floating_point()]
            return tuple(t_ for t_ in found if t_ is not None)
    return tangents


rng = np.random.default_rng(0)
A = noncontig(rng.standard_normal((3, 3)))
B = rng.standard_normal((3, 2))
BATCH = rng.standard_normal((4, 3, 2))
CASES = {
    "det": (lambda lib, x: lib.linalg.det(x), A),
    "det 1x1": (lambda lib, x: lib.linalg.det(x), A[:1, :1]),
    "slogdet": (lambda lib, x: lib.linalg.slogdet(x), A),
    "solve": (lambda lib, x: lib.linalg.solve(x, to_lib(lib, B)), A),
    "batch_norm": (lambda lib, x: lib.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)[0], BATCH),
}


def _reverse_over_forward(lib, ad, case):
    f, value = CASES[case]
    x, t = to_lib(lib, value), to_lib(lib, np.cos(np.asarray(value) * 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.autograd.gradcheck(_tangent_function(lib, ad, lambda d: f(lib, d)),
                                      (x.requires_grad_(), t.requires_grad_()), raise_exception=False)


@pytest.mark.parametrize("case", CASES)
def test_reverse_over_forward_matches_finite_differences_where_torchs_does_not(case):
    assert DIFFERENCES["reverse-over-forward through jvps of auxiliary outputs"]
    assert _reverse_over_forward(lantern, fwAD, case) is True
    assert _reverse_over_forward(torch, torch_fwAD, case) is False


@pytest.mark.parametrize("case", CASES)
def test_tangents_match_torch(case):
    f, value = CASES[case]
    got = _tangent_function(lantern, fwAD, lambda d: f(lantern, d))(to_lib(lantern, value),
                                                                    to_lib(lantern, np.cos(np.asarray(value) * 3)))
    expected = _tangent_function(torch, torch_fwAD, lambda d: f(torch, d))(to_lib(torch, value),
                                                                          to_lib(torch, np.cos(np.asarray(value) * 3)))
    expected = tuple(torch.zeros_like(e) if e._is_zerotensor() else e for e in expected)  # torch's efficient zero
    assert_same(got, expected, strides=False)


def test_second_derivative_of_det_by_forward_over_forward_is_the_hessian():
    x, torch_x = to_lib(lantern, A), to_lib(torch, A)
    hessian = torch.func.hessian(torch.linalg.det)(torch_x)
    assert_same(lantern.func.hessian(lantern.linalg.det)(x), hessian, strides=False)
    assert_same(lantern.func.jacfwd(lantern.func.jacfwd(lantern.linalg.det))(x), hessian, strides=False)
    assert_same(lantern.func.jacrev(lantern.func.jacfwd(lantern.linalg.det))(x), hessian, strides=False)
    torch_jacfwd2 = torch.func.jacfwd(torch.func.jacfwd(torch.linalg.det))(torch_x)
    assert not torch.allclose(torch_jacfwd2, hessian)  # torch's jvp reads LU as a constant


# ---- the sweep --------------------------------------------------------------------------------------------------
def _derived_names():
    return {op.schema.name for op in REGISTRY.values() if op.functional is op and op.derivative is not None
            and not op.derivative.nondifferentiable and op.derivative.forward.kind == "derived"}


def _derived_opinfos():
    """The OpInfos named like an op with a derived forward derivative (torch.linalg.det -> linalg_det, ...)."""
    names = _derived_names()

    def reaches(op):
        last = op.name.split(".")[-1]
        return bool({op.name.replace(".", "_"), last, "linalg_" + last, "special_" + last} & names)
    return {key: op for key, op in opinfo_sweep.in_scope_ops().items() if op.supports_forward_ad and reaches(op)}


def _failures(sample, op, translator):
    """What fails for one sample: reverse-over-forward or forward-over-reverse against finite differences."""
    x = sample.input
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or not 0 < x.numel() <= MAX_ELEMENTS:
        return None, []
    l_x, l_args, l_kwargs = translator.sample_value((x.detach(), sample.args, sample.kwargs))
    l_args = tuple(a.detach() if isinstance(a, lantern.Tensor) else a for a in l_args)
    wrapper, fn = translator.callable(op.gradcheck_wrapper), translator.callable(op.op)
    process = translator.callable(sample.output_process_fn_grad)  # gauge-free outputs (eig's phases)
    f = lambda d: process(wrapper(fn, d, *l_args, **l_kwargs))  # noqa: E731
    tangent = lantern.tensor(np.cos(np.arange(x.numel()).reshape(x.shape)), dtype=lantern.float64)
    checks = {
        "reverse-over-forward": lambda: lantern.autograd.gradcheck(
            _tangent_function(lantern, fwAD, f), (l_x.requires_grad_(), tangent.requires_grad_()),
            raise_exception=False, check_undefined_grad=False),
        "forward-over-reverse": lambda: lantern.autograd.gradgradcheck(
            f, (l_x.detach().requires_grad_(),), check_fwd_over_rev=True, check_rev_over_rev=False,
            check_undefined_grad=False, raise_exception=False),
    }
    failed = []
    for name, check in checks.items():
        passed, exc = opinfo_sweep.outcome(check)
        if not passed:
            failed.append(f"{name}: {type(exc).__name__}: {exc}" if exc else name)
    return True, failed


def _sweep(samples_per_opinfo):
    translator = opinfo_sweep.Translator()
    failures, checked = {}, 0
    for key, op, i, sample in opinfo_sweep.first_samples(_derived_opinfos(), torch.float64, samples_per_opinfo,
                                                         translator, requires_grad=True):
        ran, failed = _failures(sample, op, translator)
        checked += bool(ran)
        if failed:
            failures[f"{key}/{i}"] = failed
    return failures, checked


def test_derived_forward_derivatives_are_twice_differentiable():
    failures, checked = _sweep(1)
    assert checked > 40
    assert sorted(failures) == sorted(KNOWN)


@pytest.mark.slow
def test_derived_forward_derivatives_are_twice_differentiable_on_more_samples():
    failures, checked = _sweep(4)
    assert checked > 150
    assert sorted(failures) == sorted(KNOWN)
