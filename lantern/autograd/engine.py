"""The backward engine: runs a graph's nodes once each, in dependency order, without recursion.

One call of `backward()` or `autograd.grad()` is one `GraphTask` (PyTorch's name), which goes through its phases:

1. prepare dependencies: from the roots, walk the graph (an explicit stack) counting, for every node, how many edges
   point into it; for `autograd.grad` / `backward(inputs=...)`, mark the nodes that lead to the inputs;
2. seed: put the root gradients into the roots' input buffers;
3. pop the ready node: a node is ready when every edge into it has delivered (its count reaches 0); ready nodes run
   highest sequence number first (the most recently created), as PyTorch's CPU ready queue does;
4. run it: pre-hooks, the node's backward (its formulas check the saved tensors' versions as they unpack them;
   anomaly mode reports the forward traceback of a node that fails), post-hooks; then its saved tensors are freed
   unless `retain_graph`;
5. deliver gradients: each output is reduced to the shape and dtype of the input it belongs to (broadcast inputs get
   summed gradients) and summed into the next node's buffer;
6. accumulate into leaves: an `AccumulateGrad` node runs the leaf's tensor hooks and adds into `.grad`;
7. finish: the callbacks queued with `queue_callback` during the pass run, then `autograd.grad`'s results return.

With `create_graph` the nodes run with grad mode on, so the gradients themselves get a graph (double backward).

>>> x = lantern.tensor([1., 2.], requires_grad=True)
>>> y = x * x
>>> for _ in range(3):
...     y = y * 1.0
>>> lantern.autograd.grad(y.sum(), x)[0].tolist()
[2.0, 4.0]
"""
import heapq
import threading
from sys import getrefcount

from ..core.reference import mode, specialisation
from ..core.state import tls
from ..core.tensor_impl import _STRIDES_CACHE
from .accumulate import accumulate_grad
from .anomaly import run_with_anomaly
from .graph import AccumulateGrad, gradient_edge


def run_backward(roots, grad_roots, retain_graph, create_graph, inputs=None, accumulate=True,
                 allow_unused=False):
    """Backpropagate grad_roots from roots. Without `inputs`, accumulate into every leaf's .grad. With `inputs`,
    only what leads to them runs: accumulate=False returns their gradients (autograd.grad); accumulate=True
    accumulates into the leaves among them and returns the gradients of the others (backward(inputs=...))."""
    if mode.fast and inputs is None and not create_graph and not tls.observed:
        _fused_plain_pass(roots, grad_roots, retain_graph)  # the same phases, the common cases written in
        return None
    task = GraphTask(retain_graph, create_graph, accumulate)
    root_edges = task.prepare_dependencies(roots, inputs)
    task.seed(root_edges, grad_roots)
    with task:
        while task.ready:
            node, grads = task.pop_ready()
            outs = task.run_node(node, grads)
            task.deliver(node, outs)
        if task.callbacks:
            if task.watch is not None:
                task.watch.backward_node(None, task)   # the last node's range ends before the callbacks run
            task.run_callbacks()
    return task.captured_gradients(inputs, allow_unused) if inputs is not None else None


