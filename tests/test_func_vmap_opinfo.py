"""vmap over torch's OpInfo samples, against torch.vmap: each sample's input stacked with a second example (its
values in reverse order, so that examples differ and stay in the op's domain) and mapped over, the other
arguments unbatched, in torch and in lantern. Where torch.vmap computes, lantern's must give the same values
(through the op's batching rule, or its per-example fallback); where torch.vmap refuses (a random op, data-dependent
control flow), the sample says nothing about lantern and is left out.

The exhaustive sweep (every in-scope OpInfo, float32, SAMPLES_PER_OPINFO samples each) is in the slow tier; the
default tier runs the OpInfos named like an op that has a batching rule, so every kind of rule runs.
"""
import pytest
import torch

import lantern
import opinfo_sweep  # tools/ is on pytest's pythonpath (pyproject.toml)
from lantern.ops.registry import REGISTRY
from oracle import assert_same

SAMPLES_PER_OPINFO = 2
# torch.vmap runs some ops as one batched kernel that adds in another order than one example's kernel (addbmm,
# conv_transpose3d: 6e-5 apart in float32), so values are compared a little more loosely than the op sweep does
VMAP_TOLERANCE = {"atol": 1e-4, "rtol": 1e-4}

# Samples whose lantern outcome differs from torch.vmap's, each with the reason. The sweep fails on any other
# difference, and when one of these starts to agree (then delete its entry).
_ITEM = ("lantern's {} is a composite that reads {} with .item(), which vmap refuses as data-dependent; torch's is "
         "one kernel, which its fallback runs per example")
KNOWN = {
    "histogram/0": _ITEM.format("histogram", "the range"),
    "linspace.tensor_overload/0": _ITEM.format("linspace", "tensor start/end"),
    "linspace.tensor_overload/1": _ITEM.format("linspace", "tensor start/end"),
    "logspace.tensor_overload/0": _ITEM.format("logspace", "tensor start/end"),
    "logspace.tensor_overload/1": _ITEM.format("logspace", "tensor start/end"),
    "linalg.eig/0": ("eigenvectors are unique only up to a phase, which LAPACK builds choose differently (the op "
                     "sweep compares them through their phase-free products; this sweep compares values)"),
}


def _batched_pair(x):
    """x and x's values in reverse order, stacked: a batch of two different examples."""
    return torch.stack([x, x.flatten().flip(0).reshape(x.shape)])


def _mismatch(op, sample, translator):
    """Why lantern's vmap of the sample differs from torch's, or None (also when torch.vmap refuses it)."""
    if not isinstance(sample.input, torch.Tensor) or sample.input.layout != torch.strided:
        return None
    args, kwargs = sample.args, sample.kwargs
    batch = _batched_pair(sample.input)
    l_batch, l_args, l_kwargs = translator.sample_value((batch, args, kwargs))
    l_op = translator.callable(op.op)
    expected, torch_exc = opinfo_sweep.outcome(lambda: torch.vmap(lambda t: op.op(t, *args, **kwargs))(batch))
    if torch_exc is not None:
        return None
    got, lantern_exc = opinfo_sweep.outcome(lambda: lantern.func.vmap(lambda t: l_op(t, *l_args, **l_kwargs))(l_batch))
    if lantern_exc is not None:
        return opinfo_sweep._one_line(f"lantern raised {type(lantern_exc).__name__}: {lantern_exc}")
    try:
        assert_same(opinfo_sweep._dense(got), opinfo_sweep._dense(expected), strides=False, **VMAP_TOLERANCE)
    except AssertionError as exc:
        return opinfo_sweep._one_line("mismatch: " + (str(exc).strip().splitlines() or ["values"])[0])
    return None


def _rule_names():
    """The op names (without overload) whose records have a batching rule."""
    return {op.schema.name for op in REGISTRY.values() if op.batch_rule is not None}


def _with_rules(ops):
    names = _rule_names()
    return {key: op for key, op in ops.items() if key.split(".")[-1] in names or op.name.split(".")[-1] in names}


def _sweep(ops):
    translator = opinfo_sweep.Translator()
    failures, tried = {}, 0
    for key, op, i, sample in opinfo_sweep.first_samples(ops, torch.float32, SAMPLES_PER_OPINFO, translator):
        if op.has_nondeterministic_output:
            continue
        tried += 1
        reason = _mismatch(op, sample, translator)
        if reason:
            failures[f"{key}/{i}"] = reason
    return failures, tried


def _assert_known(failures, ops):
    unexpected, now_agree = opinfo_sweep.known_differences(failures, ops, KNOWN)
    assert unexpected == {}
    assert now_agree == [], "these KNOWN samples agree with torch.vmap now: delete their entries"


def test_vmap_of_opinfos_with_batching_rules_matches_torch():
    ops = _with_rules(opinfo_sweep.in_scope_ops())
    failures, tried = _sweep(ops)
    assert tried > 150
    _assert_known(failures, ops)


@pytest.mark.slow
def test_vmap_of_every_opinfo_matches_torch():
    ops = opinfo_sweep.in_scope_ops()
    failures, tried = _sweep(ops)
    assert tried > 800
    _assert_known(failures, ops)
