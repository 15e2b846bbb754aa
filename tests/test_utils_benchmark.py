"""lantern.utils.benchmark against torch.utils.benchmark on the same code: Measurement reprs, Compare tables and
the autorange loops' run counts are the same text when a fake clock drives both (real clocks are only checked
for structure); the Fuzzer draws torch's parameters and tensors from a seed; FunctionCounts and CallgrindStats
compute as torch's on the same counts; errors raise torch's classes. The callgrind subprocess itself (slow under
valgrind) is in the slow tier, as is the tutorial-shaped compat script run under both libraries.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.utils.benchmark as tb

import lantern
import lantern.utils.benchmark as lb
from lantern.utils.benchmark.utils.valgrind_wrapper import callgrind_run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOTH = pytest.mark.parametrize("pair", [(tb, torch), (lb, lantern)], ids=["torch", "lantern"])


def _body(obj):
    """repr(obj) without its first line, which names the object's module and address."""
    return repr(obj).split("\n", 1)[1]


class Clock:
    """A fake clock: each timer call costs `overhead` seconds and each run of the statement (`clock.tick()`) the
    next of `costs`, cyclically, so both libraries see the same, spread-out times."""

    def __init__(self, costs=(1e-6,), overhead=5e-8):
        self.now, self.costs, self.overhead, self.runs = 0.0, costs, overhead, 0

    def tick(self):
        self.now += self.costs[self.runs % len(self.costs)]
        self.runs += 1

    def __call__(self):
        self.now += self.overhead
        return self.now


def _both(fn):
    """fn(benchmark module, tensor library) under torch and under lantern."""
    return fn(tb, torch), fn(lb, lantern)


SPREADS = [[1e-6], [1e-6, 2e-6], [3e-3, 3.1e-3, 3.05e-3, 2.9e-3, 3.3e-3], [5e-8] * 3 + [9e-8] * 5,
           [1.0, 1.5, 2.2, 3.1, 0.7, 1.1], [2.5e-5, 2.51e-5, 2.49e-5, 2.5e-5]]
SPECS = [dict(stmt="x + 1", setup="x = 1"),
         dict(stmt="y = x * 2\ny.sum()", setup="x = torch.ones(3)\ny = None", sub_label="ones", num_threads=4),
         dict(stmt="f(x)", setup="pass", label="f", sub_label="small", description="float", env="A"),
         dict(stmt="g()", setup="", label="g", num_threads=2)]


@pytest.mark.parametrize("times", SPREADS)
@pytest.mark.parametrize("spec", SPECS)
def test_measurement_repr_and_statistics_are_torchs(spec, times):
    def measure(b, _):
        m = b.Measurement(number_per_run=10, raw_times=list(times), task_spec=b.TaskSpec(**spec))
        return ((_body(m), m.significant_figures, m.has_warnings, m.meets_confidence(), m.title, m.env,
                 m.as_row_name, m.times, m.stmt, m.num_threads), (m.median, m.mean, m.iqr))
    theirs, ours = _both(measure)
    assert ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1], rel=1e-12)  # a mean may differ in its last bit (summation order)


def test_measurement_merge_and_unit_helpers_are_torchs():
    def run(b, _):
        spec, other = b.TaskSpec("a", "pass"), b.TaskSpec("b", "pass")
        merged = b.Measurement.merge([b.Measurement(2, [4e-6], spec), b.Measurement(4, [4e-6, 6e-6], spec),
                                      b.Measurement(1, [1e-3], other, metadata={"k": 1})])
        units = [b.select_unit(t) for t in (3e-10, 1e-9, 7.5e-6, 1e-3, 0.5, 20.0)]
        sigfigs = [b.trim_sigfig(x, n) for x, n in ((3.14159, 2), (123456.0, 3), (0.000123456, 2), (9.99, 1))]
        return ([(m.number_per_run, m.raw_times, m.metadata, m.task_spec.stmt) for m in merged], units, sigfigs,
                [b.unit_to_english(u) for u in ("ns", "us", "ms", "s")], b.ordered_unique([3, 1, 3, 2, 1]))
    theirs, ours = _both(run)
    assert ours == theirs


def _timer_runs(b, _, clock_costs, method, kwargs):
    clock = Clock(clock_costs)
    timer = b.Timer("clock.tick()", globals={"clock": clock}, timer=clock, label="tick", description="fake")
    seen = []
    if method != "timeit":
        kwargs = dict(kwargs, callback=lambda number, t: seen.append((number, t)))
    m = getattr(timer, method)(**kwargs)
    return m.number_per_run, m.raw_times, _body(m), seen, clock.runs