class GraphTask:
    """The state of one backward pass: dependency counts, the ready queue, the gradients gathered for each node's
    inputs, and what `autograd.grad` captures.

    `shared` holds the ids of gradients someone outside the engine may hold (the seeds, what a hook saw or returned,
    what autograd.grad returns): the engine never adds into them in place and a leaf copies them, never keeps them.
    """

    __slots__ = ("retain_graph", "create_graph", "accumulate", "dependencies", "ready", "buffers", "shared",
                 "needed", "captures", "capture_at", "callbacks", "previous_grad_mode", "watch")

    def __init__(self, retain_graph, create_graph, accumulate):
        self.retain_graph, self.create_graph, self.accumulate = retain_graph, create_graph, accumulate
        self.buffers = {}      # node -> its incoming gradients, one slot per input
        self.shared = set()
        self.needed = self.captures = self.capture_at = None  # set when only the paths to `inputs` run
        self.callbacks = []

    # ---- 1. prepare dependencies ----
    def prepare_dependencies(self, roots, inputs):
        """Count the edges into every node reachable from the roots; the roots nothing points into are ready."""
        root_edges, root_nodes = [], {}  # root_nodes: in order, without repeats
        for i, t in enumerate(roots):
            node, nr = gradient_edge(t)
            if node is None:
                raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
            root_edges.append((node, nr))
            root_nodes[node] = None
        self.dependencies = _dependencies(root_nodes)
        if inputs is not None:
            self._plan_captures(root_nodes, inputs)
        # the ready queue: highest sequence number first (sequence numbers are unique, so nodes are never compared)
        self.ready = []
        for node in root_nodes:
            if node not in self.dependencies:
                heapq.heappush(self.ready, (-node._seq, node))
        return root_edges

    def _plan_captures(self, root_nodes, inputs):
        """Only the nodes that lead to `inputs` need to run; note at which edge each input's gradient is taken."""
        capture_edges = [gradient_edge(t) for t in inputs]
        if any(node is None for node, _ in capture_edges):
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        self.needed = _needed(self.dependencies.keys() | root_nodes.keys(), [n for n, _ in capture_edges])
        self.captures, self.capture_at = {}, {}
        for i, (edge, t) in enumerate(zip(capture_edges, inputs)):
            if not (self.accumulate and t._grad_fn is None):  # leaves among backward's inputs accumulate as usual
                self.capture_at.setdefault(edge, []).append(i)

    # ---- 2. seed ----
    def seed(self, root_edges, grad_roots):
        """The root gradients go into the roots' buffers; the caller still holds them."""
        for (node, nr), g in zip(root_edges, grad_roots):
            self.shared.add(id(g))
            self.add_gradient(node, nr, g)

    # ---- 3. pop the ready node ----
    def pop_ready(self):
        """The ready node created last, with the gradients gathered for its outputs."""
        node = heapq.heappop(self.ready)[1]
        if self.watch is not None:
            self.watch.backward_node(node, self)
        return node, self.buffers.pop(node, None) or [None] * (len(node._input_meta) or 1)

    # ---- 4. run it ----
    def run_node(self, node, grads):
        """The gradients for the node's edges, or None when it passes nothing on (a leaf's node; a node that does
        not lead to autograd.grad's inputs)."""
        if node.__class__ is AccumulateGrad:
            self.accumulate_into_leaf(node, grads)
            return None
        if node._pre_hooks or node._retains:
            grads = self.run_pre_hooks(node, grads)
        if self.captures is not None:
            self.capture(node, grads)
            if node not in self.needed:
                return None
        if grads[0] is None and _no_gradient(grads):
            return (None,) * len(node.next_functions)
        outs = run_with_anomaly(node, grads) if tls.anomaly else node.apply(grads)
        if node._hooks:
            outs = self.run_post_hooks(node, outs, grads)
        elif node.returns_user_tensors:
            self.shared.update(id(g) for g in outs if g is not None)
        if not self.retain_graph:
            node.release_saved()
        return outs

    def run_pre_hooks(self, node, grads):
        """Node pre-hooks (tensor hooks of a non-leaf among them) may replace gradients; retain_grad's callbacks see
        the result. Hooks may keep what they see, so every gradient they saw or returned counts as shared."""
        self.shared.update(id(g) for g in grads if g is not None)
        for hook in list((node._pre_hooks or {}).values()):
            new = hook(tuple(grads))
            if new is not None:
                for old_grad, new_grad in zip(grads, new):
                    if old_grad is not None and new_grad is not None and new_grad is not old_grad:
                        _check_hook_result(hook, old_grad, new_grad)
                grads = list(new)
                self.shared.update(id(g) for g in grads if g is not None)
        for nr, fn in list((node._retains or {}).items()):
            if grads[nr] is not None:
                fn(grads[nr])
        return grads

    def run_post_hooks(self, node, outs, grads):
        """Node hooks see (grad_inputs, grad_outputs); a non-None return replaces grad_inputs."""
        for hook in list(node._hooks.values()):
            new = hook(tuple(outs), tuple(grads))
            if new is not None:
                outs = tuple(new)
        self.shared.update(id(g) for g in outs if g is not None)
        return outs

    def capture(self, node, grads):
        """Keep the gradients autograd.grad returns; they belong to the caller from now on."""
        for nr, g in enumerate(grads):
            for i in self.capture_at.get((node, nr), ()):
                self.captures[i] = g
                self.shared.add(id(g))

    # ---- 5. deliver gradients ----
    def deliver(self, node, outs):
        """Pass each gradient along its edge (deliver_one); a node whose every incoming edge has delivered is
        ready."""
        if outs is None:
            return
        if _may_repeat(outs):
            self._mark_repeated(node, outs)
        dependencies, needed = self.dependencies, self.needed
        for nr, (nxt, input_nr) in enumerate(node.next_functions):
            if nxt is None:
                continue
            if outs[nr] is not None:
                self.deliver_one(node, nr, outs[nr])
            left = dependencies[nxt] = dependencies[nxt] - 1
            # for autograd.grad / backward(inputs=...), a node that leads to no input never runs (a leaf's node
            # does: its tensor hooks fire)
            if left == 0 and (needed is None or nxt in needed or nxt.__class__ is AccumulateGrad):
                heapq.heappush(self.ready, (-nxt._seq, nxt))

    def deliver_one(self, node, nr, g):
        """Gradient g of the node's edge nr, made the shape and dtype of the input it is for (broadcast inputs get
        summed gradients), goes into the next node's buffer."""
        nxt, input_nr = node.next_functions[nr]
        meta = nxt._input_meta[input_nr]
        if g._size != meta.shape or g.dtype is not meta.dtype:
            g = _conform(g, meta, node, nr)
        if nxt in self.buffers or len(nxt._input_meta) > 1:
            self.add_gradient(nxt, input_nr, g)
        else:
            self.buffers[nxt] = [g]  # the first gradient of a one-input node: nothing to add it to

    def _mark_repeated(self, node, outs):
        """One gradient object sent along two edges is shared: a leaf must not keep it as its .grad."""
        seen = set()
        for (nxt, _), g in zip(node.next_functions, outs):
            if nxt is not None and g is not None:
                if id(g) in seen:
                    self.shared.add(id(g))
                seen.add(id(g))

    def add_gradient(self, node, nr, g):
        """Put g into slot nr of the node's buffer, summing with what arrived there before."""
        buf = self.buffers.get(node)
        if buf is None:
            buf = self.buffers[node] = [None] * (len(node._input_meta) or 1)
        if buf[nr] is None:
            buf[nr] = g
        elif tls.grad_enabled:  # create_graph: the sum is part of the new graph
            buf[nr] = buf[nr] + g
        elif _grad_buffer_is_unshared(buf, nr, self.shared):
            buf[nr].add_(g)
        elif _engine_owns(g, self.shared):
            buf[nr] = g + buf[nr]  # PyTorch would add into g here: the sum takes g's layout
        else:
            buf[nr] = buf[nr] + g

    # ---- 6. accumulate into leaves ----
    def accumulate_into_leaf(self, node, grads):
        """A leaf's gradient: its tensor hooks run first; then, when it accumulates, the node's pre-hooks, the
        accumulation (and post-accumulate hooks) and the node's post-hooks, in PyTorch's order."""
        variable = node._variable()
        if variable is None:
            return
        if variable._autograd.hooks and grads[0] is not None:
            grads = self._run_tensor_hooks(variable, grads)
        if self.captures is not None:
            self.capture(node, grads)
        if not self.accumulate or (self.needed is not None and node not in self.needed):
            return
        if node._pre_hooks:
            grads = self.run_pre_hooks(node, grads)
        g = grads[0]
        if g is None:
            return
        accumulate_grad(variable, g, id(g) not in self.shared)
        for hook in list((node._hooks or {}).values()):
            hook((), tuple(grads))

    def _run_tensor_hooks(self, variable, grads):
        for hook in list(variable._autograd.hooks.values()):
            self.shared.add(id(grads[0]))
            new = hook(grads[0])
            if new is not None:
                _check_hook_result(hook, grads[0], new)
                grads = [new]
                self.shared.add(id(new))
        return grads

    # ---- 7. finish ----
    def __enter__(self):
        """Grad mode is create_graph while nodes run; the profiler / dispatch trace opens one range per node."""
        self.previous_grad_mode = tls.grad_enabled
        tls.grad_enabled = self.create_graph
        self.watch = tls.dispatch_trace if tls.observed else None
        _running.tasks.append(self)
        return self

    def __exit__(self, *exc):
        _running.tasks.pop()
        tls.grad_enabled = self.previous_grad_mode
        if self.watch is not None:
            self.watch.backward_node(None, self)

    def run_callbacks(self):
        """The callbacks queued during the pass, in order (one may queue more: they run too)."""
        for callback in self.callbacks:
            callback()

    def captured_gradients(self, inputs, allow_unused):
        """autograd.grad's result (backward(inputs=...)'s gradients of non-leaves): one gradient per input."""
        result = []
        for i in range(len(inputs)):
            g = self.captures.get(i)
            if g is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            result.append(g)
        return tuple(result)


