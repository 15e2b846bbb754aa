"""lantern's accelerator surface against PyTorch 2.13's CPU build (the torch in .venv), name by name.

The names come from torch's own namespaces: torch.cuda, torch.xpu, torch.mps, torch.accelerator and the
torch.backends modules (`__all__` where a module has one, else its public attributes), Tensor's device attributes,
and every device type torch.device knows. Each public name must resolve in lantern; every function that can be
called with no arguments, or with arguments built from its parameter names (seed=0, device=0, stream=None, ...),
must return the same value or raise the same exception class as torch's CPU build; classes likewise when built.
Names lantern does not have yet are in EXCLUDED, each with its reason.
"""
import enum
import importlib
import inspect
import pkgutil
import types
import warnings

import numpy as np
import pytest
import torch

import lantern

# Accelerator namespaces: (torch's module, lantern's module path).
NAMESPACES = {
    "cuda": "lantern.cuda", "xpu": "lantern.xpu", "mps": "lantern.mps", "accelerator": "lantern.accelerator",
    "cuda.graphs": "lantern.cuda.graphs", "cuda.amp": "lantern.cuda.amp", "cuda.memory": "lantern.cuda.memory",
    "cuda.random": "lantern.cuda.random",
    "cuda.nvtx": "lantern.cuda.nvtx", "cuda.profiler": "lantern.cuda.profiler",
}
# The torch.backends modules a CPU build's programs touch (the others are listed in EXCLUDED as whole modules).
BACKENDS = ["cpu", "cuda", "cudnn", "mha", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]

# name -> why lantern does not have it yet. Keys are 'namespace.name' ('backends.cudnn.rnn').
EXCLUDED = {
    "cuda.jiterator": "runtime-compiled CUDA kernels: nothing to compile without CUDA",
    "cuda.nccl": "NCCL collectives arrive with torch.distributed's CUDA support",
    "cuda.sparse": "sparse tensor types arrive with sparse tensors (extension-points issue)",
    "cuda.tunable": "TunableOp (GEMM kernel tuning) is a CUDA/ROCm feature with no CPU meaning",
    "cuda.ExternalStream": "torch's CPU build fails comparing its device None with 0 (TypeError); lantern raises "
                           "'torch.cuda.ExternalStream requires CUDA support' (RuntimeError)",
    "backends.cuda.cuFFTPlanCacheManager": "a second manager cannot be built in torch's CPU build (AssertionError); "
                                           "lantern's one instance, cufft_plan_cache, raises that on use",
    # Calling torch's set_flags/flags switches its float32 precision API to the new one for the rest of the process
    # (after which torch.set_float32_matmul_precision raises): these are compared by test_flag_modules_round_trip.
    "backends.cudnn.set_flags": "compared in test_flag_modules_round_trip",
    "backends.cudnn.flags": "compared in test_flag_modules_round_trip",
    "backends.mkldnn.set_flags": "compared in test_flag_modules_round_trip",
    "backends.mkldnn.flags": "compared in test_flag_modules_round_trip",
    "cuda.GreenContext": "GreenContext partitions a GPU's SMs; construction succeeds in torch only by accident of "
                         "a dummy base",
    "cuda.BFloat16Storage": "typed storages (torch.cuda.FloatStorage & co.) are not implemented",
    "cuda.BoolStorage": "typed storages are not implemented", "cuda.ByteStorage": "typed storages are not implemented",
    "cuda.CharStorage": "typed storages are not implemented",
    "cuda.ComplexDoubleStorage": "typed storages are not implemented",
    "cuda.ComplexFloatStorage": "typed storages are not implemented",
    "cuda.DoubleStorage": "typed storages are not implemented",
    "cuda.FloatStorage": "typed storages are not implemented",
    "cuda.HalfStorage": "typed storages are not implemented", "cuda.IntStorage": "typed storages are not implemented",
    "cuda.LongStorage": "typed storages are not implemented", "cuda.ShortStorage": "typed storages are not implemented",
    "xpu.streams": "module path only: lantern.xpu is one module; its Stream/Event are checked through torch.xpu",
    "mps.profiler": "Metal capture/profiling: nothing to capture without MPS",
    "mps.event": "module path only: lantern.mps.Event is checked through torch.mps",
    "backends.cudnn.rnn": "cuDNN RNN descriptors: internal to torch's cuDNN RNN path",
    "backends.cudnn.ContextProp": "torch's internal PropModule machinery, not a user API",
    "backends.cudnn.CudnnModule": "torch's internal PropModule machinery, not a user API",
    "backends.cudnn.PropModule": "torch's internal PropModule machinery, not a user API",
    "backends.cudnn.conv": "per-op fp32_precision views (torch.backends.cudnn.conv.fp32_precision) not kept yet",
    "backends.mkldnn.ContextProp": "torch's internal PropModule machinery, not a user API",
    "backends.mkldnn.MkldnnModule": "torch's internal PropModule machinery, not a user API",
    "backends.mkldnn.PropModule": "torch's internal PropModule machinery, not a user API",
    "backends.mkldnn.matmul": "per-op fp32_precision views not kept yet",
    "backends.mkldnn.conv": "per-op fp32_precision views not kept yet",
    "backends.mkldnn.rnn": "per-op fp32_precision views not kept yet",
    "backends.opt_einsum.ContextProp": "torch's internal PropModule machinery, not a user API",
    "backends.opt_einsum.OptEinsumModule": "torch's internal PropModule machinery, not a user API",
    "backends.opt_einsum.PropModule": "torch's internal PropModule machinery, not a user API",
    "backends.cusparselt": "cuSPARSELt (2:4 sparse matmul) is CUDA-only; module not provided",
    "backends.kleidiai": "Arm KleidiAI kernels; module not provided",
    "backends.miopen": "ROCm's MIOpen switches; module not provided",
    "backends.nnpack": "NNPACK switches; module not provided",
    "backends.python_native": "torch's Python-native DSL operator switches; module not provided",
    "backends.quantized": "quantized engines arrive with quantization",
    "backends.xeon": "a launcher script package, no API",
    "backends.xnnpack": "XNNPACK switches; module not provided",
    # Device types whose CPU-build error is an import accident (torch looks for a torch.hpu module).
    "device.hpu": "torch's CPU build raises ModuleNotFoundError (no torch.hpu); lantern raises RuntimeError",
    "device.privateuseone": "torch's CPU build raises ModuleNotFoundError; lantern raises RuntimeError",
}