@pytest.mark.parametrize("method, kwargs", [
    ("timeit", dict(number=100)), ("timeit", dict()),
    ("blocked_autorange", dict()), ("blocked_autorange", dict(min_run_time=0.01)),
    ("adaptive_autorange", dict()), ("adaptive_autorange", dict(threshold=0.01, max_run_time=0.5)),
    ("adaptive_autorange", dict(threshold=0.5, min_run_time=0.1))])
@pytest.mark.parametrize("costs", [(1e-6,), (1e-6, 3e-6, 2e-6, 1.5e-6, 7e-6), (2e-3, 2.2e-3)])
def test_timer_loops_run_and_print_as_torchs_under_a_fake_clock(method, kwargs, costs):
    theirs, ours = _both(lambda b, t: _timer_runs(b, t, costs, method, kwargs))
    assert ours == theirs


def test_timer_measures_with_a_real_clock():
    m = lb.Timer("x + x", setup="x = torch.ones(8)", label="add", sub_label="8").blocked_autorange(min_run_time=0.02)
    assert m.number_per_run >= 1 and len(m.raw_times) >= 1 and m.median > 0 and sum(m.raw_times) >= 0.02
    assert _body(m).splitlines()[0] == "add: 8"
    a = lb.Timer("x.sum()", globals={"x": lantern.ones(4)}).adaptive_autorange(min_run_time=0.01, max_run_time=0.2)
    assert a.number_per_run >= 1 and a.raw_times
    t = lb.Timer("torch.ones(2)").timeit(10)
    assert t.number_per_run == 10 and len(t.raw_times) == 1
    assert re.fullmatch(r"<lantern\.utils\.benchmark\.utils\.common\.Measurement object at 0x[0-9a-f]+>",
                        repr(t).splitlines()[0])


def test_timer_default_globals_hold_lantern_and_are_copied():
    given = {"n": 3}
    seen = []
    lb.Timer("seen.append((torch, n))", globals=dict(given, seen=seen)).timeit(2)
    assert seen[-1] == (lantern, 3) and given == {"n": 3}


@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_num_threads_hold_during_the_measurement_and_are_restored(num_threads):
    before, seen = lantern.get_num_threads(), []
    timer = lb.Timer("seen.append(torch.get_num_threads())", globals={"seen": seen}, num_threads=num_threads)
    timer.timeit(3)
    timer.blocked_autorange(min_run_time=0.001)
    assert set(seen) == {num_threads} and lantern.get_num_threads() == before


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the class and message are what is compared)
        return type(e).__name__, str(e)
    return None


@BOTH
def test_errors_are_torchs(pair):
    b, _ = pair
    assert _raised(lambda: b.Timer(lambda: 1)) == ("ValueError", "Currently only a `str` stmt is supported.")
    assert _raised(lambda: b.Timer("x", language="fortran")) == ("ValueError", "Invalid language `fortran`.")
    assert _raised(lambda: b.Timer("x", global_setup="#include <x>"))[0] == "ValueError"
    assert _raised(lambda: b.Timer().repeat()) == ("NotImplementedError", "See `Timer.blocked_autorange.`")
    assert _raised(lambda: b.Timer().autorange()) == ("NotImplementedError", "See `Timer.blocked_autorange.`")
    assert _raised(lambda: b.Compare([1])) == ("ValueError", "Expected an instance of `Measurement`, got "
                                                             "<class 'int'> instead.")
    assert _raised(lambda: b.Timer().collect_callgrind(repeats=0)) == ("ValueError",
                                                                       "If specified, `repeats` must be >= 1")
    assert _raised(lambda: b.CopyIfCallgrind([1]))[0] == "ValueError"
    assert _raised(lambda: b.FuzzedParameter("p", 1, 2, distribution="normal")) == (
        "AssertionError", "Unknown distribution: normal")
    assert _raised(lambda: b.FuzzedParameter("p", distribution={1: 0.5, 2: 0.5}))[0] == "AssertionError"
    assert _raised(lambda: b.Fuzzer([b.FuzzedParameter("x", 1, 2, distribution="uniform")],
                                    [b.FuzzedTensor("x", size=(2,))]))[0] == "ValueError"


def test_cpp_statements_raise_a_clear_runtime_error():
    with pytest.raises(RuntimeError, match="no C\\+\\+ side"):
        lb.Timer("at::add(x, y);", language="cpp")
    with pytest.raises(RuntimeError, match="no C\\+\\+ side"):
        lb.Timer("x", language=lb.Language.CPP)


