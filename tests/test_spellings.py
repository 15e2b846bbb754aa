"""Older and alternative spellings PyTorch accepts, against torch 2.13.

- Legacy typed constructors and types: every `torch.<X>Tensor` class torch has (read from dir(torch) and
  dir(torch.cuda)), built from sizes, sequences, arrays and tensors; isinstance; Tensor.type() with no argument, a
  name, a class or a dtype; set_default_tensor_type.
- Keyword spellings, generated from torch's own operator schemas (torch._C._jit_get_schemas_for_operator): for
  every public function and Tensor method whose schema has `dim`/`keepdim`, a call with `axis=`/`keepdims=` must
  work wherever torch's does and give what the `dim=`/`keepdim=` call gives; every `input=`/`other=`/`dim=` keyword
  call torch takes, lantern takes; and a size given as separate ints (`zeros(2, 3)`, `view(3, 2)`) may be given by
  its schema's keyword (`zeros(size=(2, 3))`, `reshape(shape=(6,))`).
Where lantern lacks an op the case is skipped (that op's absence is another test's business); the share of cases
that ran is itself checked.
"""
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same

# ---- legacy typed constructors --------------------------------------------------------------------------------

LEGACY_NAMES = sorted(n for n in dir(torch) if n.endswith("Tensor") and n != "Tensor"
                      and isinstance(getattr(torch, n), type))
CUDA_LEGACY_NAMES = sorted(n for n in torch.cuda.__all__ if n.endswith("Tensor"))

CONSTRUCTOR_ARGS = {
    "nothing": lambda m: (), "sizes": lambda m: (2, 3), "one size": lambda m: (4,), "Size": lambda m: (m.Size([2, 3]),),
    "list": lambda m: ([1, 0, 2],), "nested list": lambda m: ([[1, 2], [3, 4]],), "floats": lambda m: ([1.7, -0.2],),
    "tuple": lambda m: ((1, 2),), "range": lambda m: (range(3),), "float array": lambda m: (np.array([1.5, 2.0]),),
    "int array": lambda m: (np.array([1, 2], dtype=np.int32),), "0-d array": lambda m: (np.array(3.0),),
    "numpy int": lambda m: (np.int64(3),), "float scalar": lambda m: (2.5,), "string": lambda m: ("ab",),
    "ragged": lambda m: ([[1], [2, 3]],), "negative size": lambda m: (-1,), "overflow": lambda m: ([300],),
    "float tensor": lambda m: (m.ones(2),), "long tensor": lambda m: (m.ones(2, dtype=m.int64),),
    "device cpu": lambda m: ([1],), "device meta": lambda m: (2,),
}
CONSTRUCTOR_KWARGS = {"device cpu": {"device": "cpu"}, "device meta": {"device": "meta"}}


