"""Tensor printing: repr(lantern tensor) must equal repr(torch tensor) with `torch.` read as `lantern.`.

Each case builds the same tensor in both libraries from `build(lib)` under the same print options.
"""
import math

import pytest
import torch

import lantern

NAN, INF = math.nan, math.inf


@pytest.fixture(autouse=True)
def _default_print_options():
    yield
    for lib in (torch, lantern):
        lib.set_printoptions(profile="default")


def expected_repr(t):
    return repr(t).replace("torch.", "lantern.")


def grid(lib, *shape, dtype="float32"):
    """0, 1, 2, ... laid out in `shape`, as `dtype`."""
    return lib.arange(math.prod(shape)).view(*shape).to(getattr(lib, dtype))


def typed(data, dtype):
    return lambda lib: lib.tensor(data, dtype=getattr(lib, dtype))


CASES = {
    # floats: fixed, integer-valued, scientific
    "float": lambda lib: lib.tensor([1.5, 2.25, -3.125]),
    "float_rounding": lambda lib: lib.tensor([0.1, 0.99996, 12.34567]),
    "integer_valued": lambda lib: lib.tensor([1., 2., -30.]),
    "integer_valued_big_ratio": lambda lib: lib.tensor([1., 5000.]),
    "integer_valued_over_1e8": lambda lib: lib.tensor([2e8, 1.]),
    "sci_small": lambda lib: lib.tensor([1e-5, 1.]),
    "sci_big": lambda lib: lib.tensor([1.5e9, -2.5]),
    "sci_ratio": lambda lib: lib.tensor([0.5, 1234.5]),
    "sci_three_digit_exponent": typed([1e-200, 3.5, -1e200], "float64"),
    "float64": typed([1.5, 2.], "float64"),
    "float16": typed([1.5, 2., 65504.], "float16"),
    "bfloat16": typed([1.5, -2.125, 3e38], "bfloat16"),
    # nan, inf, zeros
    "nan_inf": lambda lib: lib.tensor([NAN, INF, -INF, 1.5]),
    "nan_with_integers": lambda lib: lib.tensor([NAN, 1., -INF]),
    "only_nonfinite": lambda lib: lib.tensor([NAN, INF]),
    "zeros": lambda lib: lib.tensor([0., 0.]),
    "negative_zero": lambda lib: lib.tensor([-0., 1.]),
    "negative_zero_fixed": lambda lib: lib.tensor([-0., 1.5]),
    # integers and bools
    "int64": lambda lib: lib.tensor([1, -22, 333]),
    "int32": typed([1, 2], "int32"),
    "int16": typed([-7, 300], "int16"),
    "int8": typed([-128, 127], "int8"),
    "uint8": typed([0, 255], "uint8"),
    "big_ints": lambda lib: lib.tensor([10 ** 12, -5]),
    "bool": lambda lib: lib.tensor([True, False, True]),
    "bool_all_true": lambda lib: lib.tensor([True, True]),
    # complex
    "complex64": lambda lib: lib.tensor([1 + 2j, -3.5 - 1j]),
    "complex128": typed([1 + 2j, 0.25j], "complex128"),
    "complex_integer_valued": lambda lib: lib.tensor([[1 + 1j, 2 - 3j], [-4j, 5]]),
    "complex_sci": lambda lib: lib.tensor([1e-6 + 1j, 2 + 3e5j]),
    "complex_nan": lambda lib: lib.tensor([complex(NAN, 1), complex(1, -INF)]),
    "complex_negative_zero": lambda lib: lib.tensor([complex(1, -0.0)]),
    # 0-dim
    "scalar_float": lambda lib: lib.tensor(3.5),
    "scalar_int": lambda lib: lib.tensor(3),
    "scalar_bool": lambda lib: lib.tensor(True),
    "scalar_tiny": lambda lib: lib.tensor(1e-10),
    "scalar_negative_zero": lambda lib: lib.tensor(-0.),
    "scalar_complex": lambda lib: lib.tensor(2 - 3j),
    "scalar_float16": typed(2.5, "float16"),
    # empty
    "empty": lambda lib: lib.tensor([]),
    "empty_2d": lambda lib: lib.zeros(0, 3),
    "empty_int": lambda lib: lib.zeros(0, dtype=lib.int64),
    "empty_bool_2d": lambda lib: lib.zeros(2, 0, dtype=lib.bool),
    "empty_float64": lambda lib: lib.zeros(0, dtype=lib.float64),
    # nested dims and non-contiguous views
    "matrix": lambda lib: grid(lib, 3, 4),
    "matrix_int": lambda lib: grid(lib, 3, 4, dtype="int64"),
    "3d": lambda lib: grid(lib, 2, 3, 4) / 7,
    "4d": lambda lib: grid(lib, 2, 1, 2, 3, dtype="int32"),
    "transposed": lambda lib: (grid(lib, 3, 4) * 1.5).t(),
    "narrowed": lambda lib: grid(lib, 4, 5).narrow(1, 1, 3),
    "selected": lambda lib: grid(lib, 4, 5, dtype="int64").select(1, 2),
    "as_strided": lambda lib: grid(lib, 12).as_strided((3, 2), (1, 4)),
    "broadcast_strides": lambda lib: grid(lib, 3).as_strided((2, 3), (0, 1)),
    # summarised
    "summarised_vector": lambda lib: lib.arange(2000),
    "summarised_matrix": lambda lib: grid(lib, 40, 50) / 3,
    "summarised_3d": lambda lib: grid(lib, 11, 10, 10, dtype="int32"),
    "summarised_short_dims": lambda lib: grid(lib, 2, 3, 200),
    "summarised_transposed": lambda lib: grid(lib, 50, 30).t(),
    "summarised_bool": lambda lib: grid(lib, 1001) > 500,
    "summarised_complex": lambda lib: grid(lib, 1200).to(lib.complex64) * (1 + 0.5j),
    # line wrapping and suffix placement
    "wrapped_vector": lambda lib: grid(lib, 40) * 1.25,
    "wrapped_matrix": lambda lib: grid(lib, 3, 30) * -0.5,
    "wrapped_complex": lambda lib: grid(lib, 12).to(lib.complex128) * (1.5 - 2j),
    "suffix_on_new_line": typed(list(range(20)), "int32"),
    "suffix_fits": typed(list(range(18)), "int32"),
    "suffix_fits_as_torch_spells_it": lambda lib: (grid(lib, 10, 10, dtype="int64") - 50).to(lib.int16),
    # devices and autograd flags
    "meta": lambda lib: lib.empty(2, 3, device="meta"),
    "meta_int": lambda lib: lib.empty(4, dtype=lib.int64, device="meta"),
    "meta_scalar": lambda lib: lib.empty((), dtype=lib.float16, device="meta"),
    "requires_grad": lambda lib: lib.tensor([1., 2.], requires_grad=True),
    "requires_grad_float64": lambda lib: lib.tensor([[1.5], [2.]], dtype=lib.float64, requires_grad=True),
    "grad_fn": lambda lib: lib.tensor([1., 2.], requires_grad=True) * 2,
    "grad_fn_float64": lambda lib: lib.tensor([1., 2.], dtype=lib.float64, requires_grad=True) * 2,
    "grad_fn_scalar": lambda lib: (lib.tensor([1., 2.], requires_grad=True) * 2).sum(),
    "grad_fn_view": lambda lib: lib.ones(2, 3, requires_grad=True).t(),
    "grad_fn_on_new_line": lambda lib: lib.ones(18, requires_grad=True) * 1.5,
    "suffixes_on_new_line": lambda lib: lib.ones(18, dtype=lib.float64, requires_grad=True) * 1.5,
}


