"""Run PyTorch 2.13's OpInfo database (torch.testing._internal's `op_db`) on lantern and on torch, sample by sample.

Every CPU OpInfo that is not internal is in scope (see `in_scope_ops`). Each is mapped to lantern by name: its
`op` is a torch callable whose public path (torch.X, torch.Tensor.X, torch.nn.functional.X, torch.linalg.X, ...)
names the lantern function (`lantern.X`, ...); an OpInfo whose `op` is a lambda of torch's test suite runs that
lambda with its globals rebound to lantern (`rebind`). Samples are torch tensors: each is converted to lantern with
the same dtype, shape and strides, and the outputs are compared (Python types, dtypes, shapes, values within
torch.testing's default tolerances; strides are left out). The checks, each with a stable sample id:

    <dtype>/<i>       sample i of op.sample_inputs for dtype (float32, float64, int64, bool, complex64); in the
                      full tier, op.reference_inputs follow, numbered after the sample_inputs; only
                      types, dtypes and shapes where the OpInfo has_nondeterministic_output (empty, empty_like);
                      the outputs of UNIQUE_UP_TO_SIGN's decompositions, when they differ, are compared again
                      through the sample's output_process_fn_grad, as torch's tests compare them
    <dtype>/<i>/nc    the same sample made non-contiguous (SampleInput.noncontiguous)
    grad/<i>          float64 sample i with requires_grad, through op.gradcheck_wrapper: lantern's gradients of
                      sum(output * w) (w fixed) against torch's
    gradcheck/<i>     the same sample through lantern.autograd.gradcheck, where its inputs are small (cheap)
    error/<i>         op.error_inputs' i-th input: lantern must raise the class torch raises

Each OpInfo runs in a child forked from this process (one per OpInfo, `--jobs` at a time): a crash, a hang or a
corrupted global state stays with that OpInfo. A crash or a timeout fails the sample that was running and the
child is started again after it.

    .venv/bin/python tools/opinfo_sweep.py                 # quick tier: the first samples of each OpInfo, checked
                                                           #   against tests/opinfo_expected.json
    .venv/bin/python tools/opinfo_sweep.py --full          # every sample, checked against the file
    .venv/bin/python tools/opinfo_sweep.py --full --write  # regenerate tests/opinfo_expected.json
    .venv/bin/python tools/opinfo_sweep.py --full --write --ops sign,narrow   # regenerate those OpInfos' entries
    .venv/bin/python tools/opinfo_sweep.py --ops add,sign -v   # some OpInfos, printing each failing sample
"""
import argparse
import contextlib
import dataclasses
import importlib
import io
import itertools
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import resource
import sys
import time
import traceback
import types
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))  # tests/oracle.py: the comparison rules every oracle test uses
EXPECTED_PATH = os.path.join(ROOT, "tests", "opinfo_expected.json")

DTYPES = ("float32", "float64", "int64", "bool", "complex64")
# How much of each OpInfo a tier runs: samples per dtype, of which non-contiguous, float64 gradient samples,
# error inputs (None: all).
TIERS = {"quick": dict(samples=2, noncontiguous=1, grads=1, errors=1),
         "full": dict(samples=None, noncontiguous=None, grads=None, errors=None)}
GRADCHECK_MAX_ELEMENTS = 40  # gradcheck's finite differences run the op twice per input element: small ones only
SAMPLE_TIMEOUT_S = 60      # a sample that runs longer is failed as a hang and its OpInfo restarted after it
MAX_RESTARTS = 8           # per OpInfo: after that many crashes the rest of its samples are not run
CHILD_MEMORY_BYTES = 6 << 30  # address space a child may add to what it inherits (a runaway op fails alone)
MISSING = "missing: "     # reasons that start so mean lantern has no such function
# The decompositions whose vectors torch documents as unique only up to sign (phase, for complex inputs), which
# LAPACK implementations choose differently (torch's MKL, NumPy's OpenBLAS); torch's own tests compare them through
# their samples' output_process_fn_grad (|U|, |V|, U @ Vh and the values, the basis of a null space left out), and
# so does the sweep where their outputs differ as they are. Other OpInfos' functions drop outputs that are unique
# (linalg.lu's P) or layouts (to_sparse): they are never compared so.
UNIQUE_UP_TO_SIGN = {"linalg.svd", "svd", "svd_lowrank", "pca_lowrank", "linalg.eig", "linalg.eigh"}
# Samples whose float32/complex64 results sit at the edge of torch.testing's tolerance, so that whether they match
# depends on the CPU and the BLAS build (torch's MKL and NumPy's OpenBLAS round their sums differently per
# instruction set): on an AMD EPYC they fail as recorded, on an Intel Xeon some pass and others fail. Either
# outcome is accepted for them (with or without the non-contiguous suffix).
ROUNDING_DEPENDS_ON_THE_MACHINE = {
    "addbmm": {"float32/1", "complex64/0"},
    "linalg.cond": {"complex64/1"},
    "nn.functional.conv2d": {"complex64/0", "complex64/1"},
}


# ---- which OpInfos --------------------------------------------------------------------------------------------------

