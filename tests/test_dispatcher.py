"""The op registry, schemas, generated bindings and the dispatcher (keys, trace, errors)."""
import io
import os
import subprocess
import sys

import pytest

import lantern
from lantern.core.dispatch_keys import DispatchKey
from lantern.ops import binding, dispatcher, registry
from lantern.ops.schema import parse_schema


def test_schema_parse():
    s = parse_schema("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    assert [a.name for a in s.args] == ["self", "other", "alpha"]
    assert s.args[2].kwarg_only and s.args[2].default == 1 and s.alias == "new"
    assert parse_schema("t(Tensor(a) self) -> Tensor(a)").alias == "view"
    assert parse_schema("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)").alias == "inplace"
    idx = parse_schema("index(Tensor self, Tensor?[] indices) -> Tensor").args[1]
    assert idx.is_tensor and idx.is_list
    mx = parse_schema("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
    assert mx.overload == "dim" and [r.name for r in mx.returns] == ["values", "indices"]


def test_structured_op_has_inplace_and_out_variants():
    add = registry.get("add")
    assert add.inplace.schema.alias == "inplace" and add.out.schema.alias == "out"
    assert add.out.schema.args[-1].name == "out"


def test_bindings_are_generated_from_schemas():
    src = binding.binding_source("add")
    assert "\n    def add(input, other, *, alpha=1, out=None):\n" in src
    assert "    def view(self, *size, **_aliases):" in binding.binding_source("view", method=True)  # size= by keyword
    assert lantern.Tensor.add_.__doc__.startswith("add_(Tensor(a!) self")


def test_out_returns_the_out_tensor_and_bumps_version():
    out = lantern.empty(3)
    r = lantern.abs(lantern.tensor([-1.0, 2.0, -3.0]), out=out)
    assert r is out and out.tolist() == [1.0, 2.0, 3.0] and out._version == 1


def test_out_resize_warns_when_nonempty():
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        lantern.abs(lantern.ones(3), out=lantern.empty(2))


def test_dispatch_keys_and_explanations():
    x = lantern.ones(2)
    assert dispatcher.dispatch_keys(registry.get("add"), (x, x, 1)) == [DispatchKey.CPU]
    m = lantern.ones(2, device="meta")
    assert dispatcher.dispatch_keys(registry.get("add"), (m, m, 1)) == [DispatchKey.Meta]
    assert "no tensor inputs" in dispatcher.explain_keys(registry.get("zeros"), ((2,), None, None, None, None,
                                                                                False, None))[0][1]


def test_mixed_devices_raise():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        lantern.ones(2) + lantern.ones(2, device="meta")


def test_missing_kernel_is_a_clear_not_implemented_error():
    def kernel(backend, self):
        return self
    op = registry.custom("_test_cpu_only(Tensor self) -> Tensor", kernel, backends=("cpu",))
    try:
        assert dispatcher.call(op, (lantern.ones(1),)).tolist() == [1.0]
        with pytest.raises(NotImplementedError, match="Could not run '_test_cpu_only' with arguments from the 'Meta'"):
            dispatcher.call(op, (lantern.ones(1, device="meta"),))
    finally:  # a throwaway op: later tests walk the registry (e.g. every op declares a derivative)
        del registry.REGISTRY["_test_cpu_only"]


def test_cuda_without_cupy_or_gpu_is_a_clear_error():
    assert not lantern.cuda.is_available()
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):  # as PyTorch's CPU build
        lantern.ones(2, device="cuda")
    assert lantern.device("cuda:1").index == 1


def test_trace_dispatch_lines():
    buf = io.StringIO()
    with lantern.debug.trace_dispatch(stream=buf) as trace:
        x = lantern.ones(2, 3)
        x.t()
        x.add_(1)
    text = buf.getvalue()
    assert [line.split()[0] for line in trace.lines] == ["ones", "t", "add_"]
    assert "view of input 0" in trace.lines[1] and "stride=(1, 3)" in trace.lines[1]
    assert "in place on input 0" in trace.lines[2]
    assert "keys=[CPU: inputs are on cpu]" in text and "kernel=CPU/structured_inplace" in text


def test_trace_filters_by_op_name():
    with lantern.debug.trace_dispatch(stream=io.StringIO(), ops={"mul"}) as trace:
        (lantern.ones(2) + 1) * 2
    assert [line.split()[0] for line in trace.lines] == ["mul"]


def test_trace_off_after_context():
    with lantern.debug.trace_dispatch(stream=io.StringIO()) as trace:
        pass
    lantern.ones(1) + 1
    assert trace.lines == []


def test_env_switch_traces_whole_program():
    env = dict(os.environ, LANTERN_TRACE="dispatch")
    out = subprocess.run([sys.executable, "-c", "import lantern; lantern.ones(2) * 3"], env=env,
                         capture_output=True, text=True, check=True)
    assert "mul  keys=[CPU" in out.stderr
