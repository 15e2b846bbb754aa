"""Watching the dispatcher: `with lantern.debug.trace_dispatch():` (or LANTERN_TRACE=dispatch) prints each call.

One line per op call: the op, the dispatch keys it went through and why, the kernel chosen, the inputs' shapes,
strides and dtypes, and whether the result is a view of an input.

>>> import sys
>>> with lantern.debug.trace_dispatch() as log:
...     _ = lantern.ones(2, 3).t()
>>> print(log.lines[-1])  # doctest: +ELLIPSIS
t  keys=[CPU: inputs are on cpu]  kernel=CPU/view:views._t_meta  in=(float32[2, 3] stride=(3, 1))  -> float32[3, 2] stride=(1, 3) view of input 0

Calls made while another runs are indented beneath it, the outer call's line printed when it starts and its result
on a `<-` line when it ends. Composite ops (written in Python over other ops, like matmul and nn.functional.linear)
are outer calls too, their line saying which function implements them:

>>> x = lantern.ones(3)
>>> with lantern.debug.trace_dispatch(stream=sys.stdout):
...     _ = lantern.matmul(x, x)  # doctest: +ELLIPSIS
matmul  composite=linalg_products.matmul  in=(float32[3] stride=(1,), float32[3] stride=(1,))
  dot  keys=[CPU: inputs are on cpu]  kernel=CPU/structured:...  -> float32[] stride=()
<- matmul  -> float32[] stride=()

Each backward node is a `backward: <node>` header with the ops it ran beneath it, and
`lantern.profiler.record_function` ranges are headers too. `ops=` keeps only the ops named (exact names, or
fnmatch patterns such as "add*"); `summary=True` prints a table of calls per op and kernel at the end instead:

>>> a = lantern.ones(3, requires_grad=True)
>>> with lantern.debug.trace_dispatch(stream=sys.stdout, ops=["mul", "sum"]):
...     (a * a).sum().backward()  # doctest: +ELLIPSIS
mul  keys=[Autograd: an input requires grad and grad mode is on, CPU: inputs are on cpu]  kernel=...
sum  keys=[Autograd: an input requires grad and grad mode is on, CPU: inputs are on cpu]  kernel=...
backward: MulBackward0
  mul  keys=[CPU: inputs are on cpu]  kernel=CPU/structured:...  in=(float32[3] stride=(0,), ...)  -> float32[3] stride=(1,)
  mul  keys=[CPU: inputs are on cpu]  kernel=CPU/structured:...  in=(float32[3] stride=(0,), ...)  -> float32[3] stride=(1,)
"""
import atexit
import contextlib
import fnmatch
import os
import sys
from time import perf_counter_ns

from .core.dispatch_keys import DispatchKey
from .core.tensor_impl import TensorImpl
from .ops import dispatcher
from .ops.op_kinds import OpKind
from .profiler.table import format_time
from .profiler.watchers import Watcher, install, overload_frontend, remove


def _describe(x):
    if isinstance(x, TensorImpl):
        rg = " requires_grad" if x.requires_grad else ""
        dev = "" if x.device.type == "cpu" else f" {x.device}"
        if x.layout.name != "strided":
            return f"{x.layout.name} {x.dtype.name}{list(x._size)} nnz={x._nnz()}{rg}"
        return f"{x.dtype.name}{list(x._size)} stride={x._stride}{dev}{rg}"
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], TensorImpl):
        return "[" + ", ".join(_describe(t) for t in x) + "]"
    text = repr(x)
    return text if len(text) <= 24 else text[:21] + "..."


def _rule_name(rule):
    return f"{rule.__module__.rpartition('.')[2]}.{rule.__qualname__.replace('.<locals>', '')}"


def _kernel_name(op, key):
    """Which code runs: the backend's runner for the op's kind, and the op's own impl or meta function (the
    Meta backend runs only meta functions); a sparse layout's key, and a lantern.library op, run the kernel
    registered for them."""
    if key is DispatchKey.Python:  # a __torch_dispatch__ handler runs (lantern/ops/python_key.py)
        return "Python:python_key.python_key_kernel (__torch_dispatch__)"
    if key is DispatchKey.FuncTorchBatched:  # vmap's layer: the op's batching rule, or the per-example fallback
        return f"FuncTorchBatched:{'fallback' if op.batch_rule is None else _rule_name(op.batch_rule)}"
    runner = op.kernels.get(key)
    sparse_kernel = getattr(runner, "sparse_kernel", None) or getattr(runner, "library_kernel", None)
    if sparse_kernel is not None:
        name = sparse_kernel.__qualname__.replace(".<locals>", "")
        return f"{key.name}:{sparse_kernel.__module__.rpartition('.')[2]}.{name}"
    meta_only = key.name == "Meta" or op.impl is None or op.kind is OpKind.VIEW
    fn = (op.meta_kernel if op.kind is OpKind.CUSTOM else op.meta) if meta_only else op.impl
    name = fn.__qualname__.replace(".<locals>", "") if fn is not None else "?"
    where = f"{fn.__module__.rpartition('.')[2]}.{name}" if fn is not None else "?"
    return f"{key.name}/{op.kind}:{where}"