def _real_module(module):
    """torch replaces some backends modules by a PropModule whose module is `.m`: list the module's names."""
    return getattr(module, "m", module) if isinstance(getattr(module, "m", None), types.ModuleType) else module


def public_names(module):
    """torch's public names of a module: __all__, or else its attributes minus imports of other packages."""
    real = _real_module(module)
    names = list(getattr(real, "__all__", [])) or [n for n in dir(real) if not n.startswith("_")]
    if real is not module:  # a PropModule's properties (cudnn.benchmark, ...) live on its type
        names += [n for n in vars(type(module)) if not n.startswith("_")]
    out = []
    for name in names:
        value = getattr(real, name, getattr(module, name, None))
        foreign_module = isinstance(value, types.ModuleType) and not value.__name__.startswith("torch")
        if name in ("torch", "m", "TYPE_CHECKING") or foreign_module:
            continue
        origin = getattr(value, "__module__", None)
        if (callable(value) or inspect.isclass(value)) and not isinstance(value, types.ModuleType) \
                and not (origin or "").startswith("torch"):
            continue  # typing.Any, functools.lru_cache, ... imported for torch's own use
        out.append(name)
    return sorted(set(out))


def _namespaces():
    """[(key, torch module, lantern module path)] for every namespace compared here."""
    out = [(key, importlib.import_module(f"torch.{key}"), path) for key, path in NAMESPACES.items()]
    out += [(f"backends.{name}", importlib.import_module(f"torch.backends.{name}"), f"lantern.backends.{name}")
            for name in BACKENDS]
    return out


def _all_names():
    cases = [("backends", name) for name in sorted(p.name for p in pkgutil.iter_modules(torch.backends.__path__)
                                                     if not p.name.startswith("_"))]
    for key, module, _ in _namespaces():
        cases += [(key, name) for name in public_names(module)]
    return cases


