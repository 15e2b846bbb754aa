"""The backward engine: runs a graph's nodes once each, in dependency order, without recursion.

1. From the roots, walk the graph (an explicit stack) counting, for every node, how many edges point into it.
2. A node is ready when every edge into it has delivered (its count reaches 0). Ready nodes run highest sequence
   number first (the most recently created), as PyTorch's CPU ready queue does.
3. Each node's incoming gradients are summed in a buffer per input; its outputs are reduced to the shape and
   dtype of the tensor they belong to (broadcast inputs get summed gradients), then passed along its edges.
Saved tensors are freed after a node runs unless `retain_graph`. With `create_graph` the nodes run with grad mode
on, so the gradients themselves get a graph (double backward).

>>> x = lantern.tensor([1., 2.], requires_grad=True)
>>> y = x * x
>>> for _ in range(3):
...     y = y * 1.0
>>> lantern.autograd.grad(y.sum(), x)[0].tolist()
[2.0, 4.0]
"""
import heapq
from sys import getrefcount

from ..core.state import tls
from ..core.tensor_impl import _STRIDES_CACHE
from .accumulate import accumulate_grad
from .graph import AccumulateGrad, gradient_edge

_strides_cache_get = _STRIDES_CACHE.get


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


def run_backward(roots, grad_roots, retain_graph, create_graph, inputs=None, accumulate=True,
                 allow_unused=False):
    """Backpropagate grad_roots from roots. Without `inputs`, accumulate into every leaf's .grad. With `inputs`,
    only what leads to them runs: accumulate=False returns their gradients (autograd.grad); accumulate=True
    accumulates into the leaves among them and returns the gradients of the others (backward(inputs=...))."""
    root_edges = []
    for i, t in enumerate(roots):
        node, nr = gradient_edge(t)
        if node is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        root_edges.append((node, nr))

    root_nodes = {}  # in order, without repeats
    for n, _ in root_edges:
        root_nodes[n] = None
    deps = _dependencies(root_nodes)
    captures = capture_at = needed = None
    if inputs is not None:
        capture_edges = [gradient_edge(t) for t in inputs]
        if any(node is None for node, _ in capture_edges):
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        needed = _needed(deps.keys() | root_nodes.keys(), [n for n, _ in capture_edges])
        captures, capture_at = {}, {}
        for i, (edge, t) in enumerate(zip(capture_edges, inputs)):
            if not (accumulate and t._grad_fn is None):  # leaves among backward's inputs accumulate as usual
                capture_at.setdefault(edge, []).append(i)

    buffers = {}     # node -> its incoming gradients, one slot per input
    shared = set()   # ids of gradients someone outside the engine may hold: a leaf copies them, never keeps them
    for (node, nr), g in zip(root_edges, grad_roots):
        shared.add(id(g))
        if nr == 0 and node not in buffers and len(node._input_meta) <= 1:
            buffers[node] = [g]
        else:
            _deliver(buffers, node, nr, g, shared)
    # the ready queue: highest sequence number first (sequence numbers are unique, so nodes are never compared)
    heap = []
    for node in root_nodes:
        if node not in deps:
            heap.append((-node._seq, node))
    if len(heap) > 1:
        heapq.heapify(heap)
    push, pop = heapq.heappush, heapq.heappop

    prev_mode = tls.grad_enabled
    tls.grad_enabled = create_graph
    watch = tls.dispatch_trace if tls.observed else None  # the profiler / dispatch trace: one range per node
    try:
        while heap:
            node = pop(heap)[1]
            if watch is not None:
                watch.backward_node(node, heap)
            grads = buffers.pop(node, None) or [None] * (len(node._input_meta) or 1)
            if node.__class__ is AccumulateGrad:
                g = grads[0]
                variable = node._variable()
                if (variable is not None and g is not None and captures is None and not node._pre_hooks
                        and not node._hooks and not variable._autograd.hooks):  # the common leaf: accumulate
                    if (variable._grad is None and not tls.grad_enabled and g._stride is variable._stride
                            and g._stride is _strides_cache_get(g._size) and not g._requires_grad
                            and id(g) not in shared and not variable._autograd.post_accumulate_hooks):
                        variable._grad = g  # accumulate_grad's first case, written out
                    else:
                        accumulate_grad(variable, g, id(g) not in shared)
                else:
                    _run_leaf(node, grads, shared, accumulate, needed, captures, capture_at)
                continue
            if node._pre_hooks or node._retains:
                grads = _run_pre_hooks(node, grads, shared)
            if captures is not None:
                _capture(node, grads, captures, capture_at, shared)
                if node not in needed:
                    continue
            if node._hooks is None and grads[0] is not None and not node.returns_user_tensors and not tls.anomaly:
                outs = node.apply(grads)  # _apply's common case, written out
                if not retain_graph:
                    node.release_saved()
            else:
                outs = _apply(node, grads, retain_graph, shared)
            # pass the gradients along the node's edges, conformed to the inputs' shapes and dtypes
            if len(outs) > 1:
                first = outs[0]
                if len(outs) > 2 or (first is outs[1] and first is not None):
                    _mark_repeated(node, outs, shared)
            nr = 0
            for nxt, input_nr in node.next_functions:
                if nxt is not None:
                    g = outs[nr]
                    if g is not None:
                        meta = nxt._input_meta[input_nr]
                        if g._size != meta.shape or g.dtype is not meta.dtype:
                            g = _conform(g, meta, node, nr)
                        buf = buffers.get(nxt)
                        if buf is None:
                            if input_nr == 0 and len(nxt._input_meta) <= 1:
                                buffers[nxt] = [g]
                            else:
                                buf = buffers[nxt] = [None] * (len(nxt._input_meta) or 1)
                                buf[input_nr] = g
                        elif buf[input_nr] is None:
                            buf[input_nr] = g
                        else:
                            _deliver(buffers, nxt, input_nr, g, shared)
                    left = deps[nxt] - 1
                    deps[nxt] = left
                    if left == 0 and (needed is None or nxt in needed or nxt.__class__ is AccumulateGrad):
                        push(heap, (-nxt._seq, nxt))
                nr += 1
    finally:
        tls.grad_enabled = prev_mode
        if watch is not None:
            watch.backward_node(None, heap)

    if captures is None:
        return None
    result = []
    for i, t in enumerate(inputs):
        g = captures.get(i)
        if g is None and not allow_unused:
            raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
        result.append(g)
    return tuple(result)


