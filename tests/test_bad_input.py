"""Bad input gets torch's exception class (not NumPy's), empty tensors work where torch's do, and what torch
refuses lantern refuses too: issue 13's items 5-7, each case run on both libraries.
"""
import gc
import sys

import numpy as np
import pytest

import lantern
from oracle import check, raises_like


def _refused(fn, *inputs, match=None):
    """Both libraries raise the same exception class; lantern's message names the op or the fix (`match`)."""
    _, mine = raises_like(fn, *inputs)
    if match is not None:
        assert match in mine, mine
    return mine


# ---- allocation failures: RuntimeError from the allocator, TypeError for sizes past int64 -----------------------

@pytest.mark.parametrize("make", [
    lambda m: m.empty(10 ** 13),
    lambda m: m.zeros(10 ** 13),
    lambda m: m.randn(10 ** 13),
    lambda m: m.full((10 ** 13,), 1.0),
    lambda m: m.ones(2 ** 40, 2 ** 40),
    lambda m: m.empty(2 ** 62),
], ids=["empty", "zeros", "randn", "full", "ones_overflow", "empty_overflow"])
def test_allocation_failure_is_runtime_error(make):
    _refused(make)


def test_allocation_failure_names_the_bytes():
    message = _refused(lambda m: m.empty(10 ** 13))
    assert "DefaultCPUAllocator" in message and "40000000000000 bytes" in message


def test_size_past_int64_is_type_error():
    _refused(lambda m: m.empty(2 ** 63))


def test_failed_allocation_prints_nothing_and_keeps_the_statistics(monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    stats = lantern.core.allocator.cpu_allocator.stats
    before = stats.as_dict()
    for size in ((10 ** 13,), (100, 10 ** 6, 10 ** 6), (2 ** 40, 2 ** 40)):
        with pytest.raises(RuntimeError):
            lantern.empty(size)
    with pytest.raises(RuntimeError):
        lantern.UntypedStorage(10 ** 15)
    gc.collect()
    assert unraisable == []
    assert stats.as_dict() == before