ALL_NAMES = _all_names()
LANTERN_PATHS = {key: path for key, _, path in _namespaces()} | {"backends": "lantern.backends"}
TORCH_MODULES = {key: module for key, module, _ in _namespaces()} | {"backends": torch.backends}


def _lantern_module(key):
    return importlib.import_module(LANTERN_PATHS[key])


@pytest.mark.parametrize("key,name", ALL_NAMES, ids=[f"{k}.{n}" for k, n in ALL_NAMES])
def test_every_public_name_resolves(key, name):
    if f"{key}.{name}" in EXCLUDED:
        pytest.skip(EXCLUDED[f"{key}.{name}"])
    assert hasattr(_lantern_module(key), name), f"lantern lacks torch.{key}.{name}"


# ---- calling: arguments built from torch's parameter names ---------------------------------------------------------

def _sample(lib, parameter):
    """A value for a parameter, by its name, in `lib`'s terms; None when the name is not one we can fill."""
    samples = {
        "seed": lambda: 0, "device": lambda: 0, "stream": lambda: None, "enabled": lambda: True,
        "new_state": lambda: lib.zeros(8, dtype=lib.uint8), "new_states": lambda: [], "fraction": lambda: 0.5,
        "obj": lambda: lib.ones(2), "major": lambda: 13, "minor": lambda: 0, "debug_mode": lambda: 0,
        "peer_device": lambda: 1, "peer": lambda: 1, "size": lambda: 8, "mem_ptr": lambda: 0, "res": lambda: 0,
        "backend": lambda: None, "enable": lambda: 0, "level": lambda: 0, "value": lambda: True,
        "params": lambda: None, "source": lambda: "", "data_ptr": lambda: 0, "stream_ptr": lambda: 0,
        "code": lambda: 2, "cuda_graph": lambda: None, "xpu_graph": lambda: None, "allocator": lambda: None,
        "pool": lambda: None, "callables": lambda: None, "sample_args": lambda: (),
    }
    make = samples.get(parameter.name)
    return None if make is None else make()


def _arguments(lib, fn):
    """Positional arguments for fn's required parameters, or None if one cannot be filled."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    args = []
    for p in parameters:
        if p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name not in _SAMPLED:
            return None
        args.append(_sample(lib, p))
    return tuple(args)


_SAMPLED = {"seed", "device", "stream", "enabled", "new_state", "new_states", "fraction", "obj", "major", "minor",
            "debug_mode", "peer_device", "peer", "size", "mem_ptr", "res", "backend", "enable", "level", "value",
            "params", "source", "data_ptr", "stream_ptr", "code", "cuda_graph", "xpu_graph", "allocator", "pool",
            "callables", "sample_args"}


def _plain(value):
    """A value reduced to what the comparison looks at (enums by name and value, mappings as dicts)."""
    if isinstance(value, enum.Enum) or type(value).__name__.startswith("_") and hasattr(value, "name"):
        return ("enum", value.name, int(value.value))
    if isinstance(value, dict):
        return ("dict", dict(value))
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(str(v).split(".")[-1] for v in value))
    if isinstance(value, (bool, int, float, str, type(None), tuple, list)):
        return ("value", value)
    return ("object", None)


def outcome(call):
    """('value', ...) or ('raises', exception class) of a call; a returned context is entered and exited, and
    that is the outcome."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = call()
            if hasattr(result, "__enter__") and hasattr(result, "__exit__") and not inspect.isclass(result):
                entered = result.__enter__()
                result.__exit__(None, None, None)
                return ("context",) + _plain(entered)
            return _plain(result)
        except Exception as e:  # the class is what is compared
            return ("raises", type(e).__name__)


@pytest.fixture
def restore_switches():
    """Calls below may flip global switches (enable_flash_sdp, ...): put both libraries' defaults back."""
    yield
    for lib in (torch, lantern):
        for name in ("flash", "mem_efficient", "math", "cudnn"):
            getattr(lib.backends.cuda, f"enable_{name}_sdp")(True)
        lib.backends.cuda.allow_fp16_bf16_reduction_math_sdp(False)
        lib.backends.mha.set_fastpath_enabled(True)
        lib.set_float32_matmul_precision("highest")


