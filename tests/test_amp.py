"""torch.amp on the CPU: autocast's per-op policy, its regions and cache, and GradScaler, each against torch."""
import pickle
import sys
import threading
import warnings

import numpy as np
import pytest
import torch

import autocast_cases
import lantern
from oracle import as_numpy

REGIONS = [(torch.bfloat16, lantern.bfloat16), (torch.float16, lantern.float16)]


# ---- every op's output dtype under autocast ---------------------------------------------------------------------

EXPECTATIONS = autocast_cases.expectations()


@pytest.mark.parametrize("key", sorted(EXPECTATIONS), ids=" ".join)
def test_autocast_output_dtype_matches_torch(key):
    """The op's outputs under autocast have torch's dtypes and values close to torch's."""
    expected = EXPECTATIONS[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = expected.run_lantern()
    assert autocast_cases.dtype_names(got) == autocast_cases.dtype_names(expected.result)
    if expected.case.values_comparable:
        for g, e in zip(autocast_cases.tensors_of(got), autocast_cases.tensors_of(expected.result)):
            if e.is_floating_point():   # (indices of ties, as argsort's, may differ between sorts)
                assert autocast_cases.close(as_numpy(g), as_numpy(e), key[1]), f"{key}: values differ"
