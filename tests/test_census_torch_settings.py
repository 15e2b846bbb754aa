"""torch-namespace settings and helpers of the census: deterministic-algorithm mode (its switches, uninitialised
memory filled, the operations it refuses), set_warn_always, inter-op threads, flush_denormal, the constants, the
symbolic-shape helpers on numbers, typename/is_storage/get_device_module, frombuffer/from_file/range: compared with
torch."""
import array
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.utils.deterministic

import lantern
import lantern.utils.deterministic
from oracle import check, raises_like

DETERMINISM_FUNCTIONS = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
                         "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
                         "get_deterministic_debug_mode"]


@pytest.fixture
def deterministic_mode_restored():
    yield
    for lib in (torch, lantern):
        lib.use_deterministic_algorithms(False)
        lib.utils.deterministic.fill_uninitialized_memory = True


def _mode(lib):
    return (lib.are_deterministic_algorithms_enabled(), lib.is_deterministic_algorithms_warn_only_enabled(),
            lib.get_deterministic_debug_mode())


def test_deterministic_switches(deterministic_mode_restored):
    def run(lib):
        seen = [_mode(lib)]
        lib.use_deterministic_algorithms(True)
        seen.append(_mode(lib))
        lib.use_deterministic_algorithms(True, warn_only=True)
        seen.append(_mode(lib))
        for level in ("error", 0, "warn", 2, "default", 1):
            lib.set_deterministic_debug_mode(level)
            seen.append(_mode(lib))
        lib.use_deterministic_algorithms(False, warn_only=True)
        seen.append(_mode(lib))
        return seen
    check(run)
    for bad in ("x", 3, 1.0):
        raises_like(lambda lib: lib.set_deterministic_debug_mode(bad))
    raises_like(lambda lib: lib.use_deterministic_algorithms(1))
    raises_like(lambda lib: lib.use_deterministic_algorithms(True, warn_only=1))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "complex64"])
def test_deterministic_mode_fills_uninitialized_memory(dtype, deterministic_mode_restored):
    def run(lib):
        lib.use_deterministic_algorithms(True)
        d = getattr(lib, dtype)
        made = [lib.empty(3, dtype=d), lib.empty_like(lib.ones(2), dtype=d), lib.ones(1).new_empty(2, dtype=d),
                lib.empty_strided((2, 2), (1, 2), dtype=d)]
        grown = lib.ones(2, dtype=d)
        grown.resize_(5)
        return [t.float() if dtype == "bfloat16" else t for t in made + [grown]], grown._version
    check(run)


def test_fill_switch(deterministic_mode_restored):
    def run(lib):
        lib.use_deterministic_algorithms(True)
        lib.utils.deterministic.fill_uninitialized_memory = False
        return lib.utils.deterministic.fill_uninitialized_memory, lib.are_deterministic_algorithms_enabled()
    check(run)
    raises_like(lambda lib: setattr(lib.utils.deterministic, "fill_uninitialized_memory", 1))


def test_deterministic_mode_refuses_put_without_accumulate(deterministic_mode_restored):
    def put(lib, accumulate):
        return lib.zeros(3).put_(lib.tensor([0, 1, 1]), lib.ones(3), accumulate=accumulate)

    def run(lib, accumulate, warn_only):
        lib.use_deterministic_algorithms(True, warn_only=warn_only)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = put(lib, accumulate)
        return result, len(caught)
    check(lambda lib: run(lib, True, False))
    check(lambda lib: run(lib, False, True))
    raises_like(lambda lib: run(lib, False, False))
    raises_like(lambda lib: (lib.use_deterministic_algorithms(True), lib.put(lib.zeros(2), lib.tensor([0]),
                                                                             lib.ones(1))))


def _in_fresh_interpreters(script):
    """The output of `script` run by a new Python process with `lib` bound to torch, then to lantern (for what
    depends on process-wide state: warnings already given, settings made once)."""
    return [subprocess.run([sys.executable, "-c", f"import {lib} as lib\n" + script], capture_output=True,
                           text=True).stdout for lib in ("torch", "lantern")]


# What depends on process-wide state (warnings already given, settings made once), checked in one fresh interpreter
# per library: set_warn_always repeats torch's once-per-process warnings, the inter-op thread count is set once,
# TypedStorage warns once.
PROCESS_WIDE_SCRIPT = """import warnings
x = lib.ones(64)
for always in (True, False, False):
    lib.set_warn_always(always)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            lib.stft(x, 16, return_complex=True)
    print("warn_always", lib.is_warn_always_enabled(), len(caught))
lib.set_num_interop_threads(3)
print("interop", lib.get_num_interop_threads())
try:
    lib.set_num_interop_threads(4)
except RuntimeError as e:
    print("interop again", type(e).__name__)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    lib.ones(2).storage(); lib.ones(2).storage(); lib.FloatStorage(2)
print("storage warnings", sum("TypedStorage is deprecated" in str(w.message) for w in caught))
"""


