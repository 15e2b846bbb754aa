"""Forward-mode AD over torch's OpInfo samples, wherever the OpInfo says supports_forward_ad:
- against torch's forward AD: each sample's input becomes a dual tensor (the same random tangent in both) and the
  output tangents must agree in value;
- gradcheck(check_forward_ad=True): lantern's forward-mode Jacobian (every tensor argument that requires grad made
  dual in turn) against finite differences, where torch's own forward-mode gradcheck accepts the sample (finite
  differences hold there, and the inputs are small).

The default tier sweeps the OpInfos named like an op with a hand formula or a linear forward derivative (one sample
each); the exhaustive sweeps (every such OpInfo, derived ops included) are in the slow tier.
"""
import pytest
import torch
import torch.autograd.forward_ad as torch_fwAD

import lantern
import lantern.autograd.forward_ad as fwAD
import opinfo_sweep  # tools/ is on pytest's pythonpath (pyproject.toml)
from lantern.ops.registry import REGISTRY
from opinfo_sweep import _flatten, _replace
from oracle import assert_same

SAMPLES_PER_OPINFO = 3
GRADCHECK_SAMPLES_PER_OPINFO = 2
TOLERANCE = {"atol": 1e-6, "rtol": 1e-5}

# Samples whose lantern outcome differs from torch's, each with the reason. The sweep fails on any other
# difference, and when one of these starts to agree (then delete its entry).
_SIGNS = ("eigenvectors are unique only up to {}, which LAPACK builds choose differently: lantern's primal columns "
          "and their tangents are torch's times the same {} (the op sweep compares the primals through "
          "phase-free products)")
_RANDOM = ("a randomized algorithm: its random projections come from lantern's generator, not torch's, so the "
           "low-rank factors and their tangents differ")
KNOWN = {
    "linalg.eigh/0": _SIGNS.format("a sign", "signs"),
    "linalg.eig/0": _SIGNS.format("a phase", "phases"),
    **{f"{name}/{i}": _RANDOM for name in ("pca_lowrank", "svd_lowrank") for i in range(SAMPLES_PER_OPINFO)},
}
# The same for complex128 samples.
_TORCH_NAN = ("torch's complex logcumsumexp tangent is nan in places (from the first element on) where lantern's "
              "is the finite Σ t eˣ / Σ eˣ")
COMPLEX_KNOWN = {
    "linalg.eigh/0": _SIGNS.format("a phase", "phases"),
    "logcumsumexp/0": _TORCH_NAN,
    "logcumsumexp/1": _TORCH_NAN,
    **{f"{name}/{i}": _RANDOM for name in ("pca_lowrank", "svd_lowrank") for i in range(SAMPLES_PER_OPINFO)},
}
# The same for the forward-mode gradcheck (none now).
GRADCHECK_KNOWN = {}


def _tangents(out, unpack):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [unpack(o).tangent if isinstance(o, (torch.Tensor, lantern.Tensor)) else None for o in outs]


def _mismatch(op, sample, translator):
    """(compared, why lantern's output tangents differ from torch's for the sample or None); not compared when
    torch refuses the sample."""
    x = sample.input
    if not isinstance(x, torch.Tensor) or x.layout != torch.strided or not (x.is_floating_point() or x.is_complex()):
        return False, None
    args, kwargs = sample.args, sample.kwargs
    gen = torch.Generator().manual_seed(0)
    tangent = torch.randn(x.shape, dtype=x.dtype, generator=gen)
    l_x, l_tangent, l_args, l_kwargs = translator.sample_value((x.detach(), tangent, args, kwargs))
    l_op = translator.callable(op.op)

    def run_torch():
        with torch_fwAD.dual_level():
            return _tangents(op.op(torch_fwAD.make_dual(x.detach(), tangent), *args, **kwargs), torch_fwAD.unpack_dual)

    def run_lantern():
        with fwAD.dual_level():
            return _tangents(l_op(fwAD.make_dual(l_x, l_tangent), *l_args, **l_kwargs), fwAD.unpack_dual)

    expected, torch_exc = opinfo_sweep.outcome(run_torch)
    if torch_exc is not None:
        return False, None
    got, lantern_exc = opinfo_sweep.outcome(run_lantern)
    if lantern_exc is not None:
        return True, opinfo_sweep._one_line(f"lantern raised {type(lantern_exc).__name__}: {lantern_exc}")
    return True, _tangent_difference(got, expected)


def _tangent_difference(got, expected):
    """How lantern's output tangents differ from torch's, or None."""
    for g, e in zip(got, expected):
        if e is None:
            continue
        if e._is_zerotensor():  # torch's efficient zero tangent: compare as plain zeros
            e = torch.zeros_like(e)
        if g is None:
            return "lantern's output has no tangent"
        try:
            assert_same(opinfo_sweep._dense(g.detach()), opinfo_sweep._dense(e.detach()), strides=False, **TOLERANCE)
        except (AssertionError, RuntimeError, TypeError) as exc:
            return opinfo_sweep._one_line("mismatch: " + (str(exc).strip().splitlines() or ["values"])[0])
    return None


