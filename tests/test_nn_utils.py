"""nn.utils gradient clipping and parameter/vector conversion (lantern/nn/utils/{clip_grad,convert_parameters}.py)
against torch: the returned norms, the clipped gradients in place, warnings and error messages.
"""
import types
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, noncontig, to_lib

RNG = np.random.default_rng(3)
SHAPES = [(3, 4), (5,), (2, 2, 2)]


def make_params(lib, scale=1.0, dtype=np.float32, none_at=None):
    """Three leaf tensors with non-contiguous grads (scaled by `scale`); the one at `none_at` has no grad."""
    rng = np.random.default_rng(11)
    params = []
    for i, shape in enumerate(SHAPES):
        p = lib.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
        grad = noncontig((rng.standard_normal(shape) * scale).astype(dtype))
        if i != none_at:
            p.grad = to_lib(lib, grad)
        params.append(p)
    return params


def run_both(fn, **kw):
    """fn(lib, params) on both libraries; compares the results and the params' grads afterwards."""
    out = []
    for lib in (torch, lantern):
        params = make_params(lib, **kw)
        result = fn(lib, params)
        out.append((result, [p.grad for p in params]))
    assert_same(out[1], out[0], strides=False)
    return out


@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf"), 0.5, 3])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    run_both(lambda lib, ps: lib.nn.utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type))


@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm_options(foreach):
    run_both(lambda lib, ps: lib.nn.utils.clip_grad_norm_(ps, 1.0, foreach=foreach), none_at=1)
    run_both(lambda lib, ps: lib.nn.utils.clip_grad_norm_(ps[0], 0.1, foreach=foreach), dtype=np.float64)
    run_both(lambda lib, ps: lib.nn.utils.clip_grad_norm_(iter(ps), 2, norm_type="inf"))
    run_both(lambda lib, ps: lib.nn.utils.clip_grad_value_(ps, 0.3, foreach=foreach), none_at=0)


def test_total_norm_and_clip_with_norm_match_torch():
    def fn(lib, ps):
        total = lib.nn.utils.get_total_norm([p.grad for p in ps], norm_type=1.5)
        lib.nn.utils.clip_grads_with_norm_(ps, 0.7, total)
        return total
    run_both(fn)
    for lib in (torch, lantern):
        empty = lib.nn.utils.get_total_norm([])
        assert empty.item() == 0.0 and empty.dtype == lib.float32
        assert lib.nn.utils.clip_grad_norm_([lib.zeros(2, requires_grad=True)], 1.0).item() == 0.0
    mixed = [lib.nn.utils.get_total_norm([lib.ones(2, dtype=lib.float64), lib.ones(3)]) for lib in (torch, lantern)]
    assert_same(mixed[1], mixed[0])


def test_nonfinite_norm():
    messages = []
    for lib in (torch, lantern):
        params = make_params(lib)
        params[1].grad[2] = float("nan")
        with pytest.raises(RuntimeError) as info:
            lib.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
        messages.append(str(info.value))
    assert messages[1] == messages[0]

    def scaled_by_inf(lib, ps):
        ps[0].grad[0, 0] = float("inf")
        return lib.nn.utils.clip_grad_norm_(ps, 1.0)
    run_both(scaled_by_inf)


def test_clip_warnings_match_torch():
    for lib in (torch, lantern):
        with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
            lib.nn.utils.clip_grad_norm_((p for p in []), 1.0)
        with pytest.warns(FutureWarning, match="`torch.nn.utils.clip_grad_norm` is now deprecated"):
            lib.nn.utils.clip_grad_norm(make_params(lib), 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.nn.utils.clip_grad_norm_([], 1.0)  # an empty list is not a generator: no warning


def test_clipping_is_not_recorded_by_autograd():
    for lib in (torch, lantern):
        w = lib.ones(3, requires_grad=True)
        w.grad, = lib.autograd.grad((w * w * lib.tensor([1.5, 2.0, 0.0])).sum(), w, create_graph=True)
        total = lib.nn.utils.clip_grad_norm_([w], 1.0)
        assert not total.requires_grad and total.item() == 5.0 and w.grad.grad_fn is not None


def test_parameters_to_vector_and_back():
    vectors = []
    values = [noncontig(RNG.standard_normal(s)) for s in SHAPES]
    for lib in (torch, lantern):
        params = [lib.nn.Parameter(to_lib(lib, v)) for v in values]
        vec = lib.nn.utils.parameters_to_vector(params)
        vectors.append(vec)
        new = lib.arange(float(vec.numel()), dtype=vec.dtype)
        lib.nn.utils.vector_to_parameters(new, params)
        vectors.append([p.clone() for p in params])
        assert all(isinstance(p, lib.nn.Parameter) for p in params)
        new[0] = -1.0  # the parameters now view the vector's storage, as in torch
        vectors.append(params[0][0, 0].item())
    assert_same(vectors[3:], vectors[:3], strides=False)


def test_convert_parameters_of_a_module():
    out = []
    for lib in (torch, lantern):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2)
        vec = lib.nn.utils.parameters_to_vector(layer.parameters())
        lib.nn.utils.vector_to_parameters(vec * 2, layer.parameters())
        out.append((vec.shape, layer.weight.shape, layer.bias.shape))
        assert lib.equal(lib.nn.utils.parameters_to_vector(layer.parameters()), vec * 2)
    assert_same(out[1], out[0])


@pytest.mark.parametrize("bad", [3, [1.0, 2.0], np.zeros(2), None, types, np.ndarray, len, ValueError("x")])
def test_vector_to_parameters_type_error_matches_torch(bad):
    messages = []
    for lib in (torch, lantern):
        with pytest.raises(TypeError) as info:
            lib.nn.utils.vector_to_parameters(bad, [lib.zeros(2)])
        messages.append(str(info.value))
    assert messages[1] == messages[0]