CALLABLE_NAMES = [(k, n) for k, n in ALL_NAMES if k != "backends" and f"{k}.{n}" not in EXCLUDED]


@pytest.mark.parametrize("key,name", CALLABLE_NAMES, ids=[f"{k}.{n}" for k, n in CALLABLE_NAMES])
def test_calls_behave_as_the_cpu_build(key, name, restore_switches):
    real = _real_module(TORCH_MODULES[key])
    theirs = getattr(real, name, None)
    if theirs is None:
        theirs = getattr(TORCH_MODULES[key], name)
    mine = getattr(_lantern_module(key), name)
    if isinstance(theirs, types.ModuleType):
        assert isinstance(mine, types.ModuleType)
        return
    if not callable(theirs):
        assert _plain(mine) == _plain(theirs), (theirs, mine)
        return
    torch_args = _arguments(torch, theirs)
    if torch_args is None:
        pytest.skip(f"torch.{key}.{name}'s parameters are not ones this test can fill")
    lantern_args = _arguments(lantern, theirs)
    expected = outcome(lambda: theirs(*torch_args))
    assert outcome(lambda: mine(*lantern_args)) == expected, f"torch.{key}.{name}{torch_args}: torch {expected}"


def test_some_calls_were_made():
    """The parametrized test above must not skip its way to green: most names are callable with what it fills."""
    filled = [n for k, n in CALLABLE_NAMES
              if callable(getattr(TORCH_MODULES[k], n, None)) and _arguments(torch, getattr(TORCH_MODULES[k], n))
              is not None]
    assert len(filled) > 0.8 * len(CALLABLE_NAMES), len(filled)


# ---- Tensor's device attributes and devices a CPU build does not have ---------------------------------------------

def _device_types():
    """Every device type torch.device knows, read from its own error message."""
    with pytest.raises(RuntimeError) as info:
        torch.device("no_such_device")
    listed = str(info.value).split("Expected one of ")[1].split(" device type")[0]
    return [t.strip() for t in listed.split(",")]


DEVICE_TYPES = _device_types()
ABSENT_TYPES = [t for t in DEVICE_TYPES if t not in ("cpu", "meta") and f"device.{t}" not in EXCLUDED]


def test_device_types_are_torchs():
    assert list(lantern.core.device.KNOWN_TYPES) == DEVICE_TYPES
    for t in DEVICE_TYPES:
        expected = repr(torch.device(t, 1)).replace("torch.", "")
        if t == "privateuseone":  # after a rename (tests/device_generic.py registers openreg) torch's is renamed too
            expected = expected.replace(t, lantern.utils.backend_registration._get_privateuse1_backend_name())
        assert repr(lantern.device(t, 1)) == expected


@pytest.mark.parametrize("device_type", ABSENT_TYPES)
def test_moving_a_tensor_to_an_absent_device_raises_as_the_cpu_build(device_type):
    expected = outcome(lambda: torch.ones(2).to(device_type))
    assert outcome(lambda: lantern.ones(2).to(device_type)) == expected


@pytest.mark.parametrize("device_type", ABSENT_TYPES)
def test_factories_on_an_absent_device_raise_as_the_cpu_build(device_type):
    """The same class, or the class torch's derives from: for devices it names but lacks kernels for, torch's
    dispatcher raises NotImplementedError (a RuntimeError) and lantern the RuntimeError its .to() raises."""
    with pytest.raises(Exception) as theirs:
        torch.zeros(2, device=device_type)
    with pytest.raises(Exception) as mine:
        lantern.zeros(2, device=device_type)
    assert isinstance(theirs.value, type(mine.value)), (theirs.value, mine.value)


TENSOR_DEVICE_ATTRIBUTES = sorted({f"is_{t}" for t in DEVICE_TYPES if hasattr(torch.Tensor, f"is_{t}")}
                                  | {t for t in DEVICE_TYPES if callable(getattr(torch.Tensor, t, None))}
                                  | {"pin_memory", "is_pinned", "share_memory_", "is_shared", "record_stream",
                                     "get_device", "is_sparse_csr"})


