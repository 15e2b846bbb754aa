"""Watching the dispatcher: `with lantern.debug.trace_dispatch():` (or LANTERN_TRACE=dispatch) prints each call.

One line per op call: the op, the dispatch keys it went through and why, the kernel chosen, the inputs' shapes,
strides and dtypes, and whether the result is a view of an input.

>>> with lantern.debug.trace_dispatch() as log:
...     _ = lantern.ones(2, 3).t()
>>> print(log.lines[-1])  # doctest: +ELLIPSIS
t  keys=[CPU: inputs are on cpu]  kernel=CPU/view:views._t_meta  in=(float32[2, 3] stride=(3, 1))  -> float32[3, 2] stride=(1, 3) view of input 0
"""
import contextlib
import os
import sys

from .core.state import tls
from .core.tensor_impl import TensorImpl
from .ops import dispatcher


def _describe(x):
    if isinstance(x, TensorImpl):
        rg = " requires_grad" if x.requires_grad else ""
        dev = "" if x.device.type == "cpu" else f" {x.device}"
        return f"{x.dtype.name}{list(x._size)} stride={x._stride}{dev}{rg}"
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], TensorImpl):
        return "[" + ", ".join(_describe(t) for t in x) + "]"
    text = repr(x)
    return text if len(text) <= 24 else text[:21] + "..."


def _kernel_name(op, key):
    """Which code runs: the backend's runner for the op's kind, and the op's own impl or meta function."""
    fn = op.impl if op.impl is not None and op.kind != "view" else op.meta
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


class DispatchTrace:
    """Collects (and prints) one line per dispatched call; nested calls are indented."""

    def __init__(self, stream=None, ops=None):
        self.stream = stream
        self.ops = set(ops) if ops else None
        self.lines = []
        self.depth = 0

    def around(self, op, args, run):
        keys = dispatcher.explain_keys(op, args)
        self.depth += 1
        try:
            result = run()
        finally:
            self.depth -= 1
        if self.ops is None or op.name in self.ops:
            self.emit(op, args, keys, result)
        return result

    def emit(self, op, args, keys, result):
        key_text = ", ".join(f"{k.name}: {why}" for k, why in keys)
        inputs = ", ".join(_describe(a) for a in args)
        outs = result if isinstance(result, tuple) else (result,)
        out_text = ", ".join(_describe(o) for o in outs)
        line = (f"{'  ' * self.depth}{op.name}  keys=[{key_text}]  kernel={_kernel_name(op, keys[-1][0])}  "
                f"in=({inputs})  -> {out_text}{_view_of(result, args)}")
        self.lines.append(line)
        if self.stream is not None:
            print(line, file=self.stream)


@contextlib.contextmanager
def trace_dispatch(stream=None, ops=None):
    """Print (to `stream`, default stderr) and collect a line for every dispatched op call in this thread."""
    previous = tls.dispatch_trace
    trace = DispatchTrace(stream if stream is not None else sys.stderr, ops)
    tls.dispatch_trace = trace
    tls.refresh()
    try:
        yield trace
    finally:
        tls.dispatch_trace = previous
        tls.refresh()


if os.environ.get("LANTERN_TRACE") == "dispatch":
    tls.dispatch_trace = DispatchTrace(sys.stderr)
    tls.refresh()
