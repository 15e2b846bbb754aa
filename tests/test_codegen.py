"""The code lantern generates from its op registry is committed source (lantern/_generated, written by
`make codegen`) that runs: current, taken from those files at start-up, and never stale. What is still generated
at run time (ops registered later, composite wrappers) shows its lines in tracebacks and carries `.source`."""
import inspect
import linecache
import os
import subprocess
import sys
import traceback

import pytest

import lantern
from lantern.ops import binding, dispatcher, generated, registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _generated_code_runs():
    """The generated entries and runners are fast paths: they run outside reference mode (the reference tier
    runs these tests too)."""
    with lantern.reference_mode(False):
        yield


def test_generated_files_are_what_make_codegen_writes():
    # in a fresh process: tests elsewhere register ops of their own, which belong in no generated file
    run = subprocess.run([sys.executable, "-m", "lantern._codegen", "--check"], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert run.returncode == 0, (
        "lantern/_generated/ differs from what the op registry generates now:\n" + run.stdout + run.stderr +
        "Run `make codegen` (python -m lantern._codegen) and commit lantern/_generated/; never edit those files "
        "by hand.")


def test_make_codegen_runs_the_generator():
    run = subprocess.run(["make", "-n", "codegen"], cwd=ROOT, capture_output=True, text=True)
    assert "-m lantern._codegen" in run.stdout


def _file_of(fn):
    return os.path.relpath(fn.__code__.co_filename, ROOT)


def test_every_op_runs_code_from_the_generated_files():
    stale = "{} runs code compiled in memory, not lantern/_generated/{}: run `make codegen` and commit the files"
    for op in binding.functional_ops():
        made = binding.make_binding(op, out_op=op.out)
        assert _file_of(made) == "lantern/_generated/functions.py", stale.format(op.name, "functions.py")
    for op in binding.method_ops():
        made = binding.make_binding(op, method=True)
        assert _file_of(made) == "lantern/_generated/methods.py", stale.format(op.name, "methods.py")
    for op in registry.REGISTRY.values():
        if op.name.startswith("_test"):  # ops other tests register at run time
            continue
        assert _file_of(dispatcher.entry(op)) == "lantern/_generated/dispatch.py", stale.format(op.name, "dispatch.py")
        if op.kind == "structured" and not op.list_positions:
            runner = op.kernels[lantern.backends.cpu.cpu.key]
            assert _file_of(runner) == "lantern/_generated/runners.py", stale.format(op.name, "runners.py")
        d = op.derivative
        if d is not None and d.formulas and not d.nondifferentiable:
            assert _file_of(d.backward) == "lantern/_generated/backward.py", stale.format(op.name, "backward.py")


def test_lantern_mul_is_defined_in_a_file():
    path = inspect.getsourcefile(lantern.mul)
    assert path.endswith(os.path.join("lantern", "_generated", "functions.py"))
    source, line = inspect.getsourcelines(lantern.mul)
    assert source[0] == "    def mul(input, other, *, out=None):\n"
    assert lantern.mul.source == binding.binding_source("mul")
    with open(path) as f:
        assert "    def mul(input, other, *, out=None):\n" in f.read()


def test_a_traceback_through_mul_quotes_the_generated_lines():
    def fail(*args):
        raise ValueError("from the kernel")
    op = registry.get("mul")
    key = lantern.backends.cpu.cpu.key
    kernel = op.kernels[key]
    op.kernels[key] = fail
    try:
        with pytest.raises(ValueError) as info:
            lantern.mul(lantern.ones(2), lantern.ones(2))
    finally:
        op.kernels[key] = kernel
    frames = {(os.path.relpath(f.filename, ROOT), f.name): f.line for f in traceback.extract_tb(info.tb)}
    assert frames[("lantern/_generated/functions.py", "mul")] == "return (op.scan or entry(op))((input, other))"
    assert frames[("lantern/_generated/dispatch.py", "dispatch_t0_t1")] == "return kernel(op, args)"


def test_a_stale_or_missing_function_is_compiled_with_its_lines_in_linecache():
    source = "def make_dispatch_t0_t1(op):\n    return 'not the file text'\n"
    fn = generated.define("dispatch", "make_dispatch_t0_t1", source, {})
    assert fn(None) == "not the file text" and fn.source == source
    assert fn.__code__.co_filename == "<lantern dispatch make_dispatch_t0_t1>"
    assert linecache.getline(fn.__code__.co_filename, 2).strip() == "return 'not the file text'"


def test_an_op_registered_at_run_time_gets_generated_code_with_source_lines():
    def kernel(backend, n, a, m, b):
        raise ValueError("inside the user's kernel")
    op = registry.custom("_test_codegen_probe(int n, Tensor a, int m, Tensor b) -> Tensor", kernel)
    assert dispatcher.entry_shape(op) == "t1_t3"  # a shape no registered op has, so no generated file holds it
    fn = binding.make_binding(op)
    assert fn.__code__.co_filename == "<lantern functions make__test_codegen_probe>"
    with pytest.raises(ValueError) as info:
        fn(2, lantern.ones(1), 3, lantern.ones(1))
    lines = [(f.filename, f.line) for f in traceback.extract_tb(info.tb)]
    assert ("<lantern functions make__test_codegen_probe>", "return (op.scan or entry(op))((n, a, m, b))") in lines
    assert ("<lantern dispatch make_dispatch_t1_t3>", "return kernel(op, args)") in lines
    assert "def dispatch_t1_t3(args):" in op.scan.source


def test_composite_and_keyword_alias_wrappers_carry_their_source():
    matmul = registry.COMPOSITES["matmul"]
    assert matmul.source.startswith("def _make(") and "    def wrapper(" in matmul.source
    assert matmul.__code__.co_filename == "<lantern composite matmul>"
    assert linecache.getlines("<lantern composite matmul>")
    assert lantern.Tensor.size.source.startswith("def size(")
    assert linecache.getline(lantern.Tensor.size.__code__.co_filename, 1).startswith("def size(")


def test_backward_function_is_the_formulas():
    d = registry.get("exp").derivative
    assert "(grad * conj(result)) if needs[0] else None," in d.backward.source
    assert _file_of(d.backward) == "lantern/_generated/backward.py"
    x = lantern.tensor([0., 1.], requires_grad=True)
    x.exp().sum().backward()
    assert x.grad.tolist() == lantern.tensor([0., 1.]).exp().tolist()



def test_jit_interpreter_steps_show_their_source():
    from lantern.jit.interpreter import Interpreter

    @lantern.jit.script
    def twice_plus_one(x):
        return x * 2 + 1
    steps = [ins.step for ins in Interpreter(twice_plus_one.graph).instructions]
    assert steps and all(step.__code__.co_filename.startswith("<lantern jit instruction") for step in steps)
    assert all(linecache.getline(step.__code__.co_filename, 1) == "def step(r):\n" == step.source.splitlines(True)[0]
               for step in steps)