def op_key(op):
    """The OpInfo's id in reports: its name, and its variant_test_name after a dot when it has one."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def out_of_scope_reason(op):
    """Why torch's OpInfo `op` is not a lantern target, or None: internal ops and CUDA-only ones are out."""
    import torch
    if isinstance(op.op, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)) or op.name.startswith("torch.ops."):
        return "internal (torch.ops.aten)"
    last = op.name.split(".")[-1]
    if last.startswith("_") and not last.startswith("__"):
        return "internal (a private name)"
    if isinstance(op.op, types.FunctionType) and {"ops", "aten"} <= _global_names(op.op.__code__):
        return "internal (calls torch.ops.aten)"
    if type(op.op).__name__ == "_JittedFunction" or not op.supported_dtypes("cpu"):
        return "CUDA-only"
    return None


def all_ops():
    """{key: OpInfo} for torch's whole op_db (it includes the linalg, special, fft, signal and masked definitions)."""
    with _quiet():
        from torch.testing._internal.common_methods_invocations import op_db
    return {op_key(op): op for op in op_db}


def in_scope_ops():
    return {key: op for key, op in all_ops().items() if out_of_scope_reason(op) is None}


# ---- torch objects -> lantern objects -------------------------------------------------------------------------------

# The namespaces whose public callables OpInfos name, searched in this order (the first path of an object wins,
# so torch.norm is found as itself rather than as torch.functional.norm).
NAMESPACES = ["torch", "torch.Tensor", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft",
              "torch.signal.windows", "torch.masked", "torch.sparse", "torch.nn.init", "torch.autograd",
              "torch.functional"]


class Missing(Exception):
    """lantern has no object at the torch path this names."""


def torch_paths():
    """{id(object): public path} for the callables and modules of NAMESPACES."""
    import torch
    paths = {}
    for namespace in NAMESPACES:
        holder = _import_path(torch, namespace)
        paths.setdefault(id(holder), namespace)
        for name in dir(holder):
            if name.startswith("_") and not (name.startswith("__") and namespace == "torch.Tensor"):
                continue
            value = getattr(holder, name, None)
            if callable(value) or isinstance(value, types.ModuleType):
                paths.setdefault(id(value), f"{namespace}.{name}")
    return paths


def _import_path(torch, path):
    value = torch
    for part in path.split(".")[1:]:
        value = getattr(value, part)
    return value


def lantern_object(path):
    """The lantern object at torch's `path` (torch.linalg.norm -> lantern.linalg.norm), or raise Missing."""
    import lantern
    value, module_name = lantern, "lantern"
    for part in path.split(".")[1:]:
        if hasattr(value, part):
            value = getattr(value, part)
        elif isinstance(value, types.ModuleType):
            try:
                value = importlib.import_module(f"{module_name}.{part}")
            except ImportError:
                raise Missing(f"lantern has no {path.replace('torch', 'lantern', 1)}") from None
        else:
            raise Missing(f"lantern has no {path.replace('torch', 'lantern', 1)}")
        module_name = f"{module_name}.{part}"
    return value


