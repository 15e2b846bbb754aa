"""The torch oracle: run the same lambda on torch and lantern and compare everything observable.

    from oracle import check, raises_like, noncontig
    check(lambda m, x: m.exp(x), noncontig(np.random.rand(3, 4)))
    raises_like(lambda m, x: x.view(-1), noncontig(np.random.rand(3, 4)))

`check` converts NumPy inputs to each library's tensors (same dtype, same strides), calls `fn(lib, *tensors)` with
`lib` = torch then lantern, asserts that torch succeeded, and compares the results with `assert_same`. `raises_like`
asserts that torch raised and that lantern raised exactly the same exception class. The rules are in
docs/testing.md; the main ones:
- inputs are converted before anything is caught: a failure of the harness is a test error, never a pass;
- a forward case must succeed in torch and an error case must raise in torch (no case silently changes kind);
- Python types, containers, dtypes, shapes, strides (at every size), storage offsets, requires_grad, aliasing of
  the inputs, integers exactly, floats within torch.testing.assert_close's per-dtype tolerances.
"""
import re

import numpy as np
import pytest
import torch

import lantern

_DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                "complex64", "complex128"]
DTYPE_PAIRS = [(getattr(torch, n), getattr(lantern, n)) for n in _DTYPE_NAMES]

# torch.testing.assert_close's default (rtol, atol) per dtype; a complex dtype uses its float part's.
TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}
# A Python float usually comes from .item() of a float32 computation, so it gets float32's tolerance.
_PYTHON_FLOAT_TOLERANCE = TOLERANCES["float32"]


def lantern_dtype(torch_dtype):
    return getattr(lantern, str(torch_dtype).replace("torch.", ""))


def torch_dtype(lantern_dtype):
    return getattr(torch, lantern_dtype.name)


def noncontig(arr):
    """The same values as `arr`, laid out non-contiguously (every other element of a twice-as-large buffer)."""
    arr = np.asarray(arr)
    if arr.ndim == 0:
        return arr
    big = np.zeros(arr.shape[:-1] + (arr.shape[-1] * 2,), dtype=arr.dtype)
    view = big[..., ::2]
    view[...] = arr
    return view


def _strided_copy(lib, arr):
    """A tensor of `lib` with arr's values, dtype and element strides (via a larger buffer + as_strided).

    Neither library has negative strides: an array with some gets the same layout with the strides' magnitudes.
    """
    if arr.dtype == np.dtype("V2") or str(arr.dtype) == "bfloat16":
        raise TypeError("pass bfloat16 inputs as float32 arrays and convert inside the lambda")
    if arr.ndim == 0:
        return lib.tensor(arr.item(), dtype=_lib_dtype(lib, arr.dtype))
    if arr.size == 0 or arr.flags.c_contiguous:
        return lib.tensor(arr.copy())
    itemsize = arr.itemsize
    strides = tuple(abs(s) // itemsize for s in arr.strides)
    span = sum((n - 1) * s for n, s in zip(arr.shape, strides)) + 1
    flat = np.zeros(span, dtype=arr.dtype)
    np.lib.stride_tricks.as_strided(flat, arr.shape, tuple(s * itemsize for s in strides))[...] = arr
    return lib.tensor(flat).as_strided(arr.shape, strides)


def _lib_dtype(lib, np_dtype):
    t = torch.from_numpy(np.zeros(1, np_dtype)).dtype
    return t if lib is torch else lantern_dtype(t)


def to_lib(lib, x):
    """NumPy arrays (also inside a list/tuple) become `lib` tensors with the same strides; the rest passes as is."""
    if isinstance(x, np.generic):
        raise TypeError(f"ambiguous oracle input {x!r}: pass np.array(v) for a 0-dim tensor or a Python number")
    if isinstance(x, np.ndarray):
        return _strided_copy(lib, x)
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], np.ndarray):
        return type(x)(to_lib(lib, y) for y in x)
    return x


def as_numpy(x):
    """A torch or lantern tensor as a NumPy array (bfloat16 widened to float32, complex32 to complex64)."""
    if isinstance(x, torch.Tensor):
        x = x.detach().resolve_conj().resolve_neg()  # lazy conj/neg views that numpy() refuses
        if x.dtype == torch.bfloat16:
            x = x.float()
        if x.dtype == torch.complex32:
            x = x.to(torch.complex64)
        return x.numpy()
    if x.dtype is lantern.bfloat16:
        x = x.float()
    if x.dtype is lantern.complex32:
        x = x.to(lantern.complex64)
    return np.array(x.tolist(), dtype=x.dtype.np).reshape(tuple(x.shape))


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "").replace("lantern.", "")


def _assert_values(got, expected, dtype_name, atol, rtol, path):
    """Integers and bools exactly; floating and complex within (rtol, atol), by default torch's for the dtype."""
    default_rtol, default_atol = TOLERANCES.get(dtype_name, (0, 0))
    if dtype_name not in TOLERANCES:
        np.testing.assert_array_equal(got, expected, err_msg=path, strict=True)
        return
    np.testing.assert_allclose(got, expected, atol=default_atol if atol is None else atol,
                               rtol=default_rtol if rtol is None else rtol, equal_nan=True, err_msg=path)