def _measurements(b, rows):
    return [b.Measurement(number_per_run=n, raw_times=times, task_spec=b.TaskSpec(**spec))
            for n, times, spec in rows]


TABLE = [
    (10, [2e-5, 2.1e-5, 2.05e-5, 1.9e-5], dict(stmt="f(x)", setup="", label="add", sub_label="[1, 8]",
                                              description="float")),
    (10, [4e-5, 4.4e-5], dict(stmt="f(x)", setup="", label="add", sub_label="[1, 8]", description="int")),
    (100, [3.1e-4, 5e-4, 2e-4, 3.3e-4, 3.2e-4], dict(stmt="f(x)", setup="", label="add", sub_label="[64, 64]",
                                                      description="float")),
    (1, [1.2e-3], dict(stmt="f(x)", setup="", label="add", sub_label="[1024, 1024]", description="int")),
    (10, [1.1e-5, 1.2e-5], dict(stmt="f(x)", setup="", label="add", sub_label="[1, 8]", description="float",
                               num_threads=4)),
    (10, [9e-6, 1e-5, 1.1e-5], dict(stmt="f(x)", setup="", label="add", sub_label="[1, 8]", description="int",
                                    num_threads=4)),
    (10, [2e-5, 2.2e-5], dict(stmt="f(x)", setup="", label="add", sub_label="[1, 8]", description="float")),
    (1, [0.5, 0.6], dict(stmt="g()", setup="", label="slow", description="s")),
    (1, [0.7, 0.75], dict(stmt="h()", setup="", label="slow", description="s")),
    (1, [3e-9, 4e-9], dict(stmt="k()", setup="", label=None, sub_label="tiny", description="d")),
]
ENVS = [
    (10, [2e-5, 2.1e-5], dict(stmt="f(x)", setup="", label="envs", sub_label="a", env="main", description="x")),
    (10, [3e-5, 2.9e-5], dict(stmt="f(x)", setup="", label="envs", sub_label="a", env="branch-long", description="x")),
    (10, [2.6e-5], dict(stmt="f(x)", setup="", label="envs", sub_label="b", env="main", description="y")),
]


@pytest.mark.parametrize("options", [(), ("trim",), ("colorize",), ("rowwise",), ("warnings",),
                                     ("trim", "colorize", "warnings")])
@pytest.mark.parametrize("rows", [TABLE, ENVS, TABLE[:1]], ids=["table", "envs", "one"])
def test_compare_tables_are_torchs(rows, options):
    def table(b, _):
        compare = b.Compare(_measurements(b, rows[:2]))
        compare.extend_results(_measurements(b, rows[2:]))
        if "trim" in options:
            compare.trim_significant_figures()
        if "colorize" in options or "rowwise" in options:
            compare.colorize(rowwise="rowwise" in options)
        if "warnings" in options:
            compare.highlight_warnings()
        return str(compare)
    theirs, ours = _both(table)
    assert ours == theirs


def test_compare_print_writes_the_table(capsys):
    lb.Compare(_measurements(lb, TABLE[:2])).print()
    assert capsys.readouterr().out == str(lb.Compare(_measurements(lb, TABLE[:2]))) + "\n"


FUZZ = [
    dict(parameters=[dict(name="k0", minval=1, maxval=1024, distribution="loguniform"),
                     dict(name="k1", minval=1, maxval=64, distribution="uniform"),
                     dict(name="dim", minval=1, maxval=3, distribution="uniform", strict=True),
                     dict(name="scale", minval=0.5, maxval=2.0, distribution="uniform")],
         tensors=[dict(name="x", size=("k0", "k1", 3), steps=("k1", 1, 2), dim_parameter="dim",
                       max_elements=4096, probability_contiguous=0.4),
                  dict(name="y", size=("k1", "k0"), dtype="int32", min_elements=4)],
         constraints=True),
]


