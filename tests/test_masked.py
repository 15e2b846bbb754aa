"""torch.masked against torch: the namespace's names, the masked reductions and normalisations with their masks,
identities and errors (torch's OpInfos check every sample of them: tools/opinfo_sweep.py --ops masked.sum,...), and
the private helpers torch's own tests call. MaskedTensor is tested in tests/test_masked_tensor.py."""
import numpy as np
import pytest
import torch

import lantern
from oracle import check, noncontig, raises_like

rng = np.random.default_rng(0)
X = noncontig(rng.standard_normal((3, 4)))
KEEP = np.array([[True, False, True, True], [False, False, False, False], [True, True, False, True]])
ROW_KEEP = np.array([True, False, True, True])   # broadcast over the rows


def test_the_namespace_has_torchs_public_names():
    assert sorted(lantern.masked.__all__) == sorted(torch.masked.__all__)
    assert [name for name in torch.masked.__all__ if not hasattr(lantern.masked, name)] == []


REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dim", [None, 1, (0, 1), -1])
def test_reductions_see_only_kept_elements(name, dim):
    """A fully masked-out row (row 1) gives the identity, or nan where there is none."""
    if name == "norm":
        check(lambda m, x, k: m.masked.norm(x, 2.0, dim, mask=k), X, KEEP)
    else:
        check(lambda m, x, k: getattr(m.masked, name)(x, dim, mask=k), X, KEEP)
    check(lambda m, x, k: getattr(m.masked, name)(x, dim=dim, keepdim=True, mask=k) if name != "norm" else
          m.masked.norm(x, 1.0, dim, keepdim=True, mask=k), X, ROW_KEEP)


@pytest.mark.parametrize("name", ["argmax", "argmin", "median", "cumsum", "cumprod", "softmax", "log_softmax",
                                  "softmin"])
def test_one_dim_ops(name):
    check(lambda m, x, k: getattr(m.masked, name)(x, 1, mask=k), X, KEEP)
    check(lambda m, x, k: getattr(m.masked, name)(x, 0, mask=k), X, ROW_KEEP)


def test_without_a_mask_every_element_counts():
    check(lambda m, x: (m.masked.sum(x), m.masked.mean(x, 0), m.masked.var(x, 1, unbiased=False)), X)


def test_integer_inputs_accumulate_as_torch_does():
    ints = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    check(lambda m, x, k: (m.masked.sum(x, 1, mask=k), m.masked.prod(x, 0, mask=k), m.masked.amax(x, 1, mask=k),
                           m.masked.amin(x, 1, mask=k), m.masked.var(x, 1, mask=k)), ints, KEEP)


def test_var_corrections_and_normalize():
    check(lambda m, x, k: [m.masked.var(x, 1, correction=c, mask=k) for c in (0, 2, 0.5)], X, KEEP)
    check(lambda m, x, k: m.masked.normalize(x, 2.0, 1, mask=k), X, KEEP)
    check(lambda m, x, k: m.masked.normalize(x, 1, 0, eps=1e-3, mask=k), X, ROW_KEEP)


def test_logaddexp_masks_each_side():
    check(lambda m, a, b, ka, kb: m.masked.logaddexp(a, b, input_mask=ka, other_mask=kb), X, X * 2, KEEP, ROW_KEEP)


def test_complex_inputs():
    z = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(np.complex64)
    keep = np.array([[True, False, True], [True, True, False]])
    check(lambda m, x, k: (m.masked.sum(x, 1, mask=k), m.masked.mean(x, mask=k), m.masked.var(x, 1, mask=k),
                           m.masked.logsumexp(x, 1, mask=k)), z, keep)


def test_gradients_reach_only_kept_elements():
    def grads(m, x, k):
        x = x.requires_grad_()
        total = (m.masked.softmax(x, 1, mask=k) * x).sum() + m.masked.mean(x, 0, mask=k).nansum() + \
            m.masked.amax(x, 1, mask=k).clamp(min=-10).sum()
        return m.autograd.grad(total, x)[0]
    check(grads, X, KEEP)


@pytest.mark.parametrize("call", [
    lambda m, x, k: m.masked.sum(x, (0, 0), mask=k),            # a dim twice
    lambda m, x, k: m.masked.sum(x, 2, mask=k),                 # out of range
    lambda m, x, k: m.masked.sum(x, mask=k.unsqueeze(0)),       # a mask with more dims than the input
    lambda m, x, k: m.masked.mean(x.long(), mask=k),            # mean of integers
    lambda m, x, k: m.masked.median(x.long(), 1, mask=k),       # a fully masked-out row of integers
    lambda m, x, k: m.masked.var(x, 1, True, correction=1, mask=k),
])
def test_errors_are_torchs(call):
    raises_like(call, X, KEEP)


def test_private_helpers_torchs_tests_use():
    check(lambda m, x, k: m.masked._output_mask(m.masked.norm, x, 2.0, 1, mask=k, keepdim=True), X, KEEP)
    check(lambda m, x, k: m.masked._output_mask(m.masked.softmax, x, 1, mask=k), X, ROW_KEEP)
    check(lambda m, x, k: m.masked._input_mask(x, mask=k), X, ROW_KEEP.astype(np.int64))
    assert lantern.masked._canonical_dim((-1, 0), 3) == torch.masked._ops._canonical_dim((-1, 0), 3)
    for name in ("sum", "prod", "amax", "amin", "argmin", "logsumexp", "median"):
        for dtype in ("float32", "int16", "uint8"):
            expected = torch.masked._ops._reduction_identity(name, torch.zeros(1, dtype=getattr(torch, dtype)))
            got = lantern.masked._reduction_identity(name, lantern.zeros(1, dtype=getattr(lantern, dtype)))
            assert str(got.dtype).split(".")[1] == str(expected.dtype).split(".")[1], (name, dtype)
            np.testing.assert_equal(got.item(), expected.item())