def _assert_tensor(got, expected, atol, rtol, strides, path):
    assert type(got).__name__ == type(expected).__name__ and isinstance(got, lantern.Tensor), \
        f"{path}: expected a {type(expected).__name__}, got {type(got).__name__}"
    assert _dtype_name(got.dtype) == _dtype_name(expected.dtype), f"{path}: dtype {got.dtype} != {expected.dtype}"
    assert tuple(got.shape) == tuple(expected.shape), f"{path}: shape {tuple(got.shape)} != {tuple(expected.shape)}"
    if strides:
        assert got.stride() == expected.stride(), f"{path}: strides {got.stride()} != {expected.stride()}"
        assert got.storage_offset() == expected.storage_offset(), \
            f"{path}: storage_offset {got.storage_offset()} != {expected.storage_offset()}"
    assert got.requires_grad == expected.requires_grad, \
        f"{path}: requires_grad {got.requires_grad} != {expected.requires_grad}"
    _assert_values(as_numpy(got), as_numpy(expected), _dtype_name(expected.dtype), atol, rtol, path)


def _assert_sequence(got, expected, atol, rtol, strides, path):
    fields = getattr(type(expected), "_fields", None) or getattr(type(expected), "__match_args__", None)
    if fields is not None:  # a namedtuple or torch.return_types' structseq: lantern's namedtuple of the same name
        assert isinstance(got, tuple) and type(got).__name__ == type(expected).__name__ \
            and getattr(got, "_fields", None) == fields, \
            f"{path}: expected {type(expected).__module__}.{type(expected).__name__}{fields}, got " \
            f"{type(got).__module__}.{type(got).__name__}{getattr(got, '_fields', '')}"
    elif isinstance(expected, torch.Size):
        assert isinstance(got, lantern.Size), f"{path}: expected a Size, got {type(got).__name__}"
    else:
        assert type(got) is type(expected), f"{path}: expected a {type(expected).__name__}, got {type(got).__name__}"
    assert len(got) == len(expected), f"{path}: length {len(got)} != {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        assert_same(g, e, atol=atol, rtol=rtol, strides=strides, path=f"{path}[{i}]")


def assert_same(got, expected, *, atol=None, rtol=None, strides=True, path="result"):
    """Compare a lantern result with torch's: Python type, dtype, shape, strides, offset, requires_grad, values.

    Recurses into tuples, lists, dicts and torch.return_types. atol/rtol default to torch's per-dtype ones.
    """
    if isinstance(expected, torch.Tensor):
        _assert_tensor(got, expected, atol, rtol, strides, path)
    elif isinstance(expected, (tuple, list)):
        _assert_sequence(got, expected, atol, rtol, strides, path)
    elif isinstance(expected, dict):
        assert type(got) is type(expected) and list(got) == list(expected), f"{path}: {got!r} != {expected!r}"
        for k in expected:
            assert_same(got[k], expected[k], atol=atol, rtol=rtol, strides=strides, path=f"{path}[{k!r}]")
    elif isinstance(expected, torch.dtype):
        assert isinstance(got, lantern.dtype) and got.name == _dtype_name(expected), f"{path}: {got} != {expected}"
    elif isinstance(expected, (float, complex)):
        assert type(got) is type(expected), f"{path}: expected a {type(expected).__name__}, got {type(got).__name__}"
        default_rtol, default_atol = _PYTHON_FLOAT_TOLERANCE
        np.testing.assert_allclose(got, expected, atol=default_atol if atol is None else atol,
                                   rtol=default_rtol if rtol is None else rtol, equal_nan=True, err_msg=path)
    elif isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == expected.dtype and got.shape == expected.shape, \
            f"{path}: {got!r} != {expected!r}"
        _assert_values(got, expected, str(got.dtype), atol, rtol, path)
    elif type(expected).__module__.startswith("torch"):  # device, layout, memory_format...: same printed form
        assert str(got).replace("lantern", "torch") == str(expected), f"{path}: {got!r} != {expected!r}"
    else:
        assert type(got) is type(expected), f"{path}: expected a {type(expected).__name__}, got {type(got).__name__}"
        assert got == expected, f"{path}: {got!r} != {expected!r}"


def _tensors(x):
    if isinstance(x, (torch.Tensor, lantern.Tensor)):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for y in x for t in _tensors(y)]
    if isinstance(x, dict):
        return [t for y in x.values() for t in _tensors(y)]
    return []


def _aliasing(outputs, inputs):
    """For each output tensor, how it relates to each input: the same object, a view of its storage, or separate."""
    def relation(out, inp):
        if out is inp:
            return "same object"
        ptr = inp.untyped_storage().data_ptr()
        return "shares storage" if ptr and out.untyped_storage().data_ptr() == ptr else "separate"
    return [[relation(o, i) for i in inputs] for o in outputs]