@pytest.mark.parametrize("name", TENSOR_DEVICE_ATTRIBUTES)
def test_tensor_device_attributes(name):
    def use(lib):
        value = getattr(lib.ones(2), name)
        if not callable(value):
            return value
        return value(None) if name == "record_stream" else value()
    expected = outcome(lambda: use(torch))
    got = outcome(lambda: use(lantern))
    if expected[0] == "object":  # share_memory_ returns the tensor itself
        assert got[0] == "object"
    else:
        assert got == expected


def test_share_memory_survives_a_fork():
    import os
    t = lantern.zeros(3)
    view = t[1:]
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared() and view.is_shared()
    pid = os.fork()
    if pid == 0:  # the child writes through the view; the parent must see it
        view.add_(5)
        os._exit(0)
    os.waitpid(pid, 0)
    assert t.tolist() == [0.0, 5.0, 5.0]


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
@pytest.mark.parametrize("lib", [torch, lantern], ids=["torch", "lantern"])
def test_shared_memory_reaches_a_started_process(lib, method):
    """A shared tensor sent to a process that multiprocessing starts afresh stays one memory (its file descriptor
    travels, not its bytes)."""
    import multiprocessing
    import operator
    t = lib.zeros(3)
    t.share_memory_()
    process = multiprocessing.get_context(method).Process(target=operator.methodcaller("add_", 5), args=(t[1:],))
    process.start()
    process.join()
    assert process.exitcode == 0 and t.tolist() == [0.0, 5.0, 5.0]


# ---- devices, the default device, precision and flags ----------------------------------------------------------

@pytest.mark.parametrize("spec", ["cuda", "cuda:1", "mps", "xpu:0", ("cuda", 0), "meta", "cpu:0"])
def test_device_objects(spec):
    args = spec if isinstance(spec, tuple) else (spec,)
    assert repr(lantern.device(*args)) == repr(torch.device(*args))


@pytest.mark.parametrize("bad", ["CUDA", "cuda:-1", "cuda:01", "cuda:x", 0, 1.5])
def test_bad_device_specs_raise_as_torch(bad):
    assert outcome(lambda: lantern.device(bad)) == outcome(lambda: torch.device(bad))


@pytest.mark.parametrize("how", ["cuda()", "to('cuda')", "to('cuda:1')", "factory", "tensor()", "xpu()"])
def test_cuda_requests_raise_torchs_error(how):
    calls = {"cuda()": lambda m: m.ones(2).cuda(), "to('cuda')": lambda m: m.ones(2).to("cuda"),
             "to('cuda:1')": lambda m: m.ones(2).to("cuda:1"), "factory": lambda m: m.zeros(2, device="cuda"),
             "tensor()": lambda m: m.tensor([1.0], device="cuda"), "xpu()": lambda m: m.ones(2).xpu()}
    with pytest.raises(AssertionError, match="Torch not compiled with (CUDA|XPU) enabled") as theirs:
        calls[how](torch)
    with pytest.raises(AssertionError, match="Torch not compiled with (CUDA|XPU) enabled") as mine:
        calls[how](lantern)
    assert str(mine.value).startswith(str(theirs.value))


@pytest.fixture
def default_device_restored():
    yield
    torch.set_default_device(None)
    lantern.set_default_device(None)


@pytest.mark.parametrize("factory", ["zeros(2)", "ones(2, 3)", "empty(4)", "arange(3)", "full((2,), 1.0)",
                                     "randn(2)", "tensor([1.0])", "eye(2)", "linspace(0, 1, 3)"])
def test_default_device_meta_is_honoured_by_factories(factory, default_device_restored):
    for lib in (torch, lantern):
        lib.set_default_device("meta")
        assert lib.get_default_device().type == "meta"
        made = eval(f"lib.{factory}")
        assert made.device.type == "meta", (lib.__name__, factory)
        lib.set_default_device(None)
        assert eval(f"lib.{factory}").device.type == "cpu"


def test_device_as_context_sets_the_default(default_device_restored):
    for lib in (torch, lantern):
        with lib.device("meta"):
            assert lib.zeros(1).device.type == "meta"
            with lib.device("cpu"):
                assert lib.zeros(1).device.type == "cpu"
            assert lib.zeros(1).device.type == "meta"
        assert lib.zeros(1).device.type == "cpu"
        assert lib.from_numpy(np.ones(1)).device.type == "cpu"