class Translator:
    """Maps the torch objects a sample or an OpInfo's lambda holds to lantern's."""

    def __init__(self):
        import lantern
        import torch
        self.torch, self.lantern = torch, lantern
        self.paths = torch_paths()
        self.rebound = {}
        # within sample_value: torch storage -> the lantern tensor holding its elements; id of a torch tensor ->
        # its lantern tensor (a tensor passed twice, as an input and as out=, is one tensor in lantern too)
        self._storages = self._tensors = None

    # -- callables --

    def callable(self, fn):
        """lantern's counterpart of torch callable `fn`: by public path, or `fn` rebound if torch's tests define it."""
        path = self.paths.get(id(fn))
        if path is not None:
            return lantern_object(path)
        if isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing"):
            return self.global_value(fn.__name__, fn)
        if isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch."):
            raise Missing(f"no public path for {fn.__module__}.{fn.__qualname__}")
        if isinstance(fn, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)):
            raise Missing(f"no public path for torch's {fn!r}")
        return fn

    def rebind(self, fn):
        """A copy of `fn` (a function of torch's test suite) whose globals and closure name lantern's objects."""
        if fn in self.rebound:
            return self.rebound[fn]
        new_globals = dict(fn.__globals__)
        closure = None
        if fn.__closure__:
            closure = tuple(types.CellType(self.global_value(name, cell.cell_contents))
                            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__))
        result = types.FunctionType(fn.__code__, new_globals, fn.__name__, fn.__defaults__, closure)
        result.__kwdefaults__ = fn.__kwdefaults__
        self.rebound[fn] = result  # before its globals are filled in: a recursive helper finds itself
        for name in _global_names(fn.__code__):
            if name in new_globals:
                new_globals[name] = self.global_value(name, new_globals[name])
        return result

    def global_value(self, name, value):
        """What a rebound function sees for a global (or a closure variable) of torch's test suite."""
        torch = self.torch
        if name == "wrapper_set_seed":
            return self._wrapper_set_seed
        if isinstance(value, types.ModuleType):
            if value is torch or value.__name__.startswith("torch."):
                path = self.paths.get(id(value), value.__name__)
                try:
                    return lantern_object(path)
                except Missing as missing:
                    return _MissingThing(str(missing))
            return value
        if isinstance(value, types.FunctionType) and value.__module__.startswith("torch.testing"):
            return self.rebind(value)
        if isinstance(value, (torch.Tensor, torch.dtype, torch.device)):
            return self.value(value)
        if callable(value) and id(value) in self.paths:
            try:
                return lantern_object(self.paths[id(value)])
            except Missing as missing:
                return _MissingThing(str(missing))
        if isinstance(value, types.FunctionType) and value.__module__.startswith("torch"):
            return _MissingThing(f"no public path for {value.__module__}.{value.__qualname__}")
        return value

    def _wrapper_set_seed(self, op, *args, **kwargs):
        """torch's tests run random ops after torch.manual_seed(42); lantern's run after lantern.manual_seed(42)."""
        state = self.lantern.get_rng_state()
        self.lantern.manual_seed(42)
        try:
            return op(*args, **kwargs)
        finally:
            self.lantern.set_rng_state(state)

    # -- values --

    def sample_value(self, x, leaves=None):
        """value(x) for everything one sample passes: tensors that share memory in torch (an out= that is an input,
        or a view of one) share memory in lantern, so that overlap checks see what torch's see."""
        self._storages, self._tensors = {}, {}
        try:
            return self.value(x, leaves)
        finally:
            self._storages = self._tensors = None

    def value(self, x, leaves=None):
        """A sample's argument in lantern's terms: tensors with the same dtype, shape, strides and requires_grad
        (their lantern leaves appended to `leaves` when given), dtypes, devices, memory formats, containers."""
        torch, lantern = self.torch, self.lantern
        if isinstance(x, torch.Tensor):
            if self._tensors is None:
                return self._tensor(x, leaves)
            if id(x) not in self._tensors:
                self._tensors[id(x)] = (x, self._tensor(x, leaves))  # x kept alive: its id stays its own
            return self._tensors[id(x)][1]
        if isinstance(x, torch.dtype):
            return getattr(lantern, str(x).replace("torch.", ""))
        if isinstance(x, torch.device):
            return lantern.device(str(x))
        if isinstance(x, (torch.memory_format, torch.layout)):
            return lantern_object(str(x))
        if isinstance(x, torch.Size):
            return lantern.Size(x)
        if isinstance(x, torch.Generator):
            return lantern.Generator().manual_seed(x.initial_seed())
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(self.value(y, leaves) for y in x))
        if isinstance(x, (list, tuple)):
            return type(x)(self.value(y, leaves) for y in x)
        if isinstance(x, dict):
            return {k: self.value(v, leaves) for k, v in x.items()}
        if callable(x) and id(x) in self.paths:
            return lantern_object(self.paths[id(x)])
        if isinstance(x, torch.nn.Module):
            return self._stateless_module(x)
        if dataclasses.is_dataclass(x) and getattr(torch.nn, type(x).__name__, None) is type(x):
            # a torch.nn settings record (nn.LinearCrossEntropyOptions): lantern's of that name, field by field
            fields = {f.name: self.value(getattr(x, f.name), leaves) for f in dataclasses.fields(x)}
            return lantern_object(f"torch.nn.{type(x).__name__}")(**fields)
        if type(x).__module__.startswith("torch"):
            raise Missing(f"cannot convert a {type(x).__module__}.{type(x).__name__} argument")
        return x

    def _stateless_module(self, module):
        """lantern's instance of a torch.nn module that holds no tensors (the nn.PairwiseDistance() a sample passes
        as a distance function): the class of the same torch.nn name, with the same settings."""
        torch, lantern = self.torch, self.lantern
        name = type(module).__name__
        if getattr(torch.nn, name, None) is not type(module):
            raise Missing(f"cannot convert a {type(module).__module__}.{name} argument (not a torch.nn class)")
        if any(True for _ in itertools.chain(module.parameters(), module.buffers(), module.children())):
            raise Missing(f"cannot convert a torch.nn.{name} argument holding parameters, buffers or submodules")
        cls = lantern_object(f"torch.nn.{name}")
        result = cls.__new__(cls)
        lantern.nn.Module.__init__(result)
        result.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
        return result

    def _tensor(self, t, leaves):
        torch, lantern = self.torch, self.lantern
        if t.layout in (torch.sparse_coo, torch.sparse_csr):
            if t.layout == torch.sparse_coo:
                result = lantern.sparse_coo_tensor(self._tensor(t._indices(), None), self._tensor(t._values(), None),
                                                   tuple(t.shape))
            else:
                result = lantern.sparse_csr_tensor(*(self._tensor(part.detach(), None) for part in
                                                     (t.crow_indices(), t.col_indices(), t.values())), tuple(t.shape))
            if t.requires_grad:
                result.requires_grad_(True)  # a sparse leaf, as torch's
                if leaves is not None:
                    leaves.append(result)
            return result
        if t.layout != torch.strided:
            raise Missing(f"cannot convert a {t.layout} tensor (lantern converts strided, COO and CSR tensors)")
        if t.device.type == "meta":
            return lantern.empty_strided(tuple(t.shape), t.stride(), dtype=self.value(t.dtype), device="meta")
        values = t.detach().resolve_conj().resolve_neg()
        if values._is_zerotensor():
            values = torch.zeros(values.shape, dtype=values.dtype)
        # detached: a tensor of its own over that storage, as torch's is, not a view of the storage tensor; only
        # metadata, so a tensor of more dims than a NumPy array holds (65) converts too
        result = self._storage_of(values).as_strided(tuple(values.shape), values.stride(),
                                                     values.storage_offset()).detach()
        if t.requires_grad:
            result.requires_grad_(True)  # a leaf with the same strides
            if leaves is not None:
                leaves.append(result)
        return result

    def _storage_of(self, t):
        """A 1-d lantern tensor holding every element of t's storage (what as_strided reads), made once per
        storage within a sample so that torch's aliasing carries over."""
        torch, lantern = self.torch, self.lantern
        key = (t.untyped_storage()._cdata, t.dtype)  # the StorageImpl: one per storage, empty ones too
        if self._storages is not None and key in self._storages:
            return self._storages[key][1]
        # a clone: a NumPy array over torch's own storage would make it unresizable (an out= could not grow)
        whole = t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0).clone()
        if whole.dtype in (torch.bfloat16, torch.complex32):  # NumPy has neither: through float32 / complex64
            wide = torch.float32 if whole.dtype == torch.bfloat16 else torch.complex64
            storage = lantern.tensor(whole.to(wide).numpy()).to(self.value(whole.dtype))
        else:
            storage = lantern.tensor(whole.numpy())
        if self._storages is not None:
            self._storages[key] = (t.untyped_storage(), storage)  # torch's kept alive: its address stays its own
        return storage


