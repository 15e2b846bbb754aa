"""lantern.debug.trace_dispatch: nesting for backward, record_function and ops called inside ops, filters, file
output, summary mode."""
import io
import os
import re
import subprocess
import sys

import pytest

import lantern
from lantern.core.state import tls
from lantern.profiler import profile, record_function

R3 = "float32[3] stride=(1,)"
GRAD_KEYS = "keys=[Autograd: an input requires grad and grad mode is on, CPU: inputs are on cpu]"
CPU_KEYS = "keys=[CPU: inputs are on cpu]"


def masked(lines):
    """Kernel function names (which module and function implement an op) and times masked."""
    lines = [re.sub(r"\b([A-Z]\w*/\w+):\S+", r"\1:*", line) for line in lines]
    return [re.sub(r"\d+\.\d{3}(us|ms|s)\b", "<time>", line) for line in lines]


def test_backward_nodes_and_ranges_nest_their_ops():
    a = lantern.tensor([1., 2., 3.], requires_grad=True)
    out = io.StringIO()
    with lantern.debug.trace_dispatch(stream=out) as trace:
        with record_function("forward"):
            y = (a * a).sum()
        y.backward()
    assert masked(trace.lines) == [
        "record_function: forward",
        f"  mul  {GRAD_KEYS}  kernel=CPU/structured:*  in=({R3} requires_grad, {R3} requires_grad)  -> "
        f"{R3} requires_grad",
        f"  sum  {GRAD_KEYS}  kernel=CPU/structured:*  in=({R3} requires_grad, None, False, None)  -> "
        "float32[] stride=() requires_grad",
        "backward: SumBackward0",
        f"  expand  {CPU_KEYS}  kernel=CPU/view:*  in=(float32[] stride=(), (3,))  -> float32[3] stride=(0,) "
        "view of input 0",
        "backward: MulBackward0",
        f"  mul  {CPU_KEYS}  kernel=CPU/structured:*  in=(float32[3] stride=(0,), {R3} requires_grad)  -> {R3}",
        f"  mul  {CPU_KEYS}  kernel=CPU/structured:*  in=(float32[3] stride=(0,), {R3} requires_grad)  -> {R3}",
        f"  add  {CPU_KEYS}  kernel=CPU/structured:*  in=({R3}, {R3}, 1)  -> {R3}",
        f"backward: AccumulateGrad  into {R3} requires_grad",
    ]
    assert out.getvalue() == "\n".join(trace.lines) + "\n"


def test_a_call_inside_a_call_prints_top_down():
    x, src = lantern.zeros(2, 3), lantern.ones(3)
    with lantern.debug.trace_dispatch(stream=io.StringIO()) as trace:
        lantern.select_scatter(x, src, 0, 1)
    assert masked(trace.lines) == [
        f"select_scatter  {CPU_KEYS}  kernel=CPU/custom:*  in=(float32[2, 3] stride=(3, 1), {R3}, 0, 1)",
        f"  select  {CPU_KEYS}  kernel=CPU/view:*  in=(float32[2, 3] stride=(3, 1), 0, 1)  -> {R3} view of input 0",
        "<- select_scatter  -> float32[2, 3] stride=(3, 1)",
    ]


def test_filters_by_exact_name_overload_and_pattern():
    def work():
        b = lantern.ones(3)
        (b + b + b * b).sum()
        lantern.add(b, b, out=b)
        b.add_(1)

    def names(ops):
        with lantern.debug.trace_dispatch(stream=io.StringIO(), ops=ops) as trace:
            work()
        return [line.split()[0] for line in trace.lines]

    assert names({"mul"}) == ["mul"]
    assert names(["add"]) == ["add", "add", "add.out"]          # a name covers its overloads, not add_
    assert names(["add*"]) == ["add", "add", "add.out", "add_"]
    assert names(["s?m", "ones"]) == ["ones", "sum"]


def test_filtered_backward_shows_only_nodes_with_shown_ops():
    a = lantern.ones(3, requires_grad=True)
    with lantern.debug.trace_dispatch(stream=io.StringIO(), ops=["expand", "AccumulateGrad"]) as trace:
        (a * 2).sum().backward()
    assert [line.split("  keys")[0] for line in trace.lines] == [
        "backward: SumBackward0", "  expand", f"backward: AccumulateGrad  into {R3} requires_grad"]


def test_file_output(tmp_path):
    path = tmp_path / "trace.txt"
    with lantern.debug.trace_dispatch(file=str(path)) as trace:
        lantern.ones(2).t()
    assert path.read_text() == "\n".join(trace.lines) + "\n"
    assert [line.split()[0] for line in trace.lines] == ["ones", "t"]


def test_summary_counts_calls_per_op_and_kernel():
    out = io.StringIO()
    a = lantern.ones(3, requires_grad=True)
    with lantern.debug.trace_dispatch(stream=out, summary=True) as trace:
        b = lantern.ones(3)
        (b + b + b * b).sum()
        (a * b).sum()
    lines = out.getvalue().rstrip("\n").split("\n")
    assert lines == trace.lines
    assert lines[1] == "-" * len(lines[0]) and all(len(line) == len(lines[0]) for line in lines)
    # most calls first, then in order of first call; kernel function names may differ by lantern version
    assert [line.split() for line in masked(lines[:1] + lines[2:])] == [
        ["op", "keys", "kernel", "calls", "total", "time"],
        ["add", "CPU", "CPU/structured:*", "2", "<time>"],
        ["ones", "CPU", "CPU/custom:*", "1", "<time>"],
        ["mul", "CPU", "CPU/structured:*", "1", "<time>"],
        ["sum", "CPU", "CPU/structured:*", "1", "<time>"],
        ["mul", "Autograd+CPU", "CPU/structured:*", "1", "<time>"],
        ["sum", "Autograd+CPU", "CPU/structured:*", "1", "<time>"],
    ]