@pytest.mark.parametrize("name", CASES)
def test_repr_matches_torch(name):
    build = CASES[name]
    assert repr(build(lantern)) == expected_repr(build(torch))


OPTION_CASES = [
    ({"precision": 2}, lambda lib: lib.tensor([1.12345, -2.5])),
    ({"precision": 7}, lambda lib: lib.tensor([1.12345, 1e-5])),
    ({"precision": 0}, lambda lib: lib.tensor([1.6, 20.2])),
    ({"sci_mode": True}, lambda lib: lib.tensor([1., 2.5])),
    ({"sci_mode": True}, lambda lib: lib.tensor([0., -0.])),
    ({"sci_mode": False}, lambda lib: lib.tensor([1e-6, 1e9])),
    ({"linewidth": 40}, lambda lib: grid(lib, 2, 20)),
    ({"linewidth": 10}, lambda lib: lib.tensor([123.5, 2.], dtype=lib.float64)),
    ({"threshold": 5}, lambda lib: lib.arange(10)),
    ({"threshold": 10, "edgeitems": 1}, lambda lib: grid(lib, 4, 5)),
    ({"threshold": 10, "edgeitems": 0}, lambda lib: grid(lib, 4, 5)),
    ({"threshold": 10, "edgeitems": 0}, lambda lib: grid(lib, 20)),
    ({"threshold": 5, "edgeitems": 4}, lambda lib: grid(lib, 3, 3)),
    ({"threshold": 0}, lambda lib: lib.tensor(2.5)),
    ({"edgeitems": 0}, lambda lib: lib.tensor(-7)),
    ({"profile": "short"}, lambda lib: grid(lib, 2000) / 3),
    ({"profile": "full"}, lambda lib: grid(lib, 1001, dtype="int64")),
    ({"profile": "full", "precision": 3}, lambda lib: lib.tensor([1 / 3])),
]


@pytest.mark.parametrize("options,build", OPTION_CASES, ids=[str(o) for o, _ in OPTION_CASES])
def test_repr_under_print_options(options, build):
    for lib in (torch, lantern):
        lib.set_printoptions(**options)
    assert repr(build(lantern)) == expected_repr(build(torch))


def test_get_printoptions_matches_torch():
    assert lantern.get_printoptions() == torch._tensor_str.get_printoptions()
    for lib in (torch, lantern):
        lib.set_printoptions(profile="full", edgeitems=5, sci_mode=True)
    assert lantern.get_printoptions() == torch._tensor_str.get_printoptions()


def test_sci_mode_resets_when_left_out():
    lantern.set_printoptions(sci_mode=False)
    lantern.set_printoptions(precision=4)
    assert lantern.get_printoptions()["sci_mode"] is None


@pytest.mark.parametrize("name", ["float", "float64", "complex64", "complex128", "empty", "empty_float64", "meta"])
def test_repr_with_float64_default(name):
    build = CASES[name]
    try:
        lantern.set_default_dtype(lantern.float64)
        got = repr(build(lantern))
    finally:
        lantern.set_default_dtype(lantern.float32)
    torch.set_default_dtype(torch.float64)
    try:
        expected = expected_repr(build(torch))
    finally:
        torch.set_default_dtype(torch.float32)
    assert got == expected


def test_str_is_repr():
    t = grid(lantern, 3, 4)
    assert str(t) == repr(t)


def test_subclass_prefix():
    class Special(lantern.Tensor):
        pass

    t = lantern.tensor([1, 2])
    t.__class__ = Special
    assert repr(t) == "Special([1, 2])"
