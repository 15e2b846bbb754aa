"""torch's TestMathBits (test_conj_view, test_neg_view) on lantern: every in-scope OpInfo runs its first samples with
the input given as a conjugate view (complex64) or a negative view (float32) of the same values, in torch and in
lantern, and the outcomes must agree: values, dtypes, shapes and the results' bits, or the same error class (torch
refuses view_as_real of a conjugate view, for one). A sample whose plain input already gives lantern another result
than torch's is the OpInfo sweep's business and is left out here. This reaches the Conjugate/Negative fallback
through every operator. Slow: it imports torch's whole OpInfo database and runs ~1,500 samples (a few minutes).
"""

import pytest
import torch

import lantern
import opinfo_sweep  # tools/ is on pytest's pythonpath (pyproject.toml)

SAMPLES_PER_OPINFO = 2

_ALIASING_TO = ("x.cfloat()/x.float(memory_format=contiguous_format) of a tensor already in that format is x itself "
                "in torch (its to() aliases then); lantern's to() copies for an explicit memory format, so the copy "
                "holds the resolved values (plain tensors too: a copy where torch aliases)")
_VIEW_PIXEL_SHUFFLE = ("lantern's pixel_shuffle/pixel_unshuffle of these shapes is a view, so it keeps the bit; "
                       "torch's is a copy")
# Samples whose outcome differs from torch's for a reason other than the fallback being wrong, each with the reason.
# The test fails when another sample differs, and when one of these starts to agree (then delete its entry).
KNOWN = {
    "conj": {
        "cfloat/1": _ALIASING_TO,
        "dot/1": "torch's dot of a conjugate view returns conj(vdot(...)) as a conjugate view; lantern the values",
        "nn.functional.pixel_shuffle/0": _VIEW_PIXEL_SHUFFLE, "nn.functional.pixel_unshuffle/0": _VIEW_PIXEL_SHUFFLE,
    },
    "neg": {
        "float/1": _ALIASING_TO,
        "conj_physical/0": ("conj_physical of a real tensor is an alias of it; torch's keeps the negative bit, "
                            "lantern's runs on the resolved input"),
        "nn.functional.max_pool1d/1": ("torch 2.13's max_pool1d (ceil_mode, no indices) reads a negative view's "
                                       "memory without the bit, so its values are wrong; lantern's are those of "
                                       "max_pool1d on the view's values"),
        "nn.functional.pixel_shuffle/0": _VIEW_PIXEL_SHUFFLE, "nn.functional.pixel_unshuffle/0": _VIEW_PIXEL_SHUFFLE,
    },
}

BITS = {
    # kind: (dtype of the samples, how a view with the bit holding x's values is made, the bit's test)
    "conj": ("complex64", lambda m, x: m._conj(m.conj_physical(x)), lambda t: t.is_conj()),
    "neg": ("float32", lambda m, x: m._neg_view(m.neg(x)), lambda t: t.is_neg()),
}


def _bits(x, has_bit):
    return [has_bit(t) for t in opinfo_sweep._flatten(x) if isinstance(t, (torch.Tensor, lantern.Tensor))]


def _mismatch(op, sample, dtype, translator, make_view, has_bit):
    """Why lantern's outcome on the view differs from torch's, or None."""
    if not isinstance(sample.input, torch.Tensor) or sample.input.layout != torch.strided or \
            sample.input.dtype != dtype:
        return None
    args, kwargs = (sample.input, *sample.args), sample.kwargs
    l_args, l_kwargs = translator.sample_value((args, kwargs))
    t_args = (make_view(torch, args[0]), *args[1:])
    l_args = (make_view(lantern, l_args[0]), *l_args[1:])
    opinfo_sweep._seed(torch, lantern)
    expected, torch_exc = opinfo_sweep.outcome(lambda: op.op(*t_args, **kwargs))
    opinfo_sweep._seed(torch, lantern)
    got, lantern_exc = opinfo_sweep.outcome(lambda: translator.callable(op.op)(*l_args, **l_kwargs))
    if torch_exc is not None or lantern_exc is not None:
        if torch_exc is None or lantern_exc is None:
            return f"torch raised {torch_exc!r}, lantern raised {lantern_exc!r}"
        return opinfo_sweep._same_error(torch_exc, lantern_exc)
    if op.has_nondeterministic_output:
        return None
    mismatch = opinfo_sweep._compare(got, expected) or (
        None if _bits(got, has_bit) == _bits(expected, has_bit) else
        f"bits of the results: lantern {_bits(got, has_bit)}, torch {_bits(expected, has_bit)}")
    if mismatch and _differs_without_the_bit(op, args, kwargs, translator, has_bit):
        return None  # the OpInfo sweep's business (tests/opinfo_expected.json), not the bit's
    return mismatch


def _differs_without_the_bit(op, args, kwargs, translator, has_bit):
    """Whether the sample's plain input already gives lantern a result other than torch's (values, or bits that
    torch's kernel sets on its own outputs, as svd's Vh)."""
    l_args, l_kwargs = translator.sample_value((args, kwargs))
    opinfo_sweep._seed(torch, lantern)
    expected, torch_exc = opinfo_sweep.outcome(lambda: op.op(*args, **kwargs))
    opinfo_sweep._seed(torch, lantern)
    got, lantern_exc = opinfo_sweep.outcome(lambda: translator.callable(op.op)(*l_args, **l_kwargs))
    if torch_exc is not None or lantern_exc is not None:
        return True
    return bool(opinfo_sweep._compare(got, expected)) or _bits(got, has_bit) != _bits(expected, has_bit)


@pytest.mark.slow
@pytest.mark.parametrize("kind", BITS)
def test_every_opinfo_takes_a_view_with_a_bit(kind):
    dtype_name, make_view, has_bit = BITS[kind]
    dtype = getattr(torch, dtype_name)
    translator = opinfo_sweep.Translator()
    failures, tried = {}, 0
    for key, op, i, sample in opinfo_sweep.first_samples(opinfo_sweep.in_scope_ops(), dtype, SAMPLES_PER_OPINFO,
                                                         translator):
        tried += 1
        reason = _mismatch(op, sample, dtype, translator, make_view, has_bit)
        if reason:
            failures[f"{key}/{i}"] = reason
    assert tried > 500
    unexpected = {sample: reason for sample, reason in failures.items() if sample not in KNOWN[kind]}
    assert unexpected == {}
    assert sorted(failures) == sorted(KNOWN[kind]), "these KNOWN samples agree with torch now: delete their entries"
