"""torch.nn.utils.fusion (batch norm folded into conv/linear) and torch.nn.utils.skip_init against torch."""
import numpy as np
import pytest
import torch

import lantern
from nn_oracle import same, same_error


def _pair(make):
    theirs, ours = make(torch), make(lantern)
    rng = np.random.default_rng(0)
    state = {k: (v.numpy() + rng.random(v.shape).astype(v.numpy().dtype) if v.dtype.is_floating_point else v.numpy())
             for k, v in theirs.state_dict().items()}
    theirs.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    ours.load_state_dict({k: lantern.tensor(v) for k, v in state.items()})
    return ours.eval(), theirs.eval()


CASES = {
    "conv2d": (lambda lib: lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.BatchNorm2d(3)), "conv", {}, (2, 2, 5, 5)),
    "conv1d no bias": (lambda lib: lib.nn.Sequential(lib.nn.Conv1d(2, 3, 3, bias=False), lib.nn.BatchNorm1d(3)),
                       "conv", {}, (2, 2, 6)),
    "conv transpose": (lambda lib: lib.nn.Sequential(lib.nn.ConvTranspose2d(2, 3, 3), lib.nn.BatchNorm2d(3)),
                       "conv", {"transpose": True}, (1, 2, 4, 4)),
    "linear": (lambda lib: lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3)), "linear", {}, (5, 4)),
    "linear bn 1": (lambda lib: lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(1)), "linear", {}, (5, 4)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_layer_matches_torch(case):
    make, kind, kwargs, shape = CASES[case]
    ours, theirs = _pair(make)
    fuse = {"conv": "fuse_conv_bn_eval", "linear": "fuse_linear_bn_eval"}[kind]
    fused_theirs = getattr(torch.nn.utils, fuse)(theirs[0], theirs[1], **kwargs)
    fused_ours = getattr(lantern.nn.utils, fuse)(ours[0], ours[1], **kwargs)
    for (name, p), (_, q) in zip(fused_ours.named_parameters(), fused_theirs.named_parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
        assert type(p) is lantern.nn.Parameter and p.requires_grad == q.requires_grad
    if case != "linear bn 1":  # a 1-feature norm cannot follow 3 outputs; only the folded weights are compared
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(fused_ours(lantern.tensor(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_fusion_errors_match_torch():
    same_error(lambda lib: lib.nn.utils.fuse_conv_bn_eval(lib.nn.Conv2d(1, 2, 1), lib.nn.BatchNorm2d(2)))
    same_error(lambda lib: lib.nn.utils.fuse_linear_bn_eval(lib.nn.Linear(2, 3).eval(), lib.nn.BatchNorm1d(2).eval()))
    same_error(lambda lib: lib.nn.utils.fuse_linear_bn_eval(
        lib.nn.Linear(2, 3).eval(), lib.nn.BatchNorm1d(3, track_running_stats=False).eval()))


def test_skip_init_matches_torch():
    same(lambda lib: [(n, tuple(p.shape), str(p.device), p.requires_grad)
                      for n, p in lib.nn.utils.skip_init(lib.nn.Conv2d, 2, 3, 3).named_parameters()])
    same_error(lambda lib: lib.nn.utils.skip_init(lib.nn.ReLU))
    same_error(lambda lib: lib.nn.utils.skip_init(int))