def _fuzzer(b, t, seed):
    spec = FUZZ[0]
    params = [b.FuzzedParameter(**p) for p in spec["parameters"]]
    tensors = [b.FuzzedTensor(**dict(d, dtype=getattr(t, d.get("dtype", "float32")))) for d in spec["tensors"]]
    fuzzer = b.Fuzzer(parameters=[params[:2], *params[2:]], tensors=tensors,
                      constraints=[lambda p: p["k0"] * p["k1"] < 20000], seed=seed)
    out = []
    for tensors_, properties, drawn in fuzzer.take(6):
        shapes = {name: (tuple(x.shape), x.stride(), x.is_contiguous(), x.numpy().tolist())
                  for name, x in tensors_.items()}
        props = {name: {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in p.items() if k != "dtype"}
                 for name, p in properties.items()}
        out.append((shapes, props, drawn))
    return out, fuzzer.rejection_rate


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_fuzzer_draws_torchs_parameters_and_tensors(seed):
    theirs, ours = _both(lambda b, t: _fuzzer(b, t, seed))
    assert ours == theirs


def test_parameter_aliases_and_dict_distributions_behave_as_torchs():
    def run(b, _):
        resolved = b.Fuzzer._resolve_aliases({"a": b.ParameterAlias("b"), "b": b.ParameterAlias("c"), "c": 5})
        cycle = _raised(lambda: b.Fuzzer._resolve_aliases({"a": b.ParameterAlias("b"), "b": b.ParameterAlias("a")}))
        # torch 2.13 refuses a dict that sums to one, and NumPy refuses to draw from one that does not
        unnormalized = b.FuzzedParameter("p", distribution={1: 0.5, 2: 0.6})
        draw = _raised(lambda: unnormalized.sample(np.random.RandomState(0)))
        return resolved, cycle[0], draw, repr(b.ParameterAlias("k"))
    theirs, ours = _both(run)
    assert ours == theirs


def test_fuzzed_sparse_tensor_matches_torchs():
    def make(b, t):
        t.manual_seed(0)
        out = []
        for coalesced in (True, False):
            for size, sparse_dim in (((6, 5), None), ((4, 3, 2), "sparse_dim")):
                x, props = b.FuzzedSparseTensor("s", size=size, sparse_dim=sparse_dim)._make_tensor(
                    {"density": 0.4, "coalesced": coalesced, "sparse_dim": 1}, None)
                # duplicates of an uncoalesced tensor are summed in another order: values to 5 decimals
                dense = np.round(np.asarray(x.to_dense().tolist()), 5).tolist()
                out.append((dense, {k: v for k, v in props.items() if k not in ("dtype", "shape")},
                            tuple(props["shape"])))
        return out
    theirs, ours = _both(make)
    assert ours == theirs


def _counts(b, rows, inclusive=False, linewidth=None):
    return b.FunctionCounts(tuple(b.FunctionCount(c, fn) for c, fn in rows), inclusive, _linewidth=linewidth)


ROWS = [(1200, "Python/ceval.c:_PyEval_EvalFrameDefault [/usr/lib/libpython3.11.so]"),
        (300, "/tmp/build/Objects/dictobject.c:lookdict_unicode [/usr/lib/libpython3.11.so]"),
        (-40, "/x/lantern/_tensor.py:add"), (90, "???:" + "very_long_function_name_" * 6)]
ROWS_B = [(1000, "Python/ceval.c:_PyEval_EvalFrameDefault [/usr/lib/libpython3.11.so]"), (70, "/x/numpy:add")]


@pytest.mark.parametrize("linewidth", [None, 60, 200])
def test_function_counts_compute_and_print_as_torchs(linewidth):
    def run(b, _):
        a, c = _counts(b, ROWS, linewidth=linewidth), _counts(b, ROWS_B)
        many = _counts(b, [(i, f"f{i}.c:f") for i in range(25)], inclusive=True, linewidth=linewidth)
        results = [a, a + c, a - c, a * 1.5, a.denoise(), a.filter(lambda fn: "Python" in fn),
                   a.transform(lambda fn: fn.split(":")[0]), a[1:3], many, many[:20]]
        # a[0] is a FunctionCounts over one FunctionCount's fields in torch 2.13 (a NamedTuple is a tuple): not compared
        return [(r.sum(), len(r), list(r), _body(r) if linewidth else None) for r in results]
    theirs, ours = _both(run)
    assert ours == theirs


def test_callgrind_stats_compute_as_torchs():
    def run(b, _):
        spec = b.TaskSpec("x + 1", "x = torch.ones(1)", label="add", num_threads=2)
        stats = [b.CallgrindStats(spec, 100, True, _counts(b, ROWS_B, True), _counts(b, ROWS_B),
                                  _counts(b, rows, True), _counts(b, rows), None) for rows in (ROWS, ROWS_B)]
        std = stats[0].as_standardized()
        return (_body(stats[0]), stats[0].counts(), stats[0].counts(denoise=True), list(std.stats()),
                list(std.stats(inclusive=True)), list(stats[0].delta(stats[1])), list(stats[0].delta(stats[1], True)),
                std.stmt_callgrind_out)
    theirs, ours = _both(run)
    assert ours == theirs