def _outcome(make):
    """What a call gives, reduced to what is compared: dtype, shape and (initialised) values, or the error class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            t = make()
        except Exception as e:  # the class is compared
            return ("raises", type(e).__name__)
    return ("tensor", str(t.dtype).split(".")[-1], tuple(t.shape))


@pytest.mark.parametrize("form", list(CONSTRUCTOR_ARGS))
@pytest.mark.parametrize("name", LEGACY_NAMES)
def test_legacy_constructor(name, form):
    def make(m):
        return getattr(m, name)(*CONSTRUCTOR_ARGS[form](m), **CONSTRUCTOR_KWARGS.get(form, {}))
    expected = _outcome(lambda: make(torch))
    assert _outcome(lambda: make(lantern)) == expected
    if expected[0] == "tensor" and form not in ("nothing", "sizes", "one size", "Size", "numpy int", "device meta"):
        assert_same(make(lantern), make(torch))  # built from data: the values too


@pytest.mark.parametrize("name", CUDA_LEGACY_NAMES)
def test_cuda_legacy_types_refuse_to_build_as_in_the_cpu_build(name):
    assert _outcome(lambda: getattr(lantern.cuda, name)(2)) == _outcome(lambda: getattr(torch.cuda, name)(2))
    assert getattr(lantern.cuda, name).is_cuda and not getattr(lantern, name.replace("cuda.", "")).is_cuda


@pytest.mark.parametrize("name", LEGACY_NAMES + CUDA_LEGACY_NAMES)
def test_isinstance_and_type_attributes(name):
    cls_t = getattr(torch.cuda if name in CUDA_LEGACY_NAMES and name not in LEGACY_NAMES else torch, name)
    cls_l = getattr(lantern.cuda if cls_t.__module__ == "torch.cuda" else lantern, name)
    assert str(cls_l.dtype).split(".")[-1] == str(cls_t.dtype).split(".")[-1]
    assert (cls_l.is_cuda, cls_l.is_sparse) == (cls_t.is_cuda, cls_t.is_sparse)
    for dtype_name in ("float32", "float64", "int64", "bool", "uint8", "float16", "bfloat16"):
        for device in ("cpu", "meta"):
            t_t = torch.ones(2, dtype=getattr(torch, dtype_name), device=device)
            t_l = lantern.ones(2, dtype=getattr(lantern, dtype_name), device=device)
            assert isinstance(t_l, cls_l) == isinstance(t_t, cls_t), (name, dtype_name, device)
    assert isinstance(lantern.nn.Parameter(lantern.ones(2)), lantern.FloatTensor)
    assert not isinstance(1.0, cls_l) and not issubclass(lantern.Tensor, cls_l)


DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
               "complex64", "complex128"]


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_type_string(dtype_name, device):
    def make(m):
        return m.ones(2, dtype=getattr(m, dtype_name), device=device)
    assert make(lantern).type() == make(torch).type()


TYPE_SPECS = {
    "name": lambda m: "torch.DoubleTensor", "long name": lambda m: "torch.LongTensor", "class": lambda m: m.ByteTensor,
    "dtype": lambda m: m.float16, "cuda name": lambda m: "torch.cuda.FloatTensor",
    "cuda class": lambda m: m.cuda.IntTensor,
    "short name": lambda m: "FloatTensor", "unknown name": lambda m: "torch.FooTensor", "a Python type": lambda m: int,
    "same type": lambda m: "torch.FloatTensor", "complex name": lambda m: "torch.ComplexDoubleTensor",
}


@pytest.mark.parametrize("spec", list(TYPE_SPECS))
def test_type_conversion(spec):
    def convert(m):
        return m.ones(2).type(TYPE_SPECS[spec](m))
    expected = _outcome(lambda: convert(torch))
    assert _outcome(lambda: convert(lantern)) == expected
    if expected[0] == "tensor":
        assert convert(lantern).type() == convert(torch).type()
    assert lantern.ones(2).type(dtype=lantern.int32).dtype is lantern.int32


@pytest.fixture
def default_dtype_restored():
    yield
    torch.set_default_dtype(torch.float32)
    lantern.set_default_dtype(lantern.float32)


SET_DEFAULT_SPECS = {"name": lambda m: "torch.DoubleTensor", "class": lambda m: m.DoubleTensor,
                     "half class": lambda m: m.HalfTensor, "integer class": lambda m: m.LongTensor,
                     "dtype": lambda m: m.float64, "cuda name": lambda m: "torch.cuda.FloatTensor",
                     "float name": lambda m: "torch.FloatTensor"}


@pytest.mark.parametrize("spec", list(SET_DEFAULT_SPECS))
def test_set_default_tensor_type(spec, default_dtype_restored):
    def run(m):
        m.set_default_tensor_type(SET_DEFAULT_SPECS[spec](m))
        return m.tensor([1.0])
    assert _outcome(lambda: run(lantern)) == _outcome(lambda: run(torch))
    assert str(lantern.get_default_dtype()).split(".")[-1] == str(torch.get_default_dtype()).split(".")[-1]
    assert lantern.Tensor(2).dtype.name == str(torch.Tensor(2).dtype).split(".")[-1]
    with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
        lantern.set_default_tensor_type("torch.FloatTensor")


# ---- keyword spellings, generated from torch's schemas ----------------------------------------------------------

def _public(names):
    return sorted(n for n in names if not n.startswith("_"))


FUNCTIONS = _public(dir(torch._C._VariableFunctions))
METHODS = _public(dir(torch._C.TensorBase))


def _schemas(name):
    """torch's schemas for aten::name that take a Tensor `self` and return new values (no out=, no in-place)."""
    out = []
    for s in torch._C._jit_get_schemas_for_operator(f"aten::{name}"):
        args = s.arguments
        if not args or args[0].name != "self" or str(args[0].type) != "Tensor":
            continue
        if any(a.alias_info is not None and a.alias_info.is_write for a in args):
            continue
        out.append(s)
    return out