@specialisation(
    replaces="autograd engine: run_backward's GraphTask phases (seed, enter, pop_ready -> run_node -> deliver, "
             "accumulate_into_leaf, exit)",
    when="a plain backward pass (no inputs=, no create_graph, no profiler or trace watching), outside reference "
         "mode; a node with hooks, retain_grad, a user Function's tensors, no gradient or anomaly mode on, a leaf "
         "with hooks or a .grad already, and a gradient to reshape or sum still go through GraphTask's own phases",
    parity_test="tests/test_engine_phases.py::test_fused_loop_matches_the_phases")
def _fused_plain_pass(roots, grad_roots, retain_graph):
    """run_backward for a plain pass, with GraphTask's seed, __enter__ and __exit__ written in and the loop in
    _fused_run_ready_nodes. Each Python call saved is ~0.1 µs, and small graphs are all calls."""
    task = GraphTask(retain_graph, False, True)
    root_edges = task.prepare_dependencies(roots, None)
    for (node, nr), g in zip(root_edges, grad_roots):
        task.shared.add(id(g))
        if node in task.buffers:
            task.add_gradient(node, nr, g)
        else:
            task.buffers[node] = [None] * (len(node._input_meta) or 1)
            task.buffers[node][nr] = g
    previous_grad_mode, tls.grad_enabled, task.watch = tls.grad_enabled, False, None
    _running.tasks.append(task)
    try:
        _fused_run_ready_nodes(task)
        if task.callbacks:
            task.run_callbacks()
    finally:
        _running.tasks.pop()
        tls.grad_enabled = previous_grad_mode