def _view_of(result, args):
    if not isinstance(result, TensorImpl):
        return ""
    for i, a in enumerate(args):
        if isinstance(a, TensorImpl) and a._storage is result._storage:
            return f" view of input {i}" if a is not result else f" in place on input {i}"
    return ""


def _outputs(result, args):
    outs = result if isinstance(result, tuple) else (result,)
    return ", ".join(_describe(o) for o in outs) + _view_of(result, args)


class _NameFilter:
    """Which op names to show: exact names (with or without the overload, "add" covers "add.out") or fnmatch
    patterns; decided once per name."""

    def __init__(self, names):
        self.names = set(names)
        self.patterns = [n for n in self.names if any(c in n for c in "*?[")]
        self.known = {}

    def __call__(self, name):
        wanted = self.known.get(name)
        if wanted is None:
            base = name.partition(".")[0]
            wanted = self.known[name] = (name in self.names or base in self.names or any(
                fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(base, p) for p in self.patterns))
        return wanted


class _Frame:
    """A call or range still running: its opening text, its depth, and whether that text is printed yet."""

    __slots__ = ("text", "depth", "printed", "is_range", "engine")

    def __init__(self, text, depth, is_range=False, engine=None):
        self.text, self.depth, self.printed, self.is_range, self.engine = text, depth, False, is_range, engine