class _MissingThing:
    """Stands for a torch object lantern lacks: using it raises Missing."""

    def __init__(self, message):
        self.message = message

    def __getattr__(self, name):
        raise Missing(self.message)

    def __call__(self, *args, **kwargs):
        raise Missing(self.message)


def _global_names(code):
    """The global names a code object and the code objects nested in it (lambdas inside lambdas) read."""
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


# ---- one OpInfo's checks --------------------------------------------------------------------------------------------

def _one_line(text, limit=160):
    text = re.sub(r"0x[0-9a-f]+", "0x..", " ".join(str(text).split()))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _error_reason(exc):
    if isinstance(exc, Missing):
        return MISSING + _one_line(exc)
    if isinstance(exc, AttributeError) and re.search(r"(module 'lantern[\w.]*'|'Tensor' object|type object "
                                                     r"'Tensor') has no attribute", str(exc)):
        return MISSING + _one_line(exc)
    return _one_line(f"{type(exc).__name__}: {exc}")


def _seed(torch, lantern, seed=0):
    torch.manual_seed(seed)
    lantern.manual_seed(seed)


def first_samples(ops, dtype, count, translator, requires_grad=False):
    """(key, OpInfo, index, sample) for the first `count` samples in `dtype` of each OpInfo of `ops` (by key) that
    supports dtype on CPU and whose callable lantern has; both generators are seeded before an OpInfo's samples
    are made."""
    import torch
    import lantern
    for key, op in sorted(ops.items()):
        if dtype not in op.supported_dtypes("cpu"):
            continue
        try:
            translator.callable(op.op)
        except Missing:
            continue
        _seed(torch, lantern)
        with _quiet():
            samples = list(itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=requires_grad), count))
        for i, sample in enumerate(samples):
            yield key, op, i, sample


def outcome(fn):
    """(fn(), None), or (None, the exception fn raised); fn's warnings and prints kept quiet."""
    with _quiet():
        try:
            return fn(), None
        except Exception as exc:
            return None, exc


def known_differences(failures, ops, known):
    """For a sweep over `ops` with `failures` ({sample: reason}) and `known` ({sample: why it differs}): the
    failures that are not known, and the known samples of those ops that agree now (whose entries should go)."""
    unexpected = {sample: reason for sample, reason in failures.items() if sample not in known}
    now_agree = [sample for sample in known if sample.rpartition("/")[0] in ops and sample not in failures]
    return unexpected, now_agree


def _compare(got, expected):
    """None when lantern's result `got` matches torch's `expected` (oracle.assert_same without strides; sparse
    tensors by layout, then as dense)."""
    from oracle import assert_same
    try:
        assert_same(_dense(got), _dense(expected), strides=False)
    except AssertionError as exc:
        return "mismatch: " + _one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else "values")
    return None


def _blank(x, lib):
    """`x` with each tensor replaced by zeros of its dtype and shape."""
    if isinstance(x, lib.Tensor):
        return lib.zeros(tuple(x.shape), dtype=x.dtype)
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_blank(y, lib) for y in x)
    return x


def _dense(x):
    """`x` with its sparse tensors made dense, each in a ("<layout>", dense) pair so that layouts are compared."""
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_dense(y) for y in x)
    layout = str(getattr(x, "layout", "torch.strided")).split(".")[-1]
    if layout != "strided" and hasattr(x, "to_dense"):
        return (layout, x.to_dense())
    return x


def _same_error(torch_exc, lantern_exc):
    from oracle import same_error_class
    if same_error_class(type(torch_exc), type(lantern_exc)):
        return None
    return _one_line(f"torch raised {type(torch_exc).__name__}, lantern raised {type(lantern_exc).__name__}: "
                     f"{lantern_exc}")


