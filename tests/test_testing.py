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
    "callable msg nested": lambda lib: ([lib.ones(2)], [lib.zeros(2)], {"msg": lambda m: m.upper()}),
    "str msg nested": lambda lib: ({"a": lib.ones(2)}, {"a": lib.zeros(2)}, {"msg": "mine"}),
    "complex": lambda lib: (lib.tensor([1 + 1j, 2 + 0j]), lib.tensor([1 + 1j, 2 + 0.1j]), {}),
    "complex nan": lambda lib: (lib.tensor([complex(NAN, 0)]), lib.tensor([complex(NAN, 0)]), {"equal_nan": True}),
    "float16": lambda lib: (lib.tensor([1.0, 2.0], dtype=lib.float16), lib.tensor([1.0, 2.01], dtype=lib.float16), {}),
    "bfloat16": lambda lib: (lib.tensor([1.0, 2.0], dtype=lib.bfloat16), lib.tensor([1.0, 2.1], dtype=lib.bfloat16),
                             {}),
    "int vs float dtype": lambda lib: (lib.tensor([1, 2]), lib.tensor([1.0, 2.5]), {"check_dtype": False}),
    "uint8": lambda lib: (lib.tensor([1, 200], dtype=lib.uint8), lib.tensor([1, 2], dtype=lib.uint8), {}),
    "0-d": lambda lib: (lib.tensor(1.0), lib.tensor(1.5), {}),
    "empty": lambda lib: (lib.zeros(0), lib.zeros(0), {}),
    "inf mismatch": lambda lib: (lib.tensor([float("inf")]), lib.tensor([-float("inf")]), {}),
    "nan vs number": lambda lib: (lib.tensor([NAN]), lib.tensor([1.0]), {}),
    "noncontiguous stride": lambda lib: (lib.arange(6.0).reshape(2, 3)[:, ::2], lib.tensor([[0.0, 2.0], [3.0, 5.0]]),
                                         {"check_stride": True}),
    "tensor vs list": lambda lib: (lib.tensor([1.0]), [1.0], {}),
    "number vs tensor": lambda lib: (1.0, lib.tensor(1.0), {}),
    "int vs float scalar": lambda lib: (1, 1.0, {}),
    "int vs float unchecked": lambda lib: (1, 1.5, {"check_dtype": False}),
    "scalar nan": lambda lib: (NAN, NAN, {}),
    "scalar nan equal": lambda lib: (NAN, NAN, {"equal_nan": True}),
    "complex scalars": lambda lib: (1 + 1j, 1 + 1.1j, {}),
    "numpy scalars": lambda lib: (np.float32(1.0), np.float32(1.5), {}),
    "numpy booleans": lambda lib: (np.bool_(True), False, {}),
    "none": lambda lib: (None, None, {}),
    "none vs 1": lambda lib: (None, 1, {}),
    "strings": lambda lib: ("a", "a", {}),
    "tuple vs list": lambda lib: ((1, 2), [1, 2], {}),
    "3d": lambda lib: (lib.arange(24.0).reshape(2, 3, 4), lib.arange(24.0).reshape(2, 3, 4) * 1.001, {}),
    "requires grad": lambda lib: (lib.ones(2, requires_grad=True), lib.ones(2), {}),
    "numpy vs tensor": lambda lib: (np.ones(2), lib.ones(2, dtype=lib.float64), {}),
    "subclasses not allowed": lambda lib: (lib.nn.Parameter(lib.ones(2)), lib.ones(2), {"allow_subclasses": False}),
    "bool vs int tensor": lambda lib: (lib.tensor([True]), lib.tensor([1]), {}),
    "nested dict": lambda lib: ({"a": [lib.ones(2), {"b": 1.0}]}, {"a": [lib.ones(2), {"b": 2.0}]}, {}),
    "atol only": lambda lib: (lib.ones(1), lib.ones(1), {"atol": 0.1}),
    "two of four": lambda lib: (lib.tensor([1.0, 2.0, 3.0, 4.0]), lib.tensor([1.0, 2.5, 3.0, 5.0]), {}),
    "integer message": lambda lib: (lib.tensor([1, 2, 3]), lib.tensor([1, 5, 3]), {}),
    "sparse layout": lambda lib: (lib.ones(2, 2).to_sparse(), lib.ones(2, 2), {}),
    "sparse layout unchecked": lambda lib: (lib.ones(2, 2).to_sparse(), lib.zeros(2, 2), {"check_layout": False}),
    "shapes": lambda lib: (lib.ones(2, 3), lib.ones(3, 2), {}),
    "meta": lambda lib: (lib.empty(2, device="meta"), lib.empty(2, device="meta"), {}),
    "meta vs cpu": lambda lib: (lib.empty(2, device="meta"), lib.empty(2), {}),
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