def test_process_wide_state_in_fresh_interpreters():
    expected, got = _in_fresh_interpreters(PROCESS_WIDE_SCRIPT)
    assert got == expected == ("warn_always True 2\nwarn_always False 1\nwarn_always False 0\ninterop 3\n"
                               "interop again RuntimeError\nstorage warnings 1\n")
    raises_like(lambda lib: lib.set_warn_always(1))


def test_thread_and_denormal_settings():
    check(lambda lib: (lib.set_flush_denormal(False), lib.init_num_threads(), type(lib.get_num_interop_threads())))
    raises_like(lambda lib: lib.set_flush_denormal(1))
    for bad in (0, -2, "a"):
        raises_like(lambda lib: lib.set_num_interop_threads(bad))
    assert lantern.set_flush_denormal(True) is False  # NumPy cannot flush denormals (torch: True on x86 with SSE3)


def test_constants():
    for name in ("e", "pi", "inf", "nan", "newaxis"):
        expected, got = getattr(torch, name), getattr(lantern, name)
        assert type(got) is type(expected) and (got == expected or (math.isnan(got) and math.isnan(expected)))
    assert lantern.has_lapack and lantern.has_spectral and lantern.has_openmp is False
    check(lambda lib: lib.ones(2, 3)[:, lib.newaxis].shape)


SYM_CASES = [
    ("sym_int", (3.7,)), ("sym_int", (-3.7,)), ("sym_int", (5,)), ("sym_float", (3,)), ("sym_max", (2, 3.0)),
    ("sym_max", (3, 2)), ("sym_max", (np.int64(3), 2.0)), ("sym_min", (2, 3)), ("sym_min", (2.5, 3)),
    ("sym_max", (True, 2)), ("sym_not", (0,)), ("sym_not", (True,)), ("sym_sqrt", (4,)), ("sym_sum", ([1, 2, 3],)),
    ("sym_sum", (1, 2.5)), ("sym_ite", (True, 1, 2)), ("sym_ite", (False, "a", "b")), ("sym_fresh_size", (3.5,)),
    ("sym_constrain_range", (3,)), ("sym_constrain_range_for_size", (1,)),
]
SYM_ERRORS = [
    ("sym_max", ("a", 2), {}), ("sym_min", (2, None), {}), ("sym_ite", (1, 2, 3), {}), ("sym_ite", (True, 2, 3.0), {}),
    ("sym_sqrt", (-1,), {}), ("sym_constrain_range", (7,), {"min": 0, "max": 5}),
    ("sym_constrain_range", (5,), {"max": 3}), ("sym_constrain_range", (5,), {"min": 6}),
    ("sym_constrain_range_for_size", (-1,), {}), ("sym_constrain_range_for_size", (5,), {"min": 0, "max": 3}),
]


def test_every_sym_function_is_covered():
    torch_names = {n for n in dir(torch) if n.startswith("sym_") and callable(getattr(torch, n))}
    assert torch_names == {name for name, _ in SYM_CASES} | {name for name, _, _ in SYM_ERRORS}


@pytest.mark.parametrize("name,args", SYM_CASES, ids=[f"{n}{a}" for n, a in SYM_CASES])
def test_sym_functions_on_numbers(name, args):
    expected, got = getattr(torch, name)(*args), getattr(lantern, name)(*args)
    assert type(got) is type(expected) and got == expected


@pytest.mark.parametrize("name,args,kwargs", SYM_ERRORS, ids=[f"{n}{a}{k}" for n, a, k in SYM_ERRORS])
def test_sym_function_errors(name, args, kwargs):
    raises_like(lambda lib: getattr(lib, name)(*args, **kwargs))


def test_sym_constrain_range_of_a_tensor():
    raises_like(lambda lib: lib.sym_constrain_range(lib.tensor(5), min=0, max=3))


def test_typename_is_storage_get_device_module():
    check(lambda lib: (lib.typename(lib.ones(2)), lib.typename(lib.ones(2, dtype=lib.int64)), lib.typename(3),
                       lib.typename(None), lib.is_storage(lib.ones(2).untyped_storage()), lib.is_storage(lib.ones(2)),
                       lib.is_storage([1])))
    assert lantern.typename(lantern.nn.Linear(1, 1)) == "lantern.nn.modules.linear.Linear"
    assert torch.typename(torch.nn.Linear(1, 1)) == "torch.nn.modules.linear.Linear"
    assert lantern.get_device_module() is lantern.cpu and lantern.get_device_module("cuda:1") is lantern.cuda
    assert lantern.get_device_module(lantern.device("cpu")) is lantern.cpu
    raises_like(lambda lib: lib.get_device_module("meta"))
    raises_like(lambda lib: lib.get_device_module("foo"))
    raises_like(lambda lib: lib.get_device_module(3))
    assert lantern.thread_safe_generator() is None and torch.thread_safe_generator() is None