def _mark_repeated(node, outs, shared):
    """One gradient object sent along two edges is shared: a leaf must not keep it as its .grad."""
    seen = set()
    for (nxt, _), g in zip(node.next_functions, outs):
        if nxt is not None and g is not None:
            if id(g) in seen:
                shared.add(id(g))
            seen.add(id(g))


def _capture(node, grads, captures, capture_at, shared):
    """Keep the gradients autograd.grad returns; they belong to the caller from now on."""
    for nr, g in enumerate(grads):
        for i in capture_at.get((node, nr), ()):
            captures[i] = g
            shared.add(id(g))


def _run_leaf(node, grads, shared, accumulate, needed, captures, capture_at):
    """A leaf's gradient: its tensor hooks run first; then, when it accumulates, the node's pre-hooks, the
    accumulation (and post-accumulate hooks) and the node's post-hooks, in PyTorch's order."""
    variable = node._variable()
    if variable is None:
        return
    meta = variable._autograd
    if meta.hooks and grads[0] is not None:
        for hook in list(meta.hooks.values()):
            shared.add(id(grads[0]))
            new = hook(grads[0])
            if new is not None:
                _check_hook_result(hook, grads[0], new)
                grads = [new]
                shared.add(id(new))
    if captures is not None:
        _capture(node, grads, captures, capture_at, shared)
    if not accumulate or (needed is not None and node not in needed):
        return
    if node._pre_hooks:
        grads = _run_pre_hooks(node, grads, shared)
    g = grads[0]
    if g is None:
        return
    accumulate_grad(variable, g, id(g) not in shared)
    if node._hooks:
        for hook in list(node._hooks.values()):
            hook((), tuple(grads))


def _check_hook_result(hook, old, new):
    name = getattr(hook, "__name__", type(hook).__name__)
    if new._size != old._size:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if new.dtype is not old.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was torch.{old.dtype.legacy}Tensor got "
                           f"torch.{new.dtype.legacy}Tensor)")


def _run_pre_hooks(node, grads, shared):
    """Tensor hooks and node pre-hooks may replace gradients. Hooks may keep what they see, so every gradient
    they saw or returned counts as shared from then on."""
    shared.update(id(g) for g in grads if g is not None)
    hooks = node._pre_hooks
    if hooks:
        for hook in list(hooks.values()):
            new = hook(tuple(grads))
            if new is not None:
                for old_grad, new_grad in zip(grads, new):
                    if old_grad is not None and new_grad is not None and new_grad is not old_grad:
                        _check_hook_result(hook, old_grad, new_grad)
                grads = list(new)
                shared.update(id(g) for g in grads if g is not None)
    retains = node._retains
    if retains:
        for nr, fn in list(retains.items()):
            if grads[nr] is not None:
                fn(grads[nr])
    return grads


def _apply(node, grads, retain_graph, shared):
    if grads[0] is None:
        for g in grads:
            if g is not None:
                break
        else:
            return (None,) * len(node.next_functions)
    if tls.anomaly:
        from .anomaly import run_with_anomaly
        outs = run_with_anomaly(node, grads)
    else:
        outs = node.apply(grads)
    hooks = node._hooks
    if hooks:
        for hook in list(hooks.values()):
            new = hook(tuple(outs), tuple(grads))
            if new is not None:
                outs = tuple(new)
    if hooks or node.returns_user_tensors:
        shared.update(id(g) for g in outs if g is not None)
    if not retain_graph:
        node.release_saved()
    return outs


def _deliver(buffers, node, nr, g, shared):
    """Put g into the node's buffer slot nr, summing with what arrived before."""
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * (len(node._input_meta) or 1)
    old = buf[nr]
    if old is None:
        buf[nr] = g
        return
    buf[nr] = None  # so that the count below sees only this function's reference
    # Like PyTorch's InputBuffer, add in place only into a gradient nothing else holds (its use_count is 1): a
    # formula may have kept it (a saved tensor of a graph being retained), and a hook or a caller may see it.
    if not tls.grad_enabled and _exclusive(old, shared) and getrefcount(old) == 2:
        buf[nr] = old.add_(g)
    elif not tls.grad_enabled and _exclusive(g, shared):
        buf[nr] = g + old  # PyTorch would add into g here: the sum takes g's layout
    else:
        buf[nr] = old + g


def _exclusive(t, shared):
    return id(t) not in shared and t._base is None and t.is_non_overlapping_and_dense()