# ---- make_tensor -------------------------------------------------------------------------------------------------

MAKE_TENSOR_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                      "complex64", "complex128"]


@pytest.mark.parametrize("dtype", MAKE_TENSOR_DTYPES)
@pytest.mark.parametrize("options", [{}, {"noncontiguous": True}, {"low": -2, "high": 3, "exclude_zero": True},
                                     {"memory_format": "channels_last"}], ids=str)
def test_make_tensor_draws_torch_values_for_the_same_seed(dtype, options):
    def run(lib):
        kwargs = dict(options)
        if "memory_format" in kwargs:
            kwargs["memory_format"] = getattr(lib, kwargs["memory_format"])
        lib.manual_seed(0)
        return lib.testing.make_tensor(2, 3, 4, 5, dtype=getattr(lib, dtype), device="cpu", **kwargs)

    ours, theirs = run(lantern), run(torch)
    assert ours.stride() == theirs.stride() and ours.is_contiguous() == theirs.is_contiguous()
    assert_same_values(ours, theirs)


def assert_same_values(ours, theirs):
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    assert ours.shape == tuple(theirs.shape)
    torch.testing.assert_close(torch.from_numpy(ours.float().numpy() if ours.dtype == lantern.bfloat16
                                                else ours.numpy()),
                               theirs.float() if theirs.dtype == torch.bfloat16 else theirs, rtol=0, atol=0)


def test_make_tensor_shapes_and_requires_grad_follow_torch():
    for lib in (torch, lantern):
        make = lib.testing.make_tensor
        assert tuple(make([2, 3], dtype=lib.float32, device="cpu").shape) == (2, 3)
        assert tuple(make(lib.Size([4]), dtype=lib.float32, device="cpu").shape) == (4,)
        assert tuple(make((), dtype=lib.float32, device="cpu").shape) == ()
        assert make(3, dtype=lib.float64, device="cpu", requires_grad=True).requires_grad
        assert make(1, dtype=lib.float32, device="cpu", noncontiguous=True).is_contiguous()  # one element: ignored


MAKE_TENSOR_ERRORS = [
    lambda lib: lib.testing.make_tensor(2, dtype=lib.int64, device="cpu", requires_grad=True),
    lambda lib: lib.testing.make_tensor(2, dtype=lib.float32, device="cpu", low=3, high=1),
    lambda lib: lib.testing.make_tensor(2, dtype=lib.float32, device="cpu", low=float("nan")),
    lambda lib: lib.testing.make_tensor(2, dtype=lib.uint8, device="cpu", low=-20, high=-10),
    lambda lib: lib.testing.make_tensor(2, dtype=lib.float32, device="cpu", noncontiguous=True,
                                        memory_format=lib.contiguous_format),
    lambda lib: lib.testing.make_tensor(2, dtype=lib.int8, device="cpu", low=5, high=5),
]


@pytest.mark.parametrize("index", range(len(MAKE_TENSOR_ERRORS)))
def test_make_tensor_errors_match_torch(index):
    theirs = _outcome(lambda: MAKE_TENSOR_ERRORS[index](torch))
    ours = _outcome(lambda: MAKE_TENSOR_ERRORS[index](lantern))
    assert theirs is not None
    assert ours == theirs


def test_make_tensor_warns_for_equal_bounds_as_torch():
    for lib in (torch, lantern):
        with pytest.warns(FutureWarning, match="Passing `low==high` to `torch.testing.make_tensor`"):
            t = lib.testing.make_tensor(3, dtype=lib.float32, device="cpu", low=2.0, high=2.0)
        assert t.tolist() == [2.0, 2.0, 2.0]


def test_public_names_are_torch_testing_names():
    """Every public torch.testing name exists (FileCheck, TorchScript's IR matcher, included)."""
    public = {name for name in dir(torch.testing) if not name.startswith("_")}
    assert public - set(dir(lantern.testing)) == set()