class DispatchTrace(Watcher):
    """Collects (and prints) one line per dispatched call, nested calls indented beneath their caller.

    `lines` holds what was printed. With summary=True nothing is printed per call; `summary_table()` (printed
    when the trace ends) counts the calls and their total time per op, dispatch keys and kernel."""

    def __init__(self, stream=None, ops=None, summary=False):
        self.streams = [stream] if stream is not None else []
        self.wanted = _NameFilter(ops) if ops else None
        self.summary = summary
        self.lines = []
        self.frames = []
        self.counts = {}   # (op name, keys, kernel) -> [calls, total ns]

    def write(self, line):
        self.lines.append(line)
        for stream in self.streams:
            print(line, file=stream)

    def _open_parents(self):
        """Something nested is printed: first print every enclosing call's opening line not printed yet."""
        for frame in self.frames:
            if not frame.printed:
                frame.printed = True
                self.write("  " * frame.depth + frame.text)

    def around(self, op, args, run):
        if self.wanted is not None and not self.wanted(op.name):
            return super().around(op, args, run)
        keys = dispatcher.explain_keys(op, args)
        kernel = _kernel_name(op, next((k for k, _ in keys if k is DispatchKey.Python), keys[-1][0]))
        if self.summary:
            return self._count(op.name, "+".join(k.name for k, _ in keys), kernel,
                               lambda: super(DispatchTrace, self).around(op, args, run))
        key_text = ", ".join(f"{k.name}: {why}" for k, why in keys)
        inputs = ", ".join(_describe(a) for a in args)
        self._open_parents()
        frame = _Frame(f"{op.name}  keys=[{key_text}]  kernel={kernel}  in=({inputs})", len(self.frames))
        self.frames.append(frame)
        try:
            result = super().around(op, args, run)
        except BaseException as error:
            self._close(frame, f"raised {type(error).__name__}", op.name)
            raise
        self._close(frame, _outputs(result, args), op.name)
        return result

    def composite(self, name, fn, args, kwargs):
        if overload_frontend(name) or self.wanted is not None and not self.wanted(name):
            return super().composite(name, fn, args, kwargs)
        kernel = f"{fn.__module__.rpartition('.')[2]}.{fn.__qualname__.replace('.<locals>', '')}"
        run = lambda: super(DispatchTrace, self).composite(name, fn, args, kwargs)  # noqa: E731
        if self.summary:
            return self._count(name, "CompositeImplicitAutograd", kernel, run)
        inputs = ", ".join([_describe(a) for a in args] +
                           [f"{k}={_describe(v)}" for k, v in kwargs.items() if v is not None])  # out=None: unsaid
        self._open_parents()
        frame = _Frame(f"{name}  composite={kernel}  in=({inputs})", len(self.frames))
        self.frames.append(frame)
        try:
            result = run()
        except BaseException as error:
            self._close(frame, f"raised {type(error).__name__}", name)
            raise
        self._close(frame, _outputs(result, args), name)
        return result

    def _close(self, frame, outcome, name):
        self.frames.pop()
        indent = "  " * frame.depth
        if frame.printed:
            self.write(f"{indent}<- {name}  -> {outcome}")
        else:
            self.write(f"{indent}{frame.text}  -> {outcome}")

    def _count(self, name, keys, kernel, run):
        key = (name, keys, kernel)
        row = self.counts.get(key)
        if row is None:
            row = self.counts[key] = [0, 0]
        start = perf_counter_ns()
        try:
            return run()
        finally:
            row[0] += 1
            row[1] += perf_counter_ns() - start

    def _enter(self, text, name, engine=None):
        if self.summary:
            return
        frame = _Frame(text, len(self.frames), True, engine)
        # a range named by the filter is shown even when nothing beneath it is
        if self.wanted is None or self.wanted(name):
            self._open_parents()
            frame.printed = True
            self.write("  " * frame.depth + text)
        self.frames.append(frame)

    def _exit(self, engine=None):
        frames = self.frames
        if frames and frames[-1].is_range and frames[-1].engine == engine:
            frames.pop()

    def backward_node(self, node, engine):
        self._exit(id(engine))
        if node is not None:
            leaf = getattr(node, "variable", None)   # AccumulateGrad: the leaf whose .grad it adds to
            into = f"  into {_describe(leaf)}" if isinstance(leaf, TensorImpl) else ""
            self._enter(f"backward: {node.name()}{into}", node.name(), id(engine))
        super().backward_node(node, engine)

    def enter_range(self, name):
        self._enter(f"record_function: {name}", name)
        super().enter_range(name)

    def exit_range(self, name):
        super().exit_range(name)
        self._exit()

    def summary_table(self):
        """Calls and total time (nested calls included) per op, dispatch keys and kernel, most calls first."""
        rows = sorted(self.counts.items(), key=lambda item: -item[1][0])
        header = ("op", "keys", "kernel", "calls", "total time")
        body = [(name, keys, kernel, str(calls), format_time(ns / 1000.0)) for (name, keys, kernel), (calls, ns)
                in rows]
        widths = [max(len(r[i]) for r in [header] + body) for i in range(5)]
        fmt = "{:<%d}  {:<%d}  {:<%d}  {:>%d}  {:>%d}" % tuple(widths)
        rule = "-" * (sum(widths) + 8)
        return "\n".join([fmt.format(*header), rule] + [fmt.format(*r) for r in body])

    def finish(self):
        """Print the summary table (summary mode); called when the trace ends."""
        if self.summary:
            for line in self.summary_table().split("\n"):
                self.write(line)


@contextlib.contextmanager
def trace_dispatch(stream=None, ops=None, file=None, summary=False):
    """Print and collect a line for every dispatched op call in this thread.

    stream: where lines go (default stderr, or only `file` when a file path is given); ops: op names or fnmatch
    patterns to show (default all); file: a path to write the lines to; summary: print a table of calls per
    op and kernel when the block ends, instead of a line per call."""
    with contextlib.ExitStack() as stack:
        streams = [stream] if stream is not None else ([] if file is not None else [sys.stderr])
        if file is not None:
            streams.append(stack.enter_context(open(file, "w")))
        trace = DispatchTrace(ops=ops, summary=summary)
        trace.streams = streams
        install(trace)
        try:
            yield trace
        finally:
            remove(trace)
            trace.finish()


def _trace_from_environment(mode):
    """LANTERN_TRACE=dispatch prints every call of the main thread to stderr; LANTERN_TRACE=dispatch-summary
    prints the summary table when the program exits."""
    if mode in ("dispatch", "dispatch-summary"):
        trace = install(DispatchTrace(sys.stderr, summary=mode == "dispatch-summary"))
        atexit.register(trace.finish)


_trace_from_environment(os.environ.get("LANTERN_TRACE"))
