"""lantern.profiler against torch.profiler: the same program profiled by both, and the same events tabled by both."""
import json
import re

import pytest
import torch
from torch.autograd import profiler_util as torch_util

import lantern
from lantern.core.state import tls
from lantern.profiler import EventList, FunctionEvent, ProfilerActivity, profile, record_function
from lantern.profiler.table import format_memory, format_time, format_time_share


def program(lib, profiler, **options):
    """mm, mul, add, sum and a backward pass, inside a record_function range."""
    a = lib.ones(3, 4).requires_grad_()
    b = lib.ones(4, 5).requires_grad_()
    w = lib.ones(3, 5)
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], **options) as prof:
        with profiler.record_function("forward"):
            c = a.mm(b)
            d = c * w
            e = d + d
            s = e.sum()
        s.backward()
    return prof


@pytest.fixture(scope="module")
def both():
    return program(torch, torch.profiler), program(lantern, lantern.profiler)


def _rows(table):
    """{name: line} for the body of a table, and the lines framing it."""
    lines = table.rstrip("\n").split("\n")
    return lines, {line[:55].strip(): line for line in lines[3:-2]}


def _counts(prof):
    return {evt.key: evt.count for evt in prof.key_averages()}


OPS_BOTH_DISPATCH = ["forward", "aten::mm", "aten::mul", "aten::add", "aten::sum", "aten::expand", "SumBackward0",
                     "AddBackward0", "MulBackward0", "MmBackward0", "torch::autograd::AccumulateGrad",
                     "autograd::engine::evaluate_function: SumBackward0",
                     "autograd::engine::evaluate_function: MmBackward0",
                     "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"]


def test_call_counts_match_torch(both):
    t, lt = (_counts(p) for p in both)
    assert {k: lt.get(k) for k in OPS_BOTH_DISPATCH} == {k: t[k] for k in OPS_BOTH_DISPATCH}
    assert lt["aten::mm"] == 3 and lt["MmBackward0"] == 1


@pytest.mark.parametrize("options", [{}, {"sort_by": "cpu_time_total"}, {"sort_by": "count", "row_limit": 4}])
def test_table_layout_matches_torch(both, options):
    tp, lp = both
    t_lines, t_rows = _rows(tp.key_averages().table(**options))
    l_lines, l_rows = _rows(lp.key_averages().table(**options))
    assert l_lines[:3] == t_lines[:3]          # rule, headers, rule: identical text
    assert l_lines[-2] == t_lines[-2]
    assert re.fullmatch(r"Self CPU time total: \d+\.\d{3}(us|ms|s)", l_lines[-1])
    assert all(len(line) == len(l_lines[0]) for line in l_lines[3:-2])
    if "row_limit" in options:
        assert len(l_rows) == len(t_rows) == options["row_limit"]
    else:
        assert set(OPS_BOTH_DISPATCH) - {"autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"} \
            <= set(l_rows)
    cell = r"\s+\d+\.\d\d%\s+\d+\.\d{3}(us|ms|s)\s+\d+\.\d\d%\s+\d+\.\d{3}(us|ms|s)\s+\d+\.\d{3}(us|ms|s)\s+\d+\s+"
    assert all(re.fullmatch(r"\s*\S.*?" + cell, line) for line in l_lines[3:-2])


def test_sorting_by_count_and_time(both):
    _, lp = both
    counts = [int(line.split()[-1]) for line in _rows(lp.key_averages().table(sort_by="count"))[1].values()]
    assert counts == sorted(counts, reverse=True) and counts[0] == 3
    rows = sorted(lp.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    first = _rows(lp.key_averages().table(sort_by="self_cpu_time_total", row_limit=1))[1]
    assert list(first) == [rows[0].key]
    with pytest.raises(AttributeError):
        lp.key_averages().table(sort_by="no_such_column")


def test_shapes_and_memory_columns_match_torch():
    t = program(torch, torch.profiler, record_shapes=True, profile_memory=True)
    lt = program(lantern, lantern.profiler, record_shapes=True, profile_memory=True)
    t_table = t.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total")
    l_table = lt.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total")
    headers = [re.split(r"\s{2,}", text.strip()) for text in (t_table.split("\n")[1], l_table.split("\n")[1])]
    assert headers[0] == headers[1] == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                                        "CPU Mem", "Self CPU Mem", "# of Calls", "Input Shapes"]
    mm = {(e.key, str(e.input_shapes)): (e.count, e.cpu_memory_usage) for e in lt.key_averages(True)}
    torch_mm = {(e.key, str(e.input_shapes)): (e.count, e.cpu_memory_usage) for e in t.key_averages(True)}
    assert mm[("aten::mm", "[[3, 4], [4, 5]]")] == torch_mm[("aten::mm", "[[3, 4], [4, 5]]")] == (1, 60)
    assert "Input Shapes" not in lt.key_averages().table()   # torch shows shapes only when grouped by them
    assert "[[3, 4], [4, 5]]" in l_table and "60 B" in l_table


