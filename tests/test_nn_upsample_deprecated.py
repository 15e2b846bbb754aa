"""F.upsample, F.upsample_nearest and F.upsample_bilinear: torch's old spellings of interpolate, with its warnings."""
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import check

CALLS = {
    "upsample": lambda F, x: F.upsample(x, scale_factor=2, mode="bilinear", align_corners=False),
    "upsample size": lambda F, x: F.upsample(x, size=(3, 5)),
    "upsample_nearest": lambda F, x: F.upsample_nearest(x, scale_factor=2),
    "upsample_bilinear": lambda F, x: F.upsample_bilinear(x, size=(5, 7)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_matches_torch_and_warns_alike(name):
    x = np.random.default_rng(0).random((1, 2, 3, 4)).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(lambda lib, t: CALLS[name](lib.nn.functional, t), x)
    messages = [(w.category, str(w.message), w.filename) for w in caught if "deprecated" in str(w.message)]
    assert len(messages) == 2 and messages[0][:2] == messages[1][:2]
    assert messages[1][2] == __file__  # the warning points at the caller, as torch's stacklevel does