def _fused_run_ready_nodes(task):
    """run_backward's loop with the common cases of its phases written in: a node without hooks runs straight
    through node.apply, a leaf without hooks takes its first gradient as .grad (accumulate_grad's first case), and
    a gradient of the right shape and dtype for a one-input node is put in its buffer (deliver's)."""
    ready, buffers, dependencies = task.ready, task.buffers, task.dependencies
    while ready:
        node = heapq.heappop(ready)[1]
        grads = buffers.pop(node, None) or [None] * (len(node._input_meta) or 1)
        if node.__class__ is AccumulateGrad:
            if not _takes_first_gradient(node, grads[0], task.shared):
                task.accumulate_into_leaf(node, grads)
            continue
        if (node._pre_hooks or node._retains or node._hooks or node.returns_user_tensors or grads[0] is None
                or tls.anomaly):
            task.deliver(node, task.run_node(node, grads))
            continue
        outs = node.apply(grads)
        if not task.retain_graph:
            node.release_saved()
        if len(outs) > 2 or len(outs) == 2 and outs[0] is outs[1] is not None:  # _may_repeat(outs), written in
            task._mark_repeated(node, outs)
        for nr, (nxt, input_nr) in enumerate(node.next_functions):
            if nxt is None:
                continue
            g = outs[nr]
            if g is not None:
                meta = nxt._input_meta[input_nr]
                if g._size != meta.shape or g.dtype is not meta.dtype or nxt in buffers or len(nxt._input_meta) > 1:
                    task.deliver_one(node, nr, g)
                else:
                    buffers[nxt] = [g]
            left = dependencies[nxt] = dependencies[nxt] - 1
            if left == 0:
                heapq.heappush(ready, (-nxt._seq, nxt))


def _takes_first_gradient(node, g, shared):
    """accumulate_grad's first case for a leaf without hooks: its first gradient g, row-major and held only by the
    engine, becomes its .grad as it is. False, having done nothing, for every other case."""
    variable = node._variable()
    if (variable is None or g is None or variable._grad is not None or node._pre_hooks or node._hooks
            or variable._autograd.hooks or variable._autograd.post_accumulate_hooks or g._requires_grad
            or g._stride is not variable._stride or g._stride is not _STRIDES_CACHE.get(g._size) or id(g) in shared):
        return False
    variable._grad = g
    return True