def _events(E, L, with_torch):
    """The same small tree of events, made with torch's classes or lantern's."""
    spec = [(0, "forward", 0.0, 1500.0, [], 1000, None), (1, "aten::mm", 10.0, 400.5, [[3, 4], [4, 5]], 60, 0),
            (2, "aten::mul", 500.0, 512.25, [[3, 5], []], 60, 0),
            (3, "aten::mm", 600.0, 2_600_000.0, [[3, 4], [4, 5]], 2048, None),
            (4, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 2_600_010.0, 2_600_020.0, [],
             -8, None)]
    events = []
    for id, name, start, end, shapes, mem, parent in spec:
        if with_torch:
            evt = E(id, name, 0, start, end, input_shapes=shapes, cpu_memory_usage=mem, stack=[])
        else:
            evt = E(id, name, start, end, input_shapes=shapes, cpu_memory_usage=mem)
        events.append(evt)
        if parent is not None:
            events[parent].append_cpu_child(evt)
            if with_torch:
                evt.set_cpu_parent(events[parent])
    result = L(events, profile_memory=True)
    result._tree_built = True
    return result


@pytest.mark.parametrize("options", [{}, {"sort_by": "self_cpu_time_total"}, {"sort_by": "count", "row_limit": 2},
                                     {"max_name_column_width": 20, "header": "my header"}, {"time_unit": "ms"},
                                     {"top_level_events_only": True}, {"sort_by": "cpu_memory_usage"}])
def test_table_text_equals_torch_for_the_same_events(options):
    t = _events(torch_util.FunctionEvent, torch_util.EventList, True)
    lt = _events(FunctionEvent, EventList, False)
    assert lt.key_averages().table(**options) == t.key_averages().table(**options)
    assert lt.key_averages(group_by_input_shapes=True).table(**options) == \
        t.key_averages(group_by_input_shapes=True).table(**options)
    assert lt.table(**options) == t.table(**options)


@pytest.mark.parametrize("value", [0.0, 0.5, 999.9994, 1000.0, 12345.678, 999_999.0, 1_000_000.0, 7.5e7])
def test_time_and_memory_formats_match_torch(value):
    assert format_time(value) == torch_util._format_time(value)
    assert format_time_share(value, 2e6) == torch_util._format_time_share(value, 2e6)
    for nbytes in (int(value), -int(value), 1023, 1024, 5 << 20, 3 << 30):
        assert format_memory(nbytes) == torch_util._format_memory(nbytes)


def test_events_nest_backward_nodes_like_torch(both):
    _, lp = both
    parents = {}
    for e in lp.events():   # the first call of each name
        parents.setdefault(e.name, e.cpu_parent.name if e.cpu_parent else None)
    assert parents["aten::mm"] == "forward" and parents["forward"] is None
    assert parents["MmBackward0"] == "autograd::engine::evaluate_function: MmBackward0"
    assert parents["aten::transpose"] == "MmBackward0"
    assert parents["aten::expand"] == "SumBackward0"
    starts = [e.time_range.start for e in lp.events()]
    assert starts == sorted(starts)
    for e in lp.events():
        for child in e.cpu_children:
            assert e.time_range.start <= child.time_range.start <= child.time_range.end <= e.time_range.end
        assert e.self_cpu_time_total == pytest.approx(
            e.cpu_time_total - sum(c.cpu_time_total for c in e.cpu_children))