def _differentiable(xs, lib):
    return tuple(x for x in _flatten(xs) if isinstance(x, lib.Tensor) and (x.is_floating_point() or x.is_complex()))


def _gradcheck(lib, op_fn, wrapper, process, structure, leaves):
    def function(*new_leaves):
        args, kwargs = _replace(structure, dict(zip(map(id, leaves), new_leaves)))
        return _differentiable(process(wrapper(op_fn, *args, **kwargs)), lib)
    with opinfo_sweep._quiet():
        return lib.autograd.gradcheck(function, tuple(leaves), check_forward_ad=True, check_backward_ad=False,
                                      check_undefined_grad=False, raise_exception=False)


def _gradcheck_failure(op, sample, translator):
    """(was lantern's gradcheck run, why it fails where torch's passes or None)."""
    structure = ((sample.input, *sample.args), sample.kwargs)
    leaves = [x for x in _flatten(structure) if isinstance(x, torch.Tensor) and x.requires_grad]
    if not leaves or sum(x.numel() for x in leaves) > opinfo_sweep.GRADCHECK_MAX_ELEMENTS:
        return False, None
    try:
        if not _gradcheck(torch, op.op, op.gradcheck_wrapper, sample.output_process_fn_grad, structure, leaves):
            return False, None
    except Exception:
        return False, None  # torch refuses the sample under forward AD: it says nothing about lantern
    l_leaves = []
    l_structure = translator.sample_value(structure, l_leaves)
    try:
        passed = _gradcheck(lantern, translator.callable(op.op), translator.callable(op.gradcheck_wrapper),
                            translator.callable(sample.output_process_fn_grad), l_structure, l_leaves)
    except Exception as exc:
        return True, opinfo_sweep._one_line(f"lantern raised {type(exc).__name__}: {exc}")
    return True, None if passed else "forward-mode Jacobian differs from finite differences"


def _sweep(ops, samples_per_opinfo, check=_mismatch, dtype=torch.float64):
    """({sample: why it fails}, how many samples were checked): `check` on the first samples of each OpInfo."""
    translator = opinfo_sweep.Translator()
    ops = {key: op for key, op in ops.items() if op.supports_forward_ad}
    failures, tried = {}, 0
    for key, op, i, sample in opinfo_sweep.first_samples(ops, dtype, samples_per_opinfo, translator,
                                                         requires_grad=True):
        ran, reason = check(op, sample, translator)
        tried += ran
        if reason:
            failures[f"{key}/{i}"] = reason
    return failures, tried


def _hand_or_linear_names():
    """The op names (without overload) whose forward derivative is a formula or linear."""
    return {op.schema.name for op in REGISTRY.values()
            if op.derivative is not None and op.derivative.forward is not None
            and op.derivative.forward.kind in ("formula", "linear")}


def _assert_known(failures, ops, known):
    unexpected, now_agree = opinfo_sweep.known_differences(failures, ops, known)
    assert unexpected == {}
    assert now_agree == [], "these known samples agree with torch now: delete their entries"


def _hand_or_linear_opinfos():
    names = _hand_or_linear_names()
    return {key: op for key, op in opinfo_sweep.in_scope_ops().items() if op.name.split(".")[-1] in names}


def test_forward_ad_of_opinfos_with_hand_formulas_matches_torch():
    ops = _hand_or_linear_opinfos()
    failures, tried = _sweep(ops, 1)
    assert tried > 100
    _assert_known(failures, ops, KNOWN)


@pytest.mark.slow
def test_forward_ad_of_every_opinfo_matches_torch():
    ops = opinfo_sweep.in_scope_ops()
    failures, tried = _sweep(ops, SAMPLES_PER_OPINFO)
    assert tried > 1000
    _assert_known(failures, ops, KNOWN)


@pytest.mark.slow
def test_forward_ad_of_every_opinfo_matches_torch_in_complex128():
    ops = opinfo_sweep.in_scope_ops()
    failures, tried = _sweep(ops, SAMPLES_PER_OPINFO, dtype=torch.complex128)
    assert tried > 500
    _assert_known(failures, ops, COMPLEX_KNOWN)


def test_forward_gradcheck_of_opinfos_with_hand_formulas():
    ops = _hand_or_linear_opinfos()
    failures, checked = _sweep(ops, 1, _gradcheck_failure)
    assert checked > 80
    _assert_known(failures, ops, GRADCHECK_KNOWN)


@pytest.mark.slow
def test_forward_gradcheck_of_every_opinfo():
    ops = opinfo_sweep.in_scope_ops()
    failures, checked = _sweep(ops, GRADCHECK_SAMPLES_PER_OPINFO, _gradcheck_failure)
    assert checked > 500
    _assert_known(failures, ops, GRADCHECK_KNOWN)
