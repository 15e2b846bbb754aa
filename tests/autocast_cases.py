"""The per-op autocast cases of tests/test_amp.py, generated from PyTorch's own OpInfo database.

An OpInfo op is a case when lantern has the function at the OpInfo's path (torch.nn.functional.conv2d ->
lantern.nn.functional.conv2d, or a Tensor method of that name) and both libraries run its first float32 sample without
autocast to outputs of the same dtypes: then what autocast changes is the only difference left to test. Each case
runs in a bfloat16 and a float16 region, once on float32 inputs and once on inputs already in the region's dtype.
"""
import functools
import warnings

import numpy as np
import torch

import lantern


def _resolve(root, name):
    obj = root
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def callables(opinfo):
    """(torch's function, lantern's) named by the OpInfo: the function at that path in both libraries (the OpInfo
    may call it through a wrapper, which seeds the generator, say: the function itself is called here), or else
    the Tensor method of that name; None when lantern has neither."""
    torch_fn, lantern_fn = _resolve(torch, opinfo.name), _resolve(lantern, opinfo.name)
    if callable(torch_fn) and not isinstance(torch_fn, torch.dtype) and callable(lantern_fn):
        return torch_fn, lantern_fn
    method = getattr(torch.Tensor, opinfo.name, None)
    if method is not None and opinfo.op is method and hasattr(lantern.Tensor, opinfo.name):
        return method, lambda self, *args, **kwargs: getattr(self, opinfo.name)(*args, **kwargs)
    return None


class NotConvertible(Exception):
    """A sample holds something lantern cannot be given (a torch.Generator, say)."""


def to_lantern(x):
    if isinstance(x, torch.Tensor):
        array = x.detach().float().numpy() if x.dtype == torch.bfloat16 else x.detach().numpy()
        return lantern.tensor(array.copy()).to(getattr(lantern, str(x.dtype)[6:]))
    if isinstance(x, torch.dtype):
        return getattr(lantern, str(x)[6:])
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_lantern(v) for v in x)
    if isinstance(x, dict):
        return {k: to_lantern(v) for k, v in x.items()}
    if isinstance(x, torch.device):
        return str(x)
    if type(x).__module__.startswith("torch"):
        raise NotConvertible(type(x).__name__)
    return x


def cast_floats(x, dtype):
    """The sample with its float32 tensors in dtype (what a program already in low precision passes)."""
    if isinstance(x, torch.Tensor):
        return x.to(dtype) if x.dtype == torch.float32 else x
    if isinstance(x, (list, tuple)):
        return type(x)(cast_floats(v, dtype) for v in x)
    if isinstance(x, dict):
        return {k: cast_floats(v, dtype) for k, v in x.items()}
    return x


def tensors_of(result):
    """The tensors of a result (a tensor, or a tuple/list of them, or torch.return_types), in order."""
    if isinstance(result, (torch.Tensor, lantern.Tensor)):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in tensors_of(r)]
    return []


def dtype_names(result):
    return [str(t.dtype).split(".")[-1] for t in tensors_of(result)]


class Case:
    """One OpInfo op: its name, torch's function, lantern's, and its first float32 sample (as torch arguments)."""

    def __init__(self, opinfo, functions, sample):
        self.name = opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")
        self.torch_fn, self.lantern_fn = functions
        self.args = (sample.input,) + tuple(sample.args)
        self.kwargs = dict(sample.kwargs)
        self.values_comparable = False

    def run_torch(self, dtype=None):
        args, kwargs = (self.args, self.kwargs) if dtype is None else cast_floats((self.args, self.kwargs), dtype)
        return self.torch_fn(*args, **kwargs)

    def run_lantern(self, dtype=None):
        args, kwargs = (self.args, self.kwargs) if dtype is None else cast_floats((self.args, self.kwargs), dtype)
        return self.lantern_fn(*to_lantern(args), **to_lantern(kwargs))


def _first_sample(opinfo):
    """The OpInfo's first float32 sample, from its generator (OpInfo.sample_inputs also walks the call stack
    for test metadata, which costs a tenth of a second per op)."""
    torch.manual_seed(0)
    try:
        return next(iter(opinfo.sample_inputs_func(opinfo, "cpu", torch.float32, False)), None)
    except Exception:  # an OpInfo whose sample generator needs something this build lacks
        return None