class OpRunner:
    """Runs one OpInfo's checks in this process, reporting each through `report(sample_id, reason or None)`."""

    def __init__(self, op, translator, tier, report, skip=()):
        import lantern
        import torch
        self.op, self.t, self.tier, self.report, self.skip = op, translator, TIERS[tier], report, set(skip)
        self.torch, self.lantern = torch, lantern

    def run(self):
        try:
            lantern_op = self.t.callable(self.op.op)
        except Missing as missing:
            self.report("op", MISSING + _one_line(missing))
            return
        supported = {str(d).replace("torch.", "") for d in self.op.supported_dtypes("cpu")}
        for dtype_name in DTYPES:
            if dtype_name in supported:
                self._forward(lantern_op, dtype_name)
        backward = {str(d).replace("torch.", "") for d in self.op.supported_backward_dtypes("cpu")}
        if self.op.supports_autograd and "float64" in backward:
            self._gradients(lantern_op)
        self._errors(lantern_op)

    def _samples(self, dtype_name, requires_grad, limit, reference=False):
        """The first `limit` samples (all for None), made before anything runs so that ids are stable. With
        `reference`, the whole tier also takes the OpInfo's reference_inputs where it has them, numbered after its
        sample_inputs (which keep their ids in every tier): torch's reference tests' larger hand-picked inputs."""
        _seed(self.torch, self.lantern)
        dtype = getattr(self.torch, dtype_name)
        with _quiet():
            samples = list(itertools.islice(self.op.sample_inputs("cpu", dtype, requires_grad=requires_grad), limit))
            if reference and limit is None and self.op.reference_inputs_func is not None:
                samples += self.op.reference_inputs("cpu", dtype, requires_grad=requires_grad)
        return samples

    def _check(self, sample_id, check, *args):
        if sample_id in self.skip:
            return
        self.report(sample_id, None, started=True)
        try:
            with _quiet():
                reason = check(*args)
        except Missing as missing:
            reason = MISSING + _one_line(missing)
        except Exception as exc:  # the harness's own failure on this sample: reported, never a pass
            reason = _one_line(f"harness: {type(exc).__name__}: {exc}")
        if reason != "n/a":
            self.report(sample_id, reason)

    def _forward(self, lantern_op, dtype_name):
        try:
            samples = self._samples(dtype_name, False, self.tier["samples"], reference=True)
        except Exception as exc:
            self.report(f"{dtype_name}/samples", _one_line(f"torch's sample_inputs raised: {exc}"))
            return
        for i, sample in enumerate(samples):
            self._check(f"{dtype_name}/{i}", self._forward_sample, lantern_op, sample)
        nc_limit = self.tier["noncontiguous"]
        for i, sample in enumerate(samples[:nc_limit] if nc_limit is not None else samples):
            self._check(f"{dtype_name}/{i}/nc", self._noncontiguous_sample, lantern_op, sample)

    def _noncontiguous_sample(self, lantern_op, sample):
        try:
            sample = sample.noncontiguous()
        except RuntimeError:
            return "n/a"  # torch cannot lay this sample out otherwise (a sparse CSR input)
        return self._forward_sample(lantern_op, sample)

    def _forward_sample(self, lantern_op, sample):
        torch, lantern = self.torch, self.lantern
        args = (sample.input, *sample.args)
        l_args, l_kwargs = self.t.sample_value((args, sample.kwargs))
        _seed(torch, lantern)
        try:
            expected = self.op.op(*args, **sample.kwargs)
        except Exception as torch_exc:
            try:
                _seed(torch, lantern)
                lantern_op(*l_args, **l_kwargs)
            except Exception as lantern_exc:
                reason = _error_reason(lantern_exc)
                return reason if reason.startswith(MISSING) else _same_error(torch_exc, lantern_exc)
            return _one_line(f"torch raised {type(torch_exc).__name__}, lantern returned")
        _seed(torch, lantern)
        try:
            got = lantern_op(*l_args, **l_kwargs)
        except Exception as exc:
            return _error_reason(exc)
        if self.op.has_nondeterministic_output:  # empty, empty_like, ...: no values to compare
            got, expected = _blank(got, lantern), _blank(expected, torch)
        mismatch = _compare(got, expected)
        if mismatch and op_key(self.op) in UNIQUE_UP_TO_SIGN:
            l_process = self.t.callable(sample.output_process_fn_grad)
            mismatch = _compare(l_process(got), sample.output_process_fn_grad(expected))
            return mismatch and "through output_process_fn_grad: " + mismatch
        return mismatch

    def _gradients(self, lantern_op):
        try:
            samples = self._samples("float64", True, self.tier["grads"])
        except Exception as exc:
            self.report("grad/samples", _one_line(f"torch's sample_inputs raised: {exc}"))
            return
        for i, sample in enumerate(samples):
            self._check(f"grad/{i}", self._gradient_sample, lantern_op, sample, i)
            self._check(f"gradcheck/{i}", self._gradcheck_sample, lantern_op, sample)

    def _gradcheck_sample(self, lantern_op, sample):
        """lantern.autograd.gradcheck (finite differences) on samples whose inputs are small enough to be cheap;
        "n/a" for larger ones and for samples torch's gradcheck itself refuses."""
        torch, lantern = self.torch, self.lantern
        args = (sample.input, *sample.args)
        t_leaves = [x for x in _flatten((args, sample.kwargs)) if isinstance(x, torch.Tensor) and x.requires_grad]
        if not t_leaves or sum(x.numel() for x in t_leaves) > GRADCHECK_MAX_ELEMENTS:
            return "n/a"
        if not _differentiable_outputs(self.op.gradcheck_wrapper, self.op.op, sample, torch):
            return "n/a"
        if not _torch_gradcheck_passes(self.op, sample, torch):
            return "n/a"  # finite differences do not hold here (a rounding cast, a random op, ties)
        l_leaves = []
        l_structure = self.t.sample_value((args, sample.kwargs), l_leaves)
        l_wrapper = self.t.callable(self.op.gradcheck_wrapper)
        l_process = self.t.callable(sample.output_process_fn_grad)

        def function(*leaves):
            l_args, l_kwargs = _replace(l_structure, dict(zip(map(id, l_leaves), leaves)))
            out = l_process(l_wrapper(lantern_op, *l_args, **l_kwargs))
            return tuple(x for x in _flatten(out) if isinstance(x, lantern.Tensor) and x.requires_grad)

        try:
            lantern.autograd.gradcheck(function, tuple(l_leaves), nondet_tol=self.op.gradcheck_nondet_tol)
        except Exception as exc:
            return "gradcheck: " + _error_reason(exc)
        return None

    def _gradient_sample(self, lantern_op, sample, index):
        """lantern's gradients of sum(out * w) over the differentiable outputs against torch's; "n/a" when the
        sample has no differentiable input or output (or torch refuses it)."""
        import numpy as np
        torch, lantern = self.torch, self.lantern
        args = (sample.input, *sample.args)
        t_leaves = [x for x in _flatten((args, sample.kwargs)) if isinstance(x, torch.Tensor) and x.requires_grad]
        l_leaves = []
        l_args, l_kwargs = self.t.sample_value((args, sample.kwargs), l_leaves)
        if not t_leaves:
            return "n/a"
        wrapper = self.op.gradcheck_wrapper
        _seed(torch, lantern)
        try:
            t_out = sample.output_process_fn_grad(wrapper(self.op.op, *args, **sample.kwargs))
        except Exception:
            return "n/a"
        t_outs = [x for x in _flatten(t_out) if isinstance(x, torch.Tensor) and x.requires_grad]
        if not t_outs:
            return "n/a"
        rng = np.random.default_rng(index)
        weights = [rng.standard_normal(tuple(o.shape)) + (1j * rng.standard_normal(tuple(o.shape))
                                                           if o.is_complex() else 0) for o in t_outs]
        t_weights = [torch.tensor(w, dtype=o.dtype) for w, o in zip(weights, t_outs)]
        t_grads = torch.autograd.grad(t_outs, t_leaves, t_weights, allow_unused=True)
        l_wrapper = self.t.callable(wrapper)
        l_process = self.t.callable(sample.output_process_fn_grad)
        _seed(torch, lantern)
        try:
            l_out = l_process(l_wrapper(lantern_op, *l_args, **l_kwargs))
        except Exception as exc:
            return _error_reason(exc)
        l_outs = [x for x in _flatten(l_out) if isinstance(x, lantern.Tensor) and x.requires_grad]
        if len(l_outs) != len(t_outs):
            return f"gradient: {len(l_outs)} differentiable outputs, torch has {len(t_outs)}"
        l_weights = [lantern.tensor(w, dtype=self.t.value(o.dtype)) for w, o in zip(weights, t_outs)]
        try:
            l_grads = lantern.autograd.grad(l_outs, l_leaves, l_weights, allow_unused=True)
        except Exception as exc:
            return "backward: " + _error_reason(exc)
        for k, (lg, tg, leaf) in enumerate(zip(l_grads, t_grads, t_leaves)):
            tg = torch.zeros_like(leaf) if tg is None or tg._is_zerotensor() else tg
            lg = lantern.zeros_like(l_leaves[k]) if lg is None else lg
            mismatch = _compare(lg.detach(), tg.detach())
            if mismatch:
                return f"gradient of input {k}: {mismatch}"
        return None

    def _errors(self, lantern_op):
        try:
            with _quiet():
                errors = list(itertools.islice(self.op.error_inputs("cpu"), self.tier["errors"]))
        except Exception:
            return  # no error inputs for this OpInfo on CPU
        for i, error in enumerate(errors):
            self._check(f"error/{i}", self._error_sample, lantern_op, error.sample_input)

    def _error_sample(self, lantern_op, sample):
        torch, lantern = self.torch, self.lantern
        args = (sample.input, *sample.args)
        try:
            l_args, l_kwargs = self.t.sample_value((args, sample.kwargs))
        except Missing:
            return "n/a"  # an error input torch's own types make (a sparse tensor): not lantern's
        try:
            self.op.op(*args, **sample.kwargs)
            return "n/a"  # torch accepts it on CPU: the error is another device's
        except Exception as torch_exc:
            try:
                lantern_op(*l_args, **l_kwargs)
            except Exception as lantern_exc:
                reason = _error_reason(lantern_exc)
                return reason if reason.startswith(MISSING) else _same_error(torch_exc, lantern_exc)
            return _one_line(f"torch raised {type(torch_exc).__name__}, lantern returned")


