"""The chain of dispatch watchers: how the profiler and the dispatch trace see every call, together.

The dispatcher's slow path calls `tls.dispatch_trace.around(op, args, run)`; a composite op (one written in Python
over other ops, lantern.ops.registry.composite) calls `composite(name, fn, args, kwargs)`; the backward engine calls
`backward_node(node, engine)` as each node starts (and `backward_node(None, engine)` when it is done), and
`record_function` calls `enter_range(name)` / `exit_range(name)`. A watcher does its bookkeeping and hands the call
on to the next watcher in the chain (`inner`); the last one runs the kernel. Watchers that measure time sit nearest
the kernel, so that what another watcher does (formatting a trace line, say) is not counted in their times.

>>> from lantern.core.state import tls
>>> class Counter(Watcher):
...     calls = 0
...     def around(self, op, args, run):
...         self.calls += 1
...         return super().around(op, args, run)
>>> counter = install(Counter())
>>> _ = lantern.ones(2) + 1
>>> remove(counter)
>>> counter.calls, tls.dispatch_trace is None
(2, True)
"""
from ..core.state import tls
from ..ops import registry


def _count_chain(change):
    """This thread's chain became non-empty (+1) or empty (-1): composite ops test `registry.watched` first."""
    registry.count_watching("watchers", change)


_frontends = {}


def overload_frontend(name):
    """Whether the composite `name` is the frontend of an op of the same name that picks one of its overloads
    (sort, std, bernoulli_): PyTorch shows such a call as that op alone, so watchers pass it through unseen."""
    known = _frontends.get(name)
    if known is None:
        prefix = name + "."
        known = _frontends[name] = name in registry.REGISTRY or any(k.startswith(prefix) for k in registry.REGISTRY)
    return known


class Watcher:
    """A link in this thread's chain of dispatch watchers; every hook passes the call on unchanged."""

    measures_time = False
    inner = None

    def around(self, op, args, run):
        """Run one dispatched call (`run()` computes it); return its result."""
        inner = self.inner
        return run() if inner is None else inner.around(op, args, run)

    def composite(self, name, fn, args, kwargs):
        """Run one call of the composite op `name` (`fn(*args, **kwargs)`, which dispatches other ops); return its
        result."""
        inner = self.inner
        return fn(*args, **kwargs) if inner is None else inner.composite(name, fn, args, kwargs)

    def backward_node(self, node, engine):
        """The engine run `engine` starts `node` (None: its last node is done); the previous node it ran ends."""
        if self.inner is not None:
            self.inner.backward_node(node, engine)

    def enter_range(self, name):
        """A `record_function(name)` range opens."""
        if self.inner is not None:
            self.inner.enter_range(name)

    def exit_range(self, name):
        """The `record_function(name)` range closes."""
        if self.inner is not None:
            self.inner.exit_range(name)


def install(watcher):
    """Add `watcher` to this thread's chain (outermost, or just outside the other timing watchers); return it."""
    head = tls.dispatch_trace
    if head is None:
        _count_chain(1)
    if not watcher.measures_time or head is None or head.measures_time:
        watcher.inner = head
        tls.dispatch_trace = watcher
    else:
        outer = head
        while outer.inner is not None and not outer.inner.measures_time:
            outer = outer.inner
        watcher.inner = outer.inner
        outer.inner = watcher
    tls.refresh()
    return watcher


def remove(watcher):
    """Take `watcher` out of this thread's chain, wherever it sits."""
    head = tls.dispatch_trace
    if tls.dispatch_trace is watcher:
        tls.dispatch_trace = watcher.inner
    else:
        outer = tls.dispatch_trace
        while outer is not None and outer.inner is not watcher:
            outer = outer.inner
        if outer is not None:
            outer.inner = watcher.inner
    watcher.inner = None
    if tls.dispatch_trace is None and head is not None:
        _count_chain(-1)
    tls.refresh()