def _comparable(case):
    """Both libraries run the float32 sample without autocast, to tensors of the same dtypes. Also notes whether
    their values can be compared: when the op gives the same values twice and lantern's float32 values are torch's
    (random ops, uninitialized memory and sign-ambiguous results such as eigenvectors are compared by dtype only)."""
    try:
        torch.manual_seed(0)
        expected = case.run_torch()
        torch.manual_seed(1)
        again = case.run_torch()
        got = case.run_lantern()
    except NotConvertible:
        return False
    except Exception:  # the op or this sample is beyond one of the libraries: nothing of autocast's to compare
        return False
    if not tensors_of(expected) or dtype_names(got) != dtype_names(expected):
        return False
    deterministic = all(torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b, equal_nan=True))
                        for a, b in zip(tensors_of(expected), tensors_of(again)))
    case.values_comparable = deterministic and all(
        not e.is_floating_point() or (g.shape == e.shape and close(_numpy(g), _numpy(e), "float32"))
        for g, e in zip(tensors_of(got), tensors_of(expected)))
    return True


def _numpy(t):
    """A torch or lantern tensor's values as a float64 NumPy array."""
    return np.array(t.detach().double().tolist() if isinstance(t, torch.Tensor) else t.double().tolist(),
                    dtype=np.float64)


@functools.lru_cache(maxsize=None)
def cases():
    """{name: Case} for every OpInfo op that lantern has and runs as torch does without autocast."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
        found = {}
        for opinfo in op_db:
            functions = callables(opinfo)
            if functions is None or torch.float32 not in opinfo.supported_dtypes("cpu"):
                continue
            sample = _first_sample(opinfo)
            if sample is None:
                continue
            case = Case(opinfo, functions, sample)
            if _comparable(case):
                found[case.name] = case
        return found


REGIONS = {"bfloat16": (torch.bfloat16, lantern.bfloat16), "float16": (torch.float16, lantern.float16)}
INPUTS = ("float32", "region dtype")


class Expectation:
    """torch's result for one case in one autocast region, on float32 inputs or on inputs in the region's dtype."""

    def __init__(self, case, region, inputs):
        self.case, self.region, self.inputs = case, region, inputs
        torch_region = REGIONS[region][0]
        self.input_dtype = None if inputs == "float32" else torch_region
        with torch.autocast("cpu", dtype=torch_region):
            self.result = case.run_torch(self.input_dtype)

    def run_lantern(self):
        with lantern.autocast("cpu", dtype=REGIONS[self.region][1]):
            return self.case.run_lantern(self.input_dtype)


def _lantern_lacks_low_precision(case, dtype):
    """Without autocast, torch runs the op on dtype inputs and lantern does not: a gap in lantern's half-precision
    kernels, not in autocast (which leaves such inputs to the op as they are)."""
    try:
        case.run_torch(dtype)
    except Exception:
        return False
    try:
        case.run_lantern(dtype)
    except Exception:
        return True
    return False


@functools.lru_cache(maxsize=None)
def expectations():
    """{(case name, region, inputs): Expectation} for every case and region where torch's call succeeds (torch has
    no half-precision kernel for some ops: those calls are not about autocast), leaving out the calls lantern's
    half-precision kernels cannot make without autocast either (those are listed by low_precision_gaps())."""
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, case in cases().items():
            for region in REGIONS:
                for inputs in INPUTS:
                    try:
                        expectation = Expectation(case, region, inputs)
                    except Exception:
                        continue
                    if inputs == "float32" or not _lantern_lacks_low_precision(case, expectation.input_dtype):
                        found[name, region, inputs] = expectation
                    else:
                        _GAPS.append((name, region))
    return found


_GAPS = []


def low_precision_gaps():
    """(case name, region) pairs that expectations() left out: lantern cannot run them without autocast."""
    expectations()
    return list(_GAPS)


def close(got, expected, dtype_name):
    """Values agree to the precision of the region's dtype (low precision rounds differently, and a float32 result
    may hold low-precision products: torch's bilinear sums bfloat16 products)."""
    a = np.asarray(got, dtype=np.float64)
    b = np.asarray(expected, dtype=np.float64)
    tolerance = {"bfloat16": 3e-2, "float16": 5e-3}.get(dtype_name, 1e-4)
    scale = max(1.0, float(np.nanmax(np.abs(b))) if b.size and np.isfinite(b).any() else 1.0)
    return np.allclose(a, b, rtol=tolerance, atol=tolerance * scale, equal_nan=True)
