"""nn.Fold and nn.Unfold (torch.nn.modules.fold) against torch: outputs, gradients and reprs."""
import numpy as np
import pytest

from nn_oracle import check_module, same

UNFOLD = [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))]


@pytest.mark.parametrize("kwargs", UNFOLD, ids=str)
def test_unfold_matches_torch(kwargs):
    check_module(lambda nn: nn.Unfold(**kwargs), np.random.default_rng(0).random((2, 3, 6, 7)))
    same(lambda lib: repr(lib.nn.Unfold(**kwargs)))


# (kwargs, input shape): channels·kernel area rows, one column per block position
FOLD = [(dict(output_size=(4, 5), kernel_size=2), (2, 3 * 4, 3 * 4)),
        (dict(output_size=6, kernel_size=3, padding=1, stride=2), (2, 2 * 9, 3 * 3))]


@pytest.mark.parametrize("kwargs, shape", FOLD, ids=str)
def test_fold_matches_torch(kwargs, shape):
    check_module(lambda nn: nn.Fold(**kwargs), np.random.default_rng(1).random(shape))
    same(lambda lib: repr(lib.nn.Fold(**kwargs)))