def _differentiable_outputs(wrapper, op, sample, torch):
    """Whether torch's op gives `sample` an output that requires grad (torch refusing the sample counts as no)."""
    try:
        out = sample.output_process_fn_grad(wrapper(op, sample.input, *sample.args, **sample.kwargs))
    except Exception:
        return False
    return any(isinstance(x, torch.Tensor) and x.requires_grad for x in _flatten(out))


def _torch_gradcheck_passes(op, sample, torch):
    """Whether torch.autograd.gradcheck accepts torch's own op on `sample`: the lantern gradcheck runs only there."""
    args = (sample.input, *sample.args)
    leaves = [x for x in _flatten((args, sample.kwargs)) if isinstance(x, torch.Tensor) and x.requires_grad]

    def function(*new_leaves):
        new_args, new_kwargs = _replace((args, sample.kwargs), dict(zip(map(id, leaves), new_leaves)))
        out = sample.output_process_fn_grad(op.gradcheck_wrapper(op.op, *new_args, **new_kwargs))
        return tuple(x for x in _flatten(out) if isinstance(x, torch.Tensor) and x.requires_grad)

    try:
        return torch.autograd.gradcheck(function, tuple(leaves), nondet_tol=op.gradcheck_nondet_tol,
                                        raise_exception=False)
    except Exception:
        return False


