"""Lazy modules (torch.nn.LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*) against
torch: reprs before and after the first call, the class they become, parameters drawn alike for the same seed,
outputs, state_dict before materializing, loading into a lazy module, and errors."""
import numpy as np
import pytest
import torch

import lantern
from nn_oracle import same, same_error

CASES = {
    "LazyLinear": (lambda nn: nn.LazyLinear(3), (2, 5)),
    "LazyLinear no bias": (lambda nn: nn.LazyLinear(3, bias=False), (4, 2, 5)),
    "LazyConv1d": (lambda nn: nn.LazyConv1d(4, 3, padding=1), (2, 3, 6)),
    "LazyConv2d groups": (lambda nn: nn.LazyConv2d(4, 3, groups=2), (2, 2, 5, 5)),
    "LazyConv3d unbatched": (lambda nn: nn.LazyConv3d(2, 2), (3, 4, 4, 4)),
    "LazyConvTranspose1d": (lambda nn: nn.LazyConvTranspose1d(4, 3, stride=2), (2, 3, 5)),
    "LazyConvTranspose2d": (lambda nn: nn.LazyConvTranspose2d(2, 3, output_padding=1, stride=2), (1, 3, 4, 4)),
    "LazyConvTranspose3d": (lambda nn: nn.LazyConvTranspose3d(2, 2, bias=False), (1, 2, 3, 3, 3)),
    "LazyBatchNorm1d": (lambda nn: nn.LazyBatchNorm1d(), (4, 3)),
    "LazyBatchNorm2d untracked": (lambda nn: nn.LazyBatchNorm2d(track_running_stats=False), (2, 3, 4, 4)),
    "LazyBatchNorm3d": (lambda nn: nn.LazyBatchNorm3d(affine=False), (2, 3, 2, 2, 2)),
    "LazyInstanceNorm1d": (lambda nn: nn.LazyInstanceNorm1d(), (2, 3, 5)),
    "LazyInstanceNorm2d plain": (lambda nn: nn.LazyInstanceNorm2d(affine=False, track_running_stats=False),
                                 (2, 3, 4, 4)),
    "LazyInstanceNorm3d": (lambda nn: nn.LazyInstanceNorm3d(), (2, 3, 2, 2, 2)),
}


def _first_call(lib, make, x):
    lib.manual_seed(0)
    module = make(lib.nn)
    before = (repr(module), list(module.state_dict()))
    out = module(lib.tensor(x))
    return module, before, out


@pytest.mark.parametrize("case", sorted(CASES))
def test_first_call_materializes_as_torch(case):
    make, shape = CASES[case]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours, ours_before, ours_out = _first_call(lantern, make, x)
    theirs, theirs_before, theirs_out = _first_call(torch, make, x)
    assert ours_before == theirs_before
    assert repr(ours) == repr(theirs) and type(ours).__name__ == type(theirs).__name__
    assert not hasattr(ours, "_initialize_hook") and not ours._forward_pre_hooks
    for (name, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7, err_msg=name)
    np.testing.assert_allclose(ours_out.detach().numpy(), theirs_out.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["LazyLinear", "LazyConv1d", "LazyBatchNorm1d"])
def test_loading_a_state_dict_materializes(case):
    make, shape = CASES[case]
    trained, _, _ = _first_call(torch, make, np.ones(shape, np.float32))
    state = trained.state_dict()

    def load(lib):
        module = make(lib.nn)
        module.load_state_dict({k: lib.tensor(v.numpy()) for k, v in state.items()})
        return repr(module), [(k, tuple(v.shape)) for k, v in module.state_dict().items()]

    same(load)


def test_errors_match_torch():
    same_error(lambda lib: lib.nn.LazyConv2d(4, 3)(lib.ones(3, 5)))
    same_error(lambda lib: lib.nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 5, 5)))
    same(lambda lib: [type(p).__name__ for p in lib.nn.LazyLinear(2).parameters()])