def test_default_device_cuda_fails_where_torch_does(default_device_restored):
    for device in ("cuda", "cuda:1", "cpu:0"):
        torch.set_default_device(device)
        lantern.set_default_device(device)
        assert outcome(lambda: str(lantern.get_default_device())) == outcome(lambda: str(torch.get_default_device()))
        assert outcome(lambda: lantern.zeros(1).device.type) == outcome(lambda: torch.zeros(1).device.type)


@pytest.mark.parametrize("precision", ["high", "medium", "highest", "bogus"])
def test_float32_matmul_precision_and_allow_tf32(precision, restore_switches):
    for lib in (torch, lantern):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.set_float32_matmul_precision(precision)
    def state(lib):
        matmul = lib.backends.cuda.matmul
        return lib.get_float32_matmul_precision(), matmul.allow_tf32, matmul.fp32_precision
    assert state(lantern) == state(torch)
    torch.set_float32_matmul_precision("highest")  # torch refuses allow_tf32 = False straight after 'high' (it
    lantern.set_float32_matmul_precision("highest")  # calls that mixing its legacy and new APIs): go back first
    for flag in (True, False):
        torch.backends.cuda.matmul.allow_tf32 = lantern.backends.cuda.matmul.allow_tf32 = flag
        assert state(lantern) == state(torch)


@pytest.mark.parametrize("name", ["allow_tf32", "allow_fp16_reduced_precision_reduction",
                                  "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation",
                                  "fp32_precision", "no_such_switch"])
def test_matmul_switches_read_as_torch(name):
    assert outcome(lambda: getattr(lantern.backends.cuda.matmul, name)) == \
        outcome(lambda: getattr(torch.backends.cuda.matmul, name))


@pytest.mark.parametrize("module", ["cudnn", "mkldnn"])
def test_flag_modules_round_trip(module):
    """set_flags() returns the flags in set_flags' parameter order (compared with torch's attributes, read only:
    calling torch's set_flags would change its precision API for the whole process); flags() restores them."""
    theirs, mine = getattr(torch.backends, module), getattr(lantern.backends, module)
    order = [p.lstrip("_") for p in inspect.signature(theirs.set_flags).parameters]
    assert mine.set_flags() == tuple(getattr(theirs, name) for name in order)
    before = mine.deterministic
    with mine.flags(enabled=True, deterministic=True):
        assert mine.deterministic is True
    assert mine.deterministic == before
    mine.deterministic = True  # (torch's own may be frozen by torch.testing's disable_global_flags: not set here)
    try:
        assert mine.deterministic is True and mine.set_flags()[order.index("deterministic")] is True
    finally:
        mine.deterministic = False


def test_sdp_kernel_context_restores_the_switches():
    for lib in (torch, lantern):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.backends.cuda.sdp_kernel(enable_flash=False, enable_math=True):
                assert not lib.backends.cuda.flash_sdp_enabled() and lib.backends.cuda.math_sdp_enabled()
        assert lib.backends.cuda.flash_sdp_enabled()


def test_the_usual_program_preamble_runs():
    """What real programs do first (nanoGPT, makemore, pytorch/examples): lantern takes it all and answers the
    questions as torch's CPU build does. (torch's own global flags are not set here: torch.testing's
    disable_global_flags, imported by other tests, freezes them for the process.)"""
    lantern.manual_seed(1337)
    lantern.cuda.manual_seed(1337)
    lantern.cuda.manual_seed_all(1337)
    lantern.backends.cuda.matmul.allow_tf32 = True
    lantern.backends.cudnn.allow_tf32 = True
    lantern.backends.cudnn.benchmark = False

    def answers(lib):
        device = "cuda" if lib.cuda.is_available() else "cpu"
        bf16 = lib.cuda.is_available() and lib.cuda.is_bf16_supported()
        return device, lib.accelerator.is_available(), lib.backends.mps.is_available(), bf16
    assert answers(lantern) == answers(torch)
    lantern.backends.cuda.matmul.allow_tf32 = False
    lantern.set_float32_matmul_precision("highest")
