"""A strict array library over NumPy, used to test the backend seam: kernels must reach NumPy through `xp`.

Its arrays are `StrictArray`s, an ndarray subclass that refuses NumPy's own functions: `np.exp(a)` or `np.sum(a)`
on one raises `ArraySeamError` naming the function. The namespace's functions (`strict_numpy.exp`, `.sum`,
`.linalg.solve`, ...) take strict arrays, call NumPy on the plain arrays under them and hand back strict arrays;
the array's own operators and methods (`a + b`, `a.sum()`, `a.astype(...)`) work, as they do on a CuPy array. An
array NumPy made outside the namespace (`np.arange(3)`) may not be mixed with strict ones either: on a GPU it would
be host memory beside device memory. Only `asarray` and `array` take such arrays in, as `cupy.asarray` does.

`LANTERN_ARRAY_LIBRARY=strict` runs lantern's CPU kernels over this namespace (lantern.backends.cpu); see
docs/internals/backends.md.

>>> import numpy as np
>>> from lantern.backends import strict_numpy as xp
>>> a = xp.asarray([1.0, 2.0])
>>> type(xp.exp(a)).__name__, (a * 2).tolist(), float(a.sum())
('StrictArray', [2.0, 4.0], 3.0)
>>> np.exp(a)
Traceback (most recent call last):
    ...
lantern.backends.strict_numpy.ArraySeamError: numpy.exp was called on a strict array: a kernel must reach the array library through the backend's xp (xp.exp), not numpy directly
"""
import types

import numpy as np
import scipy.special


class ArraySeamError(TypeError):
    """A kernel reached NumPy directly instead of through its backend's `xp`."""


def _refuse(name):
    raise ArraySeamError(f"numpy.{name} was called on a strict array: a kernel must reach the array library through "
                         f"the backend's xp (xp.{name}), not numpy directly")


class StrictArray(np.ndarray):
    """An ndarray whose memory kernels may only touch through the strict namespace, its operators and methods."""

    def get(self):
        """The NumPy array under it, as CuPy's ndarray.get() copies a device array to the host (for SciPy)."""
        return plain(self)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and ufunc in _OPERATOR_UFUNCS and isinstance(inputs[0], np.generic):
            # `np.float32(2) * a`: a NumPy scalar's operator hands the array to the ufunc (on a CuPy array too)
            return _through_numpy(ufunc, ufunc.__name__)(*inputs, **kwargs)
        _refuse(ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}")

    def __array_function__(self, func, kinds, args, kwargs):
        _refuse(func.__name__)


_OPERATOR_UFUNCS = {np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.remainder, np.power,
                    np.matmul, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift,
                    np.divmod, np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal}


def strict(a):
    """The strict array over a NumPy array's memory (no copy); other values pass through."""
    return a.view(StrictArray) if type(a) is np.ndarray else a


def plain(a):
    """The NumPy ndarray under a strict array (no copy); other values pass through."""
    return np.ndarray.view(a, np.ndarray) if isinstance(a, StrictArray) else a


def _unwrapped(value, name):
    """value with its strict arrays made plain, refusing NumPy arrays made outside the namespace (lists, tuples and
    dicts are looked into)."""
    if isinstance(value, StrictArray):
        return plain(value)
    if type(value) is np.ndarray and value.ndim:
        raise ArraySeamError(f"xp.{name} was given a NumPy array made outside xp (shape {value.shape}) beside strict "
                             "ones: make it with xp (xp.arange, xp.asarray, ...), as a GPU backend needs")
    if type(value) in (list, tuple):
        return type(value)(_unwrapped(v, name) for v in value)
    if type(value) is dict:
        return {k: _unwrapped(v, name) for k, v in value.items()}
    return value


def _wrapped(result):
    """A NumPy result with its arrays made strict (tuples, named tuples such as eigh's and lists too); a NumPy scalar
    becomes a 0-d strict array, as CuPy's reductions return 0-d arrays."""
    if type(result) is np.ndarray:
        return result.view(StrictArray)
    if isinstance(result, np.generic):
        return np.asarray(result).view(StrictArray)
    if isinstance(result, tuple):
        items = [_wrapped(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if type(result) is list:
        return [_wrapped(r) for r in result]
    return result


def _through_numpy(fn, name, takes_host_arrays=False):
    """fn (a NumPy function or method) called on plain arrays, its result made strict."""
    def call(*args, **kwargs):
        if takes_host_arrays:
            args, kwargs = [plain(a) for a in args], {k: plain(v) for k, v in kwargs.items()}
        else:
            args, kwargs = _unwrapped(args, name), _unwrapped(kwargs, name)
        return _wrapped(fn(*args, **kwargs))
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"numpy's {name} over the plain arrays under strict ones."
    return call


class StrictUfunc:
    """A NumPy ufunc over strict arrays: calling it and its methods (reduce, accumulate, at, outer, reduceat)."""

    def __init__(self, ufunc):
        self.ufunc = ufunc
        self.__name__ = ufunc.__name__
        self._call = _through_numpy(ufunc, ufunc.__name__)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name):
        attr = getattr(self.ufunc, name)
        return _through_numpy(attr, f"{self.__name__}.{name}") if callable(attr) else attr


class StrictNamespace:
    """A NumPy (or SciPy) module seen through strict arrays: functions and ufuncs wrapped, submodules too; dtypes,
    classes and constants as they are."""

    def __init__(self, module, host_array_functions=()):
        self._module = module
        self._host_array_functions = host_array_functions
        self.__name__ = f"strict {module.__name__}"

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if isinstance(value, np.ufunc):
            value = StrictUfunc(value)
        elif isinstance(value, types.ModuleType):
            value = StrictNamespace(value)
        elif callable(value) and not isinstance(value, type):
            value = _through_numpy(value, name, name in self._host_array_functions)
        setattr(self, name, value)  # made once: later lookups find it in the instance
        return value

    def __repr__(self):
        return f"<{self.__name__}>"


_numpy = StrictNamespace(np, host_array_functions=("asarray", "array", "asanyarray"))
special = StrictNamespace(scipy.special)  # what lantern.ops.pointwise_common.special(xp) finds for this namespace


def __getattr__(name):
    """strict_numpy.<name>: numpy.<name> over strict arrays (functions and ufuncs wrapped; dtypes as they are)."""
    return getattr(_numpy, name)


_OPERATORS = [f"__{op}__" for op in (
    "add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul", "truediv", "rtruediv", "itruediv",
    "floordiv", "rfloordiv", "ifloordiv", "mod", "rmod", "imod", "pow", "rpow", "ipow", "matmul", "rmatmul",
    "and", "rand", "iand", "or", "ror", "ior", "xor", "rxor", "ixor", "lshift", "rlshift", "ilshift", "rshift",
    "rrshift", "irshift", "divmod", "rdivmod", "neg", "pos", "abs", "invert", "eq", "ne", "lt", "le", "gt", "ge",
    "contains", "repr", "str")]
_METHODS = [name for name in dir(np.ndarray) if not name.startswith("_") and callable(getattr(np.ndarray, name))]
for _name in _OPERATORS + _METHODS:
    setattr(StrictArray, _name, _through_numpy(getattr(np.ndarray, _name), _name))