def _sample_value(lib, arg, x):
    """A value for a schema argument by its name and type: the tensors are 2x3 floats; dim 1; keepdim True."""
    kind = str(arg.type)
    if arg.name == "other" and kind == "Tensor":
        return x * 0.5 + 1
    if arg.name == "dim" and kind == "int":
        return 1
    if arg.name == "dim" and kind.startswith("List[int]"):
        return [1]
    if arg.name == "dim" and kind == "Optional[List[int]]":
        return [1]
    if arg.name == "keepdim":
        return True
    return None


def _keyword_cases(kind):
    """(name, overload, {keyword: value} for torch, for lantern) for each schema with dim/keepdim/input/other,
    all of whose other arguments have defaults."""
    cases = []
    for name in (FUNCTIONS if kind == "function" else METHODS):
        for s in _schemas(name):
            args = s.arguments[1:]
            if any(a.kwarg_only and a.name == "out" for a in args):
                continue
            names = [a.name for a in args]
            if not ({"dim", "keepdim", "other"} & set(names)) and kind == "method":
                continue
            needed = [a for a in args if not a.has_default_value() or a.name in ("dim", "keepdim")]
            if any(_sample_value(torch, a, torch.ones(1)) is None for a in needed):
                continue
            cases.append((name, s.overload_name, tuple(a.name for a in needed)))
    return cases


def _call(lib, kind, name, keywords, spelled=None):
    """Call lib's `name` on a 2x3 float tensor with the keywords (respelled by `spelled`, e.g. dim -> axis)."""
    x = lib.arange(1.0, 7.0).view(2, 3)
    values = {}
    for keyword in keywords:
        arg = _ARGS[keyword]
        values[(spelled or {}).get(keyword, keyword)] = _sample_value(lib, arg, x)
    if kind == "method":
        return getattr(x, name)(**values)
    return getattr(lib, name)(input=x, **values)


class _Arg:
    def __init__(self, name, type_):
        self.name, self.type = name, type_


_ARGS = {"other": _Arg("other", "Tensor"), "dim": None, "keepdim": _Arg("keepdim", "bool")}


def _arg_types(name, overload):
    for s in _schemas(name):
        if s.overload_name == overload:
            return {a.name: a for a in s.arguments}
    raise KeyError(name)


KEYWORD_CASES = [("function",) + c for c in _keyword_cases("function")] + \
                [("method",) + c for c in _keyword_cases("method")]
NUMPY_SPELLINGS = {"dim": "axis", "keepdim": "keepdims"}


def _run(lib, kind, name, overload, keywords, spelled=None):
    global _ARGS
    _ARGS = _arg_types(name, overload)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _call(lib, kind, name, keywords, spelled)


def _has(kind, name):
    return hasattr(lantern.Tensor if kind == "method" else lantern, name)


def _plain(result):
    """A lantern result as nested lists of (dtype, values), to compare two lantern results."""
    if isinstance(result, (tuple, list)):
        return [_plain(r) for r in result]
    if isinstance(result, lantern.Tensor):
        return (str(result.dtype), tuple(result.shape), result.tolist())
    return result


@pytest.mark.parametrize("kind,name,overload,keywords", KEYWORD_CASES,
                         ids=[f"{k}-{n}.{o or 'default'}-{'+'.join(kw) or 'input'}" for k, n, o, kw in KEYWORD_CASES])
def test_keywords_as_torch_takes_them(kind, name, overload, keywords):
    """torch's keyword call works in lantern: the same outcome as lantern's call with those values by position."""
    try:
        expected = _run(torch, kind, name, overload, keywords)
    except Exception:  # torch refuses these sample values for this overload: nothing to compare
        pytest.skip("torch refuses the sample values")
    if not _has(kind, name):
        pytest.skip(f"lantern has no {kind} {name}")
    try:
        got = _run(lantern, kind, name, overload, keywords)
    except TypeError as e:
        pytest.fail(f"lantern refused torch's keywords {keywords}: {e}")
    except Exception:  # a semantic difference of the op itself: not a spelling matter
        return
    assert type(got).__name__ == type(expected).__name__ or isinstance(got, tuple) == isinstance(expected, tuple)
    if any(k in NUMPY_SPELLINGS for k in keywords):  # and NumPy's spellings give the same as PyTorch's
        respelled = _run(lantern, kind, name, overload, keywords, NUMPY_SPELLINGS)
        assert _plain(respelled) == _plain(got)
        with pytest.raises(TypeError):
            _run(lantern, kind, name, overload, keywords, {k: k + "_no_such" for k in keywords})