def _replace(x, replacements):
    """`x` with the objects whose ids `replacements` maps swapped for their replacements (containers rebuilt)."""
    if id(x) in replacements:
        return replacements[id(x)]
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_replace(y, replacements) for y in x)
    if isinstance(x, dict):
        return {k: _replace(v, replacements) for k, v in x.items()}
    return x


def _flatten(x):
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    if isinstance(x, dict):
        return [y for item in x.values() for y in _flatten(item)]
    return [x]


@contextlib.contextmanager
def _quiet():
    """Warnings and prints of the ops and of torch's sample makers stay out of the sweep's output."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


# ---- running OpInfos in children ------------------------------------------------------------------------------------

def _child(conn, op, translator, tier, skip):
    """A forked child: run one OpInfo and send ("start", id) / ("done", id, reason) messages, then ("end",)."""
    import torch
    torch.set_num_threads(1)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (size + CHILD_MEMORY_BYTES, hard))
    sys.stderr = io.StringIO()  # a crashing op's noise stays out; the parent reports the crash

    def report(sample_id, reason, started=False):
        conn.send(("start", sample_id) if started else ("done", sample_id, reason))

    try:
        OpRunner(op, translator, tier, report, skip).run()
    except BaseException as exc:
        conn.send(("done", "op", _one_line(f"harness: {type(exc).__name__}: {exc} "
                                            f"{traceback.format_exc(limit=-1).splitlines()[-2:]}")))
    conn.send(("end",))
    conn.close()
    os._exit(0)


class _Running:
    def __init__(self, key, process, conn, skip):
        self.key, self.process, self.conn, self.skip = key, process, conn, skip
        self.current, self.last_message, self.restarts = None, time.monotonic(), 0


def run_ops(ops, tier="quick", jobs=None, progress=None):
    """{key: {sample id: failure reason or None}} for the OpInfos `ops` ({key: OpInfo}), each in a forked child."""
    import torch
    torch.set_num_threads(1)  # no thread pool in the parent: children forked after one could hang in it
    translator = Translator()
    context = multiprocessing.get_context("fork")
    jobs = jobs or os.cpu_count() or 1
    pending = [(key, set(), 0) for key in ops]
    results = {key: {} for key in ops}
    running = []
    while pending or running:
        while pending and len(running) < jobs:
            key, skip, restarts = pending.pop(0)
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=_child, args=(send, ops[key], translator, tier, skip), daemon=True)
            process.start()
            send.close()
            state = _Running(key, process, receive, skip)
            state.restarts = restarts
            running.append(state)
        ready = multiprocessing.connection.wait([s.conn for s in running], timeout=1.0)
        now = time.monotonic()
        for state in list(running):
            finished, reason = False, None
            if state.conn in ready:
                try:
                    message = state.conn.recv()
                except (EOFError, OSError):
                    state.process.join(5)
                    finished, reason = True, f"crash (exit code {state.process.exitcode})"
                else:
                    state.last_message = now
                    if message[0] == "start":
                        state.current = message[1]
                    elif message[0] == "done":
                        results[state.key][message[1]] = message[2]
                        state.skip.add(message[1])
                        state.current = None
                    else:
                        finished = True
            elif now - state.last_message > SAMPLE_TIMEOUT_S:
                state.process.kill()
                finished, reason = True, f"timeout (over {SAMPLE_TIMEOUT_S} s)"
            if not finished:
                continue
            running.remove(state)
            state.conn.close()
            state.process.join(5)
            if reason is not None:
                failed = state.current or "op"
                results[state.key][failed] = reason
                state.skip.add(failed)
                if failed != "op" and state.restarts < MAX_RESTARTS:
                    pending.insert(0, (state.key, state.skip, state.restarts + 1))
                    continue
            if progress:
                progress(state.key, results[state.key])
    return results


# ---- outcomes and the expectations file -----------------------------------------------------------------------------

def status(samples):
    """pass (every sample matches torch), partial (some do not) or missing (lantern lacks the function)."""
    reasons = [r for r in samples.values() if r is not None]
    if reasons and all(r.startswith(MISSING) for r in reasons) and len(reasons) == len(samples):
        return "missing"
    return "partial" if reasons else "pass"


def summarize(results):
    """The expectations file's content: per OpInfo its status, sample count and failing samples with reasons."""
    import torch
    ops = {}
    for key in sorted(results):
        samples = results[key]
        entry = {"status": status(samples), "samples": len(samples)}
        if entry["status"] == "missing":
            entry["reason"] = next(iter(samples.values()))[len(MISSING):]
        elif entry["status"] == "partial":
            entry["failing"] = {sid: r for sid, r in sorted(samples.items()) if r is not None}
        ops[key] = entry
    return {"torch": torch.__version__.split("+")[0], "tier": "full", "ops": ops}


