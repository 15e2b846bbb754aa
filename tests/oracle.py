"""The torch oracle: run the same lambda on torch and lantern and compare everything observable.

    from oracle import check, noncontig
    check(lambda m, x: m.exp(x), noncontig(np.random.rand(3, 4)))

`check` converts NumPy inputs to each library's tensors (same dtype, same strides), calls `fn(lib, *tensors)` with
`lib` = torch then lantern, and compares results (values, dtype, shape, strides, nested tuples/lists), or, if torch
raises, that lantern raises the same exception class.
"""
import numpy as np
import pytest
import torch

import lantern

_DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                "complex64", "complex128"]
DTYPE_PAIRS = [(getattr(torch, n), getattr(lantern, n)) for n in _DTYPE_NAMES]


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
    """A tensor of `lib` with arr's values, dtype and element strides (via a larger buffer + as_strided)."""
    arr = np.asarray(arr)
    if arr.dtype == np.dtype("V2") or str(arr.dtype) == "bfloat16":
        raise TypeError("pass bfloat16 inputs as float32 arrays and convert inside the lambda")
    itemsize = arr.itemsize
    strides = tuple(s // itemsize for s in arr.strides)
    if arr.size == 0 or all(s >= 0 for s in strides) and arr.flags.c_contiguous:
        return lib.tensor(arr.copy()) if arr.ndim else lib.tensor(arr.item(), dtype=_lib_dtype(lib, arr.dtype))
    span = sum((n - 1) * s for n, s in zip(arr.shape, strides)) + 1
    flat = np.zeros(span, dtype=arr.dtype)
    np.lib.stride_tricks.as_strided(flat, arr.shape, arr.strides)[...] = arr
    return lib.tensor(flat).as_strided(arr.shape, strides)


def _lib_dtype(lib, np_dtype):
    t = torch.from_numpy(np.zeros(1, np_dtype)).dtype
    return t if lib is torch else lantern_dtype(t)


def to_lib(lib, x):
    if isinstance(x, np.ndarray):
        return _strided_copy(lib, x)
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], np.ndarray):
        return type(x)(to_lib(lib, y) for y in x)
    return x


def as_numpy(x):
    """A torch or lantern tensor as a NumPy array (bfloat16 widened to float32)."""
    if isinstance(x, torch.Tensor):
        x = x.detach().resolve_conj()  # torch's conj() is a lazy view that numpy() refuses
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.numpy()
    if x.dtype is lantern.bfloat16:
        x = x.float()
    return np.array(x.tolist(), dtype=x.dtype.np).reshape(tuple(x.shape))


def assert_same(got, expected, *, atol=1e-5, rtol=1.3e-6, strides=True, path="result"):
    """Compare a lantern result with torch's: type, dtype, shape, strides and values (recursing into tuples)."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, lantern.Tensor), f"{path}: expected a Tensor, got {type(got).__name__}"
        assert got.dtype.name == str(expected.dtype).replace("torch.", ""), \
            f"{path}: dtype {got.dtype} != {expected.dtype}"
        assert tuple(got.shape) == tuple(expected.shape), f"{path}: shape {tuple(got.shape)} != {tuple(expected.shape)}"
        if strides and expected.numel() > 1:
            assert got.stride() == expected.stride(), f"{path}: strides {got.stride()} != {expected.stride()}"
        e, g = as_numpy(expected), as_numpy(got)
        if expected.dtype in (torch.float16, torch.bfloat16):
            atol, rtol = max(atol, 1e-2), max(rtol, 1e-2)
        np.testing.assert_allclose(g, e, atol=atol, rtol=rtol, equal_nan=True, err_msg=path)
    elif isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{path}: expected a sequence, got {type(got).__name__}"
        assert len(got) == len(expected), f"{path}: length {len(got)} != {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, atol=atol, rtol=rtol, strides=strides, path=f"{path}[{i}]")
    elif isinstance(expected, torch.dtype):
        assert got.name == str(expected).replace("torch.", ""), f"{path}: {got} != {expected}"
    elif isinstance(expected, torch.Size):
        assert tuple(got) == tuple(expected), f"{path}: {got} != {expected}"
    elif isinstance(expected, float):
        np.testing.assert_allclose(got, expected, atol=atol, rtol=rtol, equal_nan=True, err_msg=path)
    else:
        assert got == expected, f"{path}: {got!r} != {expected!r}"


def _same_error_class(torch_class, lantern_class):
    """torch's linalg errors are torch._C._LinAlgError; lantern's equivalent is lantern.linalg.LinAlgError."""
    expected = lantern.linalg.LinAlgError if torch_class.__name__ in ("_LinAlgError", "LinAlgError") else torch_class
    return issubclass(lantern_class, expected)


def check(fn, *inputs, atol=1e-5, rtol=1.3e-6, strides=True):
    """Run fn(torch, *inputs) and fn(lantern, *inputs); same results, or the same exception class."""
    try:
        expected = fn(torch, *[to_lib(torch, x) for x in inputs])
    except Exception as e:  # torch's exception is the spec: lantern must raise the same class
        try:
            fn(lantern, *[to_lib(lantern, x) for x in inputs])
        except Exception as mine:
            if _same_error_class(type(e), type(mine)):
                return None
            raise AssertionError(f"torch raised {type(e).__name__}({e}); lantern raised "
                                 f"{type(mine).__name__}({mine})") from mine
        raise AssertionError(f"torch raised {type(e).__name__}({e}); lantern raised nothing")
    got = fn(lantern, *[to_lib(lantern, x) for x in inputs])
    assert_same(got, expected, atol=atol, rtol=rtol, strides=strides)
    return got


def raises_like(fn, *inputs):
    """Both libraries raise the same exception class; returns (torch message, lantern message)."""
    msgs = []
    for lib in (torch, lantern):
        try:
            fn(lib, *[to_lib(lib, x) for x in inputs])
        except Exception as e:
            msgs.append((type(e), str(e)))
        else:
            raise AssertionError(f"{lib.__name__} raised nothing")
    assert _same_error_class(msgs[0][0], msgs[1][0]), \
        f"torch raised {msgs[0][0].__name__}, lantern {msgs[1][0].__name__}: {msgs[1][1]}"
    return msgs[0][1], msgs[1][1]


def table_tests(forward, errors):
    """Two parametrized tests over tables {name: (fn, *numpy_inputs)}: results, then exceptions, equal torch's.

        test_forward_matches_torch, test_error_matches_torch = table_tests(FORWARD, ERRORS)
    """
    @pytest.mark.parametrize("name", forward)
    def test_forward_matches_torch(name):
        fn, *inputs = forward[name]
        check(fn, *inputs)

    @pytest.mark.parametrize("name", errors)
    def test_error_matches_torch(name):
        fn, *inputs = errors[name]
        check(fn, *inputs)
    return test_forward_matches_torch, test_error_matches_torch