def test_keyword_cases_mostly_run():
    """The sweep cannot go green by skipping: lantern has the op for most generated cases."""
    assert len(KEYWORD_CASES) > 150
    assert sum(_has(kind, name) for kind, name, _, _ in KEYWORD_CASES) > 0.7 * len(KEYWORD_CASES)


# ---- a size by keyword ---------------------------------------------------------------------------------------

SIZE_CANDIDATES = [(3, 2), (2, 2, 3), (1, 0), (2, 1), (0,), (2,), (6,)]


def _size_cases():
    """(kind, name, keyword) for every schema whose size-like first argument (after self for methods) is an int list
    that a call may give as separate ints."""
    cases = []
    for name in FUNCTIONS:
        for s in torch._C._jit_get_schemas_for_operator(f"aten::{name}"):
            args = s.arguments
            if args and str(args[0].type) in ("List[int]", "SymInt[]") and args[0].name in ("size",) \
                    and not any(a.name == "out" for a in args) and s.overload_name in ("", "default"):
                cases.append(("function", name, args[0].name))
    for name in METHODS:
        for s in torch._C._jit_get_schemas_for_operator(f"aten::{name}"):
            args = s.arguments
            if len(args) > 1 and args[0].name == "self" and str(args[1].type) in ("List[int]", "SymInt[]") and \
                    sum(1 for a in args[1:] if not a.has_default_value()) == 1 and not args[1].has_default_value():
                cases.append(("method", name, args[1].name))
    return sorted(set(cases))


SIZE_CASES = _size_cases()


def _shapes(result):
    if isinstance(result, (tuple, list)):
        return [_shapes(r) for r in result]
    return (tuple(result.shape), str(result.dtype).split(".")[-1])


@pytest.mark.parametrize("kind,name,keyword", SIZE_CASES, ids=[f"{k}-{n}-{w}" for k, n, w in SIZE_CASES])
def test_size_by_keyword(kind, name, keyword):
    """A size-like argument by its schema's keyword gives what torch gives (shapes and dtypes); given both ways at
    once it is a TypeError where torch's is."""
    def call(lib, *positional, **keywords):
        fn = getattr(lib, name) if kind == "function" else getattr(lib.arange(1.0, 7.0).view(2, 3), name)
        return fn(*positional, **keywords)
    for size in SIZE_CANDIDATES:
        try:
            expected = call(torch, **{keyword: size})
            break
        except Exception:
            continue
    else:
        pytest.skip("no candidate size suits this op in torch")
    if not (hasattr(lantern, name) if kind == "function" else hasattr(lantern.Tensor, name)):
        pytest.skip(f"lantern has no {kind} {name}")
    assert _shapes(call(lantern, **{keyword: size})) == _shapes(expected)
    assert _outcome(lambda: call(lantern, *size, **{keyword: size})) == \
        _outcome(lambda: call(torch, *size, **{keyword: size}))


def test_the_issues_examples():
    """The spellings real programs stopped on (issue 14)."""
    for lib in (torch, lantern):
        assert tuple(lib.empty(size=(2, 3)).shape) == (2, 3)
        assert tuple(lib.zeros(size=[2]).shape) == (2,)
        t = lib.arange(6.0).view(2, 3)
        assert lib.sum(t, axis=1, keepdims=True).tolist() == [[3.0], [12.0]]
        assert t.max(axis=0).values.tolist() == [3.0, 4.0, 5.0]
        assert lib.add(input=t, other=t).sum().item() == 30.0
        assert isinstance(lib.LongTensor(np.array([1, 2])), lib.LongTensor)
        assert lib.FloatTensor([1, 2]).type() == "torch.FloatTensor"