def test_frombuffer_shares_the_buffer():
    def run(lib):
        data = bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00")
        t = lib.frombuffer(data, dtype=lib.int32)
        t[0] = 5
        return (t, bytes(data), lib.frombuffer(data, dtype=lib.int16, count=2, offset=2),
                lib.frombuffer(data, dtype=lib.float32, count=-2).shape,
                lib.frombuffer(array.array("f", [1, 2]), dtype=lib.float32, requires_grad=True))
    check(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib: lib.frombuffer(b"\x01\x02", dtype=lib.uint8))


@pytest.mark.parametrize("kwargs", [dict(count=3), dict(offset=9), dict(count=0), dict(offset=-1)])
def test_frombuffer_errors(kwargs):
    raises_like(lambda lib: lib.frombuffer(bytearray(8), dtype=lib.int32, **kwargs))


def test_frombuffer_more_errors():
    raises_like(lambda lib: lib.frombuffer(bytearray(8), dtype=lib.int64, offset=1))
    raises_like(lambda lib: lib.frombuffer(bytearray(), dtype=lib.int32))
    raises_like(lambda lib: lib.frombuffer([1, 2], dtype=lib.int32))
    raises_like(lambda lib: lib.frombuffer(bytearray(8)))


def test_from_file(tmp_path):
    def run(lib):
        path = tmp_path / f"{lib.__name__}.bin"
        np.arange(4, dtype=np.float32).tofile(path)
        read = [lib.from_file(str(path), size=4), lib.from_file(str(path), size=2, dtype=lib.float64),
                lib.from_file(str(path), size=2, requires_grad=True), lib.from_file(str(path)).shape]
        mapped = lib.from_file(str(path), shared=True, size=4)
        mapped[0] = 9
        private = lib.from_file(str(path), shared=False, size=4)
        private[1] = 7
        del mapped, private
        grown = lib.from_file(str(path), shared=True, size=6)
        return read, np.fromfile(path, np.float32).tolist(), grown, path.stat().st_size
    check(run)
    raises_like(lambda lib: lib.from_file(str(tmp_path / "missing.bin"), size=2))
    raises_like(lambda lib: lib.from_file(tmp_path / "short.bin", size=2))
    np.zeros(2, np.float32).tofile(tmp_path / "short.bin")
    raises_like(lambda lib: lib.from_file(str(tmp_path / "short.bin"), size=8))


def test_range():
    def run(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values = [lib.range(1, 4), lib.range(0, 1, 0.25), lib.range(1, 4, dtype=lib.int64), lib.range(0, 1, 0.3),
                      lib.range(1, 1), lib.range(0.5, 2.6), lib.range(5, 1, -2), lib.range(start=1, end=2),
                      lib.range(0, 1, 0.5, requires_grad=True)]
            out = lib.empty(0, dtype=lib.int64)
            returned = lib.range(0, 3, out=out)
        return values, returned is out, out, out._version, len(caught)
    check(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in ((0, 1, 0), (3, 1, 1), (1, 3, -1), (5,)):
            raises_like(lambda lib: lib.range(*args))


def test_cpu_streams_and_events():
    def describe(s):
        return s.device, s.device_type, s.device_index, s.stream_id, s.query(), s.synchronize(), s.is_capturing()

    def run(lib):
        s, e = lib.Stream(), lib.Event()
        with lib.Stream("cpu") as entered:
            inside = describe(entered)
        return (describe(s), describe(lib.Stream("meta")), inside, s == lib.Stream(), hash(s) == hash(lib.Stream()),
                s == 3, e.device, e.query(), e.event_id, e.synchronize(), e.wait(), s.wait_event(e),
                lib.Event(device="meta").device)
    check(run)
    raises_like(lambda lib: lib.Event().record())
    raises_like(lambda lib: lib.Stream().record_event())
    raises_like(lambda lib: lib.Stream().wait_stream(lib.Stream()))
    raises_like(lambda lib: lib.Event(enable_timing=True).elapsed_time(lib.Event()))
    raises_like(lambda lib: lib.Event(enable_timing=True).elapsed_time(lib.Event(enable_timing=True)))
    raises_like(lambda lib: lib.Stream(3))


def test_dispatch_key_is_lanterns():
    from lantern.core.dispatch_keys import DispatchKey
    assert lantern.DispatchKey is DispatchKey
    for name in ("CPU", "CUDA", "Meta", "SparseCPU", "SparseCsrCPU", "QuantizedCPU", "Autograd"):
        assert getattr(lantern.DispatchKey, name).name == getattr(torch.DispatchKey, name).name == name