ANNOTATE = """\
--------------------------------------------------------------------------------
Profile data file 'callgrind.out.1' (creator: callgrind-3.19.0)
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
31,906  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir      file:function
--------------------------------------------------------------------------------
31,906  ???:sys_call_tracing [/usr/lib/libpython3.11.so.1.0]
15,176  /tmp/Python-3.11.7/Python/ceval.c:_PyEval_EvalFrameDefault'2 [/usr/lib/libpython3.11.so.1.0]
 3,544  /tmp/Python-3.11.7/Objects/longobject.c:_PyLong_Add [/usr/lib/libpython3.11.so.1.0]

--------------------------------------------------------------------------------
-- Auto-annotated source: ceval.c
"""


def test_callgrind_annotate_output_is_parsed():
    counts = callgrind_run.parse_annotate(ANNOTATE, inclusive=False)
    assert [c.count for c in counts] == [15176, 3544]
    assert list(counts)[1].function == ("/tmp/Python-3.11.7/Objects/longobject.c:_PyLong_Add "
                                        "[/usr/lib/libpython3.11.so.1.0]")
    assert not counts.inclusive and counts.sum() == 18720


def test_the_callgrind_script_runs_each_block_in_sys_call_tracing():
    spec = lb.TaskSpec("y = x + 1", "x = 1")
    bridge = callgrind_run.GlobalsBridge({"torch": lantern, "n": lb.CopyIfCallgrind(3)}, "/tmp/unused-bridge")
    script = callgrind_run.construct_script(spec, bridge, number=250, repeats=2, collect_baseline=True)
    assert "sys.call_tracing(exec, (_block, globals()))" in script and "n = pickle.load(f)" in script
    assert callgrind_run._unrolled("s", 250).count("s") == 150 and "range(2)" in callgrind_run._unrolled("s", 250)
    assert callgrind_run._unrolled("s", 120) == "\n".join(["s"] * 120)
    with pytest.raises(ValueError, match="CopyIfCallgrind"):
        callgrind_run.GlobalsBridge({"n": 3}, "/tmp/unused-bridge")
    with pytest.raises(ValueError, match="mocking out `torch`"):
        callgrind_run.GlobalsBridge({"torch": torch}, "/tmp/unused-bridge")


def test_collect_callgrind_without_valgrind_raises_torchs_oserror(monkeypatch):
    wrapper = callgrind_run.ValgrindWrapper()
    monkeypatch.setitem(wrapper._commands_available, "valgrind", False)
    monkeypatch.setattr(callgrind_run, "_SINGLETON", [wrapper])
    with pytest.raises(OSError, match="Missing: valgrind"):
        lb.Timer("1 + 1").collect_callgrind(number=10)


@pytest.mark.slow
def test_collect_callgrind_counts_a_lantern_statement():
    timer = lb.Timer("x + x", setup="x = torch.ones(16)", globals={"k": lb.CopyIfCallgrind(2)})
    first, second = timer.collect_callgrind(number=20, repeats=2)
    assert first.counts() > first.baseline_exclusive_stats.sum() > 0
    assert abs(first.counts() - second.counts()) < 0.05 * first.counts()
    assert any("_PyEval_EvalFrameDefault" in fn for _, fn in first.stats(inclusive=True))
    assert "20 runs per measurement, 1 thread" in repr(first)
    assert first.delta(second).sum() == first.counts() - second.counts()


@pytest.mark.slow
def test_tutorial_shaped_script_prints_torchs_deterministic_tables():
    script = os.path.join(ROOT, "tests", "compat_scripts", "benchmark_timer.py")
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONWARNINGS="ignore")
    runs = [subprocess.run([sys.executable, *args, script], capture_output=True, text=True, env=env, timeout=300)
            for args in ([], ["-m", "lantern.compat"])]
    for run in runs:
        assert run.returncode == 0, run.stderr
    # the first line of a Measurement's repr names its module and address
    outputs = [re.sub(r"<[\w.]+ object at 0x[0-9a-f]+>", "<Measurement>", run.stdout) for run in runs]
    theirs, ours = (out.split("DETERMINISTIC\n", 1) for out in outputs)
    assert ours[1] == theirs[1]
    assert "Times are in" in ours[0] and "vmap" in ours[0]