def test_a_failing_call_says_it_raised():
    with pytest.raises(RuntimeError):
        with lantern.debug.trace_dispatch(stream=io.StringIO()) as trace:
            lantern.ones(2) + lantern.ones(3)
    assert trace.lines[-1].startswith("add  ") and trace.lines[-1].endswith("-> raised RuntimeError")
    assert tls.dispatch_trace is None and not tls.observed


def test_trace_and_profiler_together():
    with profile() as prof:
        with lantern.debug.trace_dispatch(stream=io.StringIO()) as trace:
            lantern.ones(2).mul(3)
    assert [line.split()[0] for line in trace.lines] == ["ones", "mul"]
    assert [e.name for e in prof.events()] == ["aten::ones", "aten::mul"]


def test_env_switch_summary_prints_at_exit():
    env = dict(os.environ, LANTERN_TRACE="dispatch-summary")
    out = subprocess.run([sys.executable, "-c", "import lantern; lantern.ones(2) * 3; lantern.ones(1)"], env=env,
                         capture_output=True, text=True, check=True)
    lines = out.stderr.rstrip("\n").split("\n")
    assert lines[0].split() == ["op", "keys", "kernel", "calls", "total", "time"]
    assert [line.split()[:2] + line.split()[-2:-1] for line in lines[2:]] == [["ones", "CPU", "2"], ["mul", "CPU", "1"]]


A23 = "float32[2, 3] stride=(3, 1)"
R2 = "float32[2] stride=(1,)"


def test_composite_ops_print_their_dispatched_ops_nested():
    a, v, m = lantern.ones(2, 3), lantern.ones(3), lantern.ones(3, 2)
    with lantern.debug.trace_dispatch(stream=io.StringIO()) as trace:
        lantern.matmul(a, v)
        v @ m
        lantern.sort(v)   # its Python frontend only picks the overload: one line, as torch shows one row
    assert masked(trace.lines) == [
        f"matmul  composite=linalg_products.matmul  in=({A23}, {R3})",
        f"  mv  {CPU_KEYS}  kernel=CPU/structured:*  in=({A23}, {R3})  -> {R2}",
        f"<- matmul  -> {R2}",
        f"matmul  composite=linalg_products.matmul  in=({R3}, float32[3, 2] stride=(2, 1))",
        f"  unsqueeze  {CPU_KEYS}  kernel=CPU/view:*  in=({R3}, 0)  -> float32[1, 3] stride=(3, 1) view of input 0",
        f"  mm  {CPU_KEYS}  kernel=CPU/structured:*  in=(float32[1, 3] stride=(3, 1), float32[3, 2] stride=(2, 1))  "
        "-> float32[1, 2] stride=(2, 1)",
        f"  squeeze  {CPU_KEYS}  kernel=CPU/view:*  in=(float32[1, 2] stride=(2, 1), 0)  -> {R2} view of input 0",
        f"<- matmul  -> {R2}",
        f"sort  {CPU_KEYS}  kernel=CPU/custom:*  in=({R3}, -1, False, False)  -> {R3}, int64[3] stride=(1,)",
    ]


def test_composites_nest_in_composites_and_filter_by_name():
    x, w = lantern.ones(4, 2, 3), lantern.ones(5, 3)
    with lantern.debug.trace_dispatch(stream=io.StringIO()) as trace:
        lantern.nn.functional.linear(x, w)
    assert [(len(line) - len(line.lstrip()), " ".join(line.split()[:2])) for line in trace.lines] == [
        (0, "linear composite=nn_misc.linear"), (2, "t keys=[CPU:"), (2, "matmul composite=linalg_products.matmul"),
        (4, "view keys=[CPU:"), (4, "mm keys=[CPU:"), (4, "view keys=[CPU:"), (2, "<- matmul"), (0, "<- linear")]
    with lantern.debug.trace_dispatch(stream=io.StringIO(), ops=["matmul"]) as trace:
        lantern.nn.functional.linear(x, w)
    assert trace.lines == ["matmul  composite=linalg_products.matmul  in=(float32[4, 2, 3] stride=(6, 3, 1), "
                           "float32[3, 5] stride=(1, 3))  -> float32[4, 2, 5] stride=(10, 5, 1)"]
    with lantern.debug.trace_dispatch(stream=io.StringIO(), ops=["mm"]) as trace:
        lantern.nn.functional.linear(x, w)
    assert [line.split()[0] for line in trace.lines] == ["mm"]


def test_summary_counts_composites():
    a, v = lantern.ones(2, 3), lantern.ones(3)
    with lantern.debug.trace_dispatch(stream=io.StringIO(), summary=True) as trace:
        lantern.matmul(a, v)
        a.matmul(v)
    assert [line.split()[:4] for line in masked(trace.lines[2:])] == [
        ["matmul", "CompositeImplicitAutograd", "linalg_products.matmul", "2"], ["mv", "CPU", "CPU/structured:*", "2"]]


def test_a_failing_composite_says_it_raised():
    a, v = lantern.ones(2, 3), lantern.ones(2)
    with pytest.raises(RuntimeError):
        with lantern.debug.trace_dispatch(stream=io.StringIO()) as trace:
            lantern.matmul(a, v)
    assert [line.split()[0] for line in trace.lines] == ["matmul", "mv", "<-"]
    assert trace.lines[1].endswith("-> raised RuntimeError") and trace.lines[2] == "<- matmul  -> raised RuntimeError"
    assert tls.dispatch_trace is None and not tls.observed