def write_expected(summary, path=EXPECTED_PATH):
    """One OpInfo per line group, sorted, so that a change reads as a small diff."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")


def read_expected(path=EXPECTED_PATH):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def differences(results, expected, scope, complete=False):
    """Lines saying where `results` (any tier) disagree with the expectations: a sample that fails but is not a
    known failure (a regression), a known failure that passes now, an OpInfo whose presence changed, and OpInfos
    of the scope the file does not know (or that left it; `scope` None: not checked). `complete` (the full tier):
    a known failure that was not checked at all is a difference too."""
    lines = []
    known = expected["ops"]
    for key in sorted(set(known) - set(scope or known)):
        lines.append(f"{key}: in the expectations but not an in-scope OpInfo of this torch")
    for key in sorted(results):
        if key not in known:
            lines.append(f"{key}: not in the expectations (a new OpInfo)")
            continue
        entry, samples = known[key], results[key]
        now = status(samples)
        if entry["status"] == "missing" and now != "missing":
            lines.append(f"{key}: lantern has it now (was missing: {entry['reason']})")
            continue
        if now == "missing" and entry["status"] != "missing":
            lines.append(f"{key}: missing now ({next(iter(samples.values()))[len(MISSING):]})")
            continue
        if now == "missing":
            continue
        failing = entry.get("failing", {})
        either_way = ROUNDING_DEPENDS_ON_THE_MACHINE.get(key, set())
        for sid, reason in sorted(samples.items()):
            if sid.removesuffix("/nc") in either_way:
                continue
            if reason is not None and sid not in failing:
                lines.append(f"{key} {sid}: fails: {reason}")
            elif reason is None and sid in failing:
                lines.append(f"{key} {sid}: passes now (known failure: {failing[sid]})")
        if complete:
            for sid in sorted(set(failing) - set(samples)):
                lines.append(f"{key} {sid}: not checked any more (known failure: {failing[sid]})")
    return lines


def table(summary):
    """The OpInfo table's numbers: OpInfos pass / partial / missing, and samples passed / total of present ones."""
    ops = summary["ops"].values()
    counts = {s: sum(1 for e in ops if e["status"] == s) for s in ("pass", "partial", "missing")}
    present = [e for e in ops if e["status"] != "missing"]
    total = sum(e["samples"] for e in present)
    failed = sum(len(e.get("failing", {})) for e in present)
    return dict(opinfos=len(summary["ops"]), **counts, samples=total, samples_passed=total - failed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="every sample (the slow tier); default: the quick tier")
    parser.add_argument("--write", action="store_true", help="write tests/opinfo_expected.json (needs --full)")
    parser.add_argument("--ops", help="comma-separated OpInfo keys to run (default: every in-scope OpInfo)")
    parser.add_argument("--every", type=int, help="run every N-th in-scope OpInfo only (sorted by key)")
    parser.add_argument("--jobs", type=int, help="children at a time (default: the CPU count)")
    parser.add_argument("--json", help="also write the raw results ({key: {sample id: reason}}) to this file")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failing sample as it comes")
    args = parser.parse_args(argv)
    if args.write and not (args.full and not args.every):
        parser.error("--write needs --full (over every OpInfo, or over --ops to update their entries)")
    scope = in_scope_ops()
    ops = {key: scope[key] for key in args.ops.split(",")} if args.ops else scope
    if args.every:
        ops = {key: ops[key] for key in sorted(ops)[::args.every]}
    tier = "full" if args.full else "quick"
    started = time.monotonic()

    def progress(key, samples):
        if args.verbose:
            for sid, reason in sorted(samples.items()):
                if reason is not None:
                    print(f"{key} {sid}: {reason}", flush=True)

    results = run_ops(ops, tier, args.jobs, progress)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    print(f"{len(ops)} OpInfos, {sum(len(s) for s in results.values())} samples ({tier} tier) in "
          f"{time.monotonic() - started:.0f} s")
    if args.write:
        summary = summarize(results)
        if args.ops:  # update those OpInfos' entries, keep the rest
            kept = read_expected()
            kept["ops"].update(summary["ops"])
            summary = kept
        write_expected(summary)
        print(f"wrote {os.path.relpath(EXPECTED_PATH, ROOT)}: {table(summary)}")
        return 0
    if not os.path.exists(EXPECTED_PATH):
        return 0
    lines = differences(results, read_expected(), None if args.ops or args.every else scope, complete=args.full)
    for line in lines:
        print(line)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