def test_record_function_as_decorator_and_outside_profiling():
    @record_function("my_step")
    def step(x):
        return x * 2

    step(lantern.ones(2))                     # nothing watches: a no-op
    with profile() as prof:
        step(lantern.ones(2))
    assert [(e.name, e.cpu_parent and e.cpu_parent.name) for e in prof.events()] == \
        [("aten::ones", None), ("my_step", None), ("aten::mul", "my_step")]


def test_profiling_is_off_after_the_block_and_composes_with_the_trace():
    import io
    with lantern.debug.trace_dispatch(stream=io.StringIO()) as trace:
        with profile() as prof:
            lantern.ones(2) + 1
        assert tls.dispatch_trace is trace
    assert tls.dispatch_trace is None and not tls.observed
    lantern.ones(2) * 3
    assert [e.name for e in prof.events()] == ["aten::ones", "aten::add"]
    assert [line.split()[0] for line in trace.lines] == ["ones", "add"]


def test_start_stop_and_step():
    prof = profile()
    with pytest.raises(RuntimeError, match="no results yet"):
        prof.events()
    prof.start()
    lantern.zeros(3).sum()
    prof.step()
    prof.stop()
    assert [e.name for e in prof.events()] == ["aten::zeros", "aten::sum"] and prof.step_num == 1


def test_unsupported_options_are_clear_errors():
    with pytest.raises(NotImplementedError, match="schedule"):
        profile(schedule=lambda step: None)
    with pytest.raises(NotImplementedError, match="on_trace_ready"):
        profile(on_trace_ready=print)
    with pytest.raises(TypeError, match="ProfilerActivity"):
        profile(activities=["cpu"])
    assert ProfilerActivity.CPU.value == torch.profiler.ProfilerActivity.CPU.value


def test_chrome_trace_is_valid_json_with_complete_events(both, tmp_path):
    _, lp = both
    path = tmp_path / "trace.json"
    lp.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    complete = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in complete] == [e.name for e in lp.events()]
    assert {e["cat"] for e in complete} == {"cpu_op", "user_annotation"}
    forward = next(e for e in complete if e["name"] == "forward")
    mm = next(e for e in complete if e["name"] == "aten::mm")
    assert forward["ts"] <= mm["ts"] and mm["ts"] + mm["dur"] <= forward["ts"] + forward["dur"]
    assert all(isinstance(e["ts"], float) and e["dur"] >= 0 for e in complete)


def test_nested_profilers_both_record():
    with profile() as outer:
        lantern.ones(2)
        with profile() as inner:
            lantern.zeros(2)
    assert [e.name for e in outer.events()] == ["aten::ones", "aten::zeros"]
    assert [e.name for e in inner.events()] == ["aten::zeros"]
    assert tls.dispatch_trace is None


def composite_program(lib, F, profiler):
    """Composite ops (matmul in its 2-d/1-d, 1-d/2-d, 2-d/2-d and batched forms, linear, layer_norm, argsort) and
    sort, whose Python frontend only picks an overload."""
    a, v, m = lib.ones(2, 3), lib.ones(3), lib.ones(3, 4)
    w, b = lib.ones(4, 3), lib.ones(4)
    with profiler.profile() as prof:
        lib.matmul(a, v)
        lib.matmul(v, m)
        a @ m
        lib.matmul(lib.ones(5, 2, 3), m)
        F.linear(a, w, b)
        F.linear(a, w)
        F.layer_norm(a, (3,))
        lib.sort(v)
        lib.argsort(v)
    return prof


SHARED_OPS = ["aten::matmul", "aten::mv", "aten::mm", "aten::unsqueeze", "aten::linear", "aten::t", "aten::addmm",
              "aten::layer_norm", "aten::native_layer_norm", "aten::sort", "aten::argsort", "aten::ones"]


@pytest.fixture(scope="module")
def both_composite():
    return (composite_program(torch, torch.nn.functional, torch.profiler),
            composite_program(lantern, lantern.nn.functional, lantern.profiler))


def test_composite_ops_are_rows_with_their_ops_beneath_like_torch(both_composite):
    def tops(prof):   # each top-level event, with its children among the ops both libraries have
        return [(e.name, [c.name for c in e.cpu_children if c.name in SHARED_OPS])
                for e in prof.events() if e.cpu_parent is None]

    t, lt = both_composite
    assert tops(lt) == tops(t)
    assert tops(lt)[:3] == [("aten::matmul", ["aten::mv"]), ("aten::matmul", ["aten::unsqueeze", "aten::mm"]),
                            ("aten::matmul", ["aten::mm"])]
    counts, lantern_counts = _counts(t), _counts(lt)
    assert {k: lantern_counts.get(k) for k in SHARED_OPS} == {k: counts[k] for k in SHARED_OPS}
    assert lantern_counts["aten::matmul"] == 5 and lantern_counts["aten::sort"] == 2