def _expected_error_name(torch_class):
    """torch's linalg errors are torch._C._LinAlgError; lantern's equivalent is lantern.linalg.LinAlgError."""
    return "LinAlgError" if torch_class.__name__ == "_LinAlgError" else torch_class.__name__


def same_error_class(torch_class, lantern_class):
    """Exactly the same class: a builtin exception itself, or lantern's class of the same name for torch's own."""
    if torch_class.__module__ == "builtins":
        return lantern_class is torch_class
    return lantern_class.__module__.startswith("lantern") and lantern_class.__name__ == _expected_error_name(torch_class)


def _convert(inputs):
    return [to_lib(torch, x) for x in inputs], [to_lib(lantern, x) for x in inputs]


def check(fn, *inputs, atol=None, rtol=None, strides=True, aliasing=True):
    """fn(torch, *inputs) succeeds and fn(lantern, *inputs) returns the same (see assert_same), aliasing included.

    strides=False and aliasing=False are for the entries of tests/deliberate_differences.py only."""
    torch_inputs, lantern_inputs = _convert(inputs)
    try:
        expected = fn(torch, *torch_inputs)
    except Exception as e:
        pytest.fail(f"a forward case must succeed in torch, which raised {type(e).__name__}({e}); "
                    f"test errors with raises_like")
    return _lantern_matches(expected, fn, torch_inputs, lantern_inputs, atol, rtol, strides, aliasing)


# The device lantern's side runs on while a device-generic test runs on another (tests/device_generic.py): its
# inputs are made there (as the default device) and every tensor it returns must be there too.
ON_DEVICE = [None]


def _lantern_matches(expected, fn, torch_inputs, lantern_inputs, atol, rtol, strides, aliasing=True):
    got = fn(lantern, *lantern_inputs)
    if ON_DEVICE[0] is not None:
        devices = {str(t.device) for t in _tensors(got)} - {ON_DEVICE[0]}
        assert not devices, f"a result on {devices.pop()}, not on {ON_DEVICE[0]} where the inputs were"
    assert_same(got, expected, atol=atol, rtol=rtol, strides=strides)
    if not aliasing:
        return got
    expected_aliasing = _aliasing(_tensors(expected), _tensors(torch_inputs))
    got_aliasing = _aliasing(_tensors(got), _tensors(lantern_inputs))
    assert got_aliasing == expected_aliasing, \
        f"outputs vs inputs: lantern {got_aliasing}, torch {expected_aliasing}"
    return got


def matches_torch(fn, *inputs, atol=None, rtol=None, strides=True):
    """For sweeps over dtypes, forms and arguments, where torch refuses some combinations: torch's outcome is the
    spec. If torch succeeds, this is `check`; if it raises, lantern must raise exactly the same class. A test
    assertion failing inside `fn` (AssertionError) is never taken for torch's answer. Tables of named cases use
    `check` and `raises_like` instead, so that no case changes kind unnoticed."""
    torch_inputs, lantern_inputs = _convert(inputs)
    try:
        expected = fn(torch, *torch_inputs)
    except AssertionError:
        raise
    except Exception as theirs:
        try:
            fn(lantern, *lantern_inputs)
        except Exception as mine:
            assert same_error_class(type(theirs), type(mine)), \
                f"torch raised {type(theirs).__name__}({theirs}), lantern {type(mine).__name__}({mine})"
            return None
        pytest.fail(f"lantern raised nothing; torch raised {theirs!r}")
    return _lantern_matches(expected, fn, torch_inputs, lantern_inputs, atol, rtol, strides)


def raises_like(fn, *inputs, match=None):
    """Both libraries raise exactly the same exception class; returns (torch message, lantern message).

    `match`, a regular expression, must be found in both messages (the message's gist).
    """
    torch_inputs, lantern_inputs = _convert(inputs)
    caught = []
    for lib, args in ((torch, torch_inputs), (lantern, lantern_inputs)):
        try:
            fn(lib, *args)
        except Exception as e:
            caught.append(e)
        else:
            pytest.fail(f"{lib.__name__} raised nothing" + (f"; torch raised {caught[0]!r}" if caught else ""))
    theirs, mine = caught
    assert same_error_class(type(theirs), type(mine)), \
        f"torch raised {type(theirs).__name__}({theirs}), lantern {type(mine).__name__}({mine})"
    if match is not None:
        assert re.search(match, str(theirs)) and re.search(match, str(mine)), (match, str(theirs), str(mine))
    return str(theirs), str(mine)


def table_tests(forward, errors):
    """Two parametrized tests over tables {name: (fn, *numpy_inputs)}: forward cases succeed in torch and lantern
    gives the same results; error cases raise in torch and lantern raises the same class.

        test_forward_matches_torch, test_error_matches_torch = table_tests(FORWARD, ERRORS)
    """
    @pytest.mark.parametrize("name", forward)
    def test_forward_matches_torch(name):
        fn, *inputs = forward[name]
        check(fn, *inputs)

    @pytest.mark.parametrize("name", errors)
    def test_error_matches_torch(name):
        fn, *inputs = errors[name]
        raises_like(fn, *inputs)
    return test_forward_matches_torch, test_error_matches_torch
