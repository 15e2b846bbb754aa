"""torch.testing.assert_close / assert_allclose: lantern raises what torch raises, with the same message."""
import warnings

import numpy as np
import pytest
import torch

import lantern
import lantern.testing

NAN = float("nan")

# each case: fn(lib) -> (actual, expected, keyword arguments); tensors are built by the library under test
CASES = {
    "close": lambda lib: (lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.0 + 1e-7]), {}),
    "one off": lambda lib: (lib.tensor([1.0, 2.0, 3.0]), lib.tensor([1.0, 2.1, 3.0]), {}),
    "2d": lambda lib: (lib.tensor([[1.0, 2.0], [3.0, 4.0]]), lib.tensor([[1.0, 2.0], [3.0, 5.0]]), {}),
    "float64": lambda lib: (lib.tensor([1.0, 2.0], dtype=lib.float64), lib.tensor([1.0, 2.000001], dtype=lib.float64),
                            {}),
    "shape": lambda lib: (lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.0, 3.0]), {}),
    "dtype": lambda lib: (lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.0], dtype=lib.float64), {}),
    "dtype unchecked": lambda lib: (lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.5], dtype=lib.float64),
                                    {"check_dtype": False}),
    "stride": lambda lib: (lib.ones(2, 2).t(), lib.ones(2, 2), {"check_stride": True}),
    "nan": lambda lib: (lib.tensor([NAN, 1.0]), lib.tensor([NAN, 1.0]), {}),
    "nan equal": lambda lib: (lib.tensor([NAN, 1.0]), lib.tensor([NAN, 1.0]), {"equal_nan": True}),
    "inf": lambda lib: (lib.tensor([float("inf")]), lib.tensor([1e30]), {}),
    "integers": lambda lib: (lib.tensor([1, 2]), lib.tensor([1, 3]), {}),
    "bools": lambda lib: (lib.tensor([True, False]), lib.tensor([False, False]), {}),
    "tolerances": lambda lib: (lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.05]), {"rtol": 0.0, "atol": 0.1}),
    "only rtol": lambda lib: (lib.tensor([1.0]), lib.tensor([1.0]), {"rtol": 0.1}),
    "scalars": lambda lib: (1.0, 1.1, {}),
    "integer scalars": lambda lib: (2, 3, {}),
    "booleans": lambda lib: (True, False, {}),
    "list": lambda lib: ([lib.ones(2), lib.zeros(2)], [lib.ones(2), lib.ones(2)], {}),
    "dict": lambda lib: ({"a": lib.ones(2)}, {"a": lib.zeros(2)}, {}),
    "dict keys": lambda lib: ({"a": 1, "b": 2}, {"a": 1, "c": 2}, {}),
    "lengths": lambda lib: ([1, 2], [1, 2, 3], {}),
    "nested": lambda lib: ([(1.0, [lib.ones(1)])], [(1.0, [lib.zeros(1)])], {}),
    "tensor vs number": lambda lib: (lib.ones(2), 1.0, {}),
    "numpy": lambda lib: (np.ones(2), np.zeros(2), {}),
    "custom msg": lambda lib: (lib.ones(2), lib.zeros(2), {"msg": "custom"}),
    "callable msg": lambda lib: (lib.ones(2), lib.zeros(2), {"msg": lambda m: m.splitlines()[0] + " (mine)"}),
}


def _outcome(fn):
    try:
        fn()
    except Exception as e:  # the class and message are what is compared
        return type(e).__name__, str(e).replace("lantern.", "torch.")
    return None


@pytest.mark.parametrize("case", sorted(CASES))
def test_assert_close_matches_torch(case):
    theirs = _outcome(lambda: _call(torch, torch.testing.assert_close, CASES[case]))
    ours = _outcome(lambda: _call(lantern, lantern.testing.assert_close, CASES[case]))
    assert ours == theirs


def _call(lib, assert_close, case):
    actual, expected, kwargs = case(lib)
    assert_close(actual, expected, **kwargs)


@pytest.mark.parametrize("values", [([1.0, 2.0], [1.0, 2.00001]), ([1.0, 2.0], [1.0, 2.5]), (1.0, 1.0)], ids=str)
def test_assert_allclose_matches_torch(values):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        theirs = _outcome(lambda: torch.testing.assert_allclose(torch.tensor(values[0]), values[1]))
        ours = _outcome(lambda: lantern.testing.assert_allclose(lantern.tensor(values[0]), values[1]))
    assert ours == theirs
    assert [str(w.message) for w in caught[1::2]] == [str(w.message) for w in caught[0::2]]