def test_composite_self_time_excludes_its_ops(both_composite):
    _, lt = both_composite
    for e in lt.events():
        if e.name in ("aten::matmul", "aten::linear"):
            inner = sum(c.cpu_time_total for c in e.cpu_children)
            assert inner > 0 and e.self_cpu_time_total == pytest.approx(e.cpu_time_total - inner)
    row = next(r for r in lt.key_averages() if r.key == "aten::matmul")
    assert 0 < row.self_cpu_time_total < row.cpu_time_total


def test_composite_input_shapes_like_torch():
    shapes = []
    for lib, profiler in ((torch, torch.profiler), (lantern, lantern.profiler)):
        a, v = lib.ones(2, 3), lib.ones(3)
        with profiler.profile(record_shapes=True) as prof:
            lib.matmul(a, v)
        shapes.append([(e.name, e.input_shapes) for e in prof.events()][:2])
    assert shapes[1] == shapes[0] == [("aten::matmul", [[2, 3], [3]]), ("aten::mv", [[2, 3], [3]])]


def test_unwatched_composites_cost_one_flag_test():
    from lantern.ops import registry
    assert not registry.watched and tls.dispatch_trace is None
    with profile():
        assert registry.watched
    assert not registry.watched
    matmul = registry.COMPOSITES["matmul"]
    assert matmul.__wrapped__ is lantern.ops.linalg_products.matmul and matmul.__name__ == "matmul"
    assert lantern.matmul is matmul and lantern.Tensor.matmul is matmul


def test_composite_warnings_point_at_the_caller():
    a = lantern.ones(3)
    with pytest.warns(UserWarning, match="without specifying the dim") as record:
        lantern.cross(a, a)
    assert record[0].filename == __file__


def test_a_profile_in_another_thread_leaves_this_one_unwatched():
    import threading
    started, finish, seen = threading.Event(), threading.Event(), []

    def profiled():
        with profile() as prof:
            started.set()
            finish.wait(5)
        seen.extend(e.name for e in prof.events())

    thread = threading.Thread(target=profiled)
    thread.start()
    started.wait(5)
    from lantern.ops import registry
    assert registry.watched and tls.dispatch_trace is None
    lantern.matmul(lantern.ones(2, 2), lantern.ones(2))
    finish.set()
    thread.join()
    assert seen == [] and not registry.watched


def test_observed_wrappers_take_the_functions_own_parameters():
    import inspect
    from lantern.ops.registry import observed
    from lantern.profiler.watchers import Watcher, install, remove
    sentinel = object()

    def f(a, b=sentinel, /, c=2, *rest, d, e=None, **more):
        return a, b, c, rest, d, e, more

    def g(*args, **kwargs):
        return args, kwargs

    class Calls(Watcher):
        def composite(self, name, fn, args, kwargs):
            self.seen = (name, args, kwargs)
            return super().composite(name, fn, args, kwargs)

    wf, wg = observed("f", f), observed("g", g)
    assert inspect.signature(wf) == inspect.signature(f) and wf.__name__ == "f" and wf.__wrapped__ is f
    assert wf(1, d=4) == (1, sentinel, 2, (), 4, None, {})
    assert wf(1, 2, 3, 5, 6, d=4, x=7) == (1, 2, 3, (5, 6), 4, None, {"x": 7})
    assert wg(1, k=2) == ((1,), {"k": 2})
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'd'"):
        wf(1)
    calls = install(Calls())
    try:
        assert wf(1, 2, 3, 5, d=4, x=7) == (1, 2, 3, (5,), 4, None, {"x": 7})
        assert calls.seen == ("f", (1, 2, 3, 5), {"d": 4, "e": None, "x": 7})
        assert wg(1, k=2) == ((1,), {"k": 2}) and calls.seen == ("g", (1,), {"k": 2})
    finally:
        remove(calls)