class _RunningTasks(threading.local):
    """The graph tasks running on this thread, innermost last (a hook may call backward again)."""

    def __init__(self):
        self.tasks = []


_running = _RunningTasks()


def queue_callback(callback):
    """Run `callback()` when the backward pass now running has finished (PyTorch's
    `Variable._execution_engine.queue_callback`); only a hook or node that runs inside backward can queue one."""
    if not _running.tasks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _running.tasks[-1].callbacks.append(callback)


class ExecutionEngine:
    """What `torch.autograd.Variable._execution_engine` offers programs: queue_callback."""

    queue_callback = staticmethod(queue_callback)


def _dependencies(roots):
    """{node: number of edges into it} for every node reachable from the roots (a dict or set of nodes; roots
    only if an edge enters)."""
    deps = {}
    stack = list(roots)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None:
                continue
            n = deps.get(nxt)
            if n is None:
                deps[nxt] = 1
                if nxt not in roots:
                    stack.append(nxt)
            else:
                deps[nxt] = n + 1
    return deps


def _needed(reachable, targets):
    """The nodes from which some target node can be reached (only they need to run for autograd.grad)."""
    parents = {}
    for node in reachable:
        for nxt, _ in node.next_functions:
            if nxt is not None:
                parents.setdefault(nxt, []).append(node)
    needed = set()
    stack = [t for t in targets if t in reachable]
    needed.update(stack)
    while stack:
        node = stack.pop()
        for p in parents.get(node, ()):
            if p not in needed:
                needed.add(p)
                stack.append(p)
    return needed


def _may_repeat(outs):
    """Might one gradient object go along two of a node's edges? (Two outputs: only if they are the same object.)"""
    return len(outs) > 2 or len(outs) == 2 and outs[0] is outs[1] is not None


def _no_gradient(grads):
    return all(g is None for g in grads)


def _conform(grad, meta, node, nr):
    """Reduce a gradient to its tensor's shape (undoing broadcasting) and cast it to its dtype."""
    if grad._size != meta.shape:
        if not _expandable(meta.shape, grad._size):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {nr} - got "
                               f"{list(grad._size)} but expected shape compatible with {list(meta.shape)}")
        grad = grad.sum_to_size(meta.shape)
    if grad.dtype is not meta.dtype:
        if grad.dtype.is_complex and not meta.dtype.is_complex:  # a real input of a complex op
            grad = grad.real
        grad = grad.to(meta.dtype)
    return grad


def _expandable(shape, target):
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != t and s != 1:
            return False
    return True


def _check_hook_result(hook, old, new):
    name = getattr(hook, "__name__", type(hook).__name__)
    if new._size != old._size:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if new.dtype is not old.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was torch.{old.dtype.legacy}Tensor got "
                           f"torch.{new.dtype.legacy}Tensor)")


def _grad_buffer_is_unshared(buf, nr, shared):
    """May the gradient in buf[nr] be added into in place? Only if nothing but the buffer can see it, like PyTorch's
    InputBuffer, which adds in place only into a gradient whose use_count() is 1:

    - the buffer slot is the only reference to it (`_only_the_slot_refers_to`): a formula may have kept it (a
      saved tensor of a graph being retained), or a node may still hold it;
    - the engine owns it (`_engine_owns`): no hook, caller or autograd.grad result has seen it, and it is a dense
      tensor of its own, no view into another's memory.
    """
    return _only_the_slot_refers_to(buf, nr) and _engine_owns(buf[nr], shared)


def _only_the_slot_refers_to(buf, nr):
    """Is the list slot buf[nr] the only reference to the object in it? (CPython's reference count.)"""
    return getrefcount(buf[nr]) == _SLOT_ONLY_REFCOUNT


def _refcount_of_an_object_only_a_slot_holds():
    """What getrefcount(buf[nr]) reads for an object that only the list holds, measured the same way (2 on CPython
    3.11: the slot and getrefcount's own argument)."""
    buf = [object()]
    return getrefcount(buf[0])


_SLOT_ONLY_REFCOUNT = _refcount_of_an_object_only_a_slot_holds()


def _engine_owns(t, shared):
    """No one outside the engine has seen `t` (its id is not in `shared`), and it is a dense tensor of its own."""
    return id(t) not in shared and t._base is None and t.is_non_overlapping_and_dense()
