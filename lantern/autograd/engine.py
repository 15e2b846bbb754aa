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

from ..core.state import tls
from .accumulate import accumulate_grad
from .graph import AccumulateGrad
from .meta import gradient_edge


class _Buffer:
    """Gradients arriving at one node, one slot per node input; `owned` marks sums the engine made itself."""

    __slots__ = ("grads", "owned")

    def __init__(self, n):
        self.grads = [None] * n
        self.owned = [True] * n

    def add(self, nr, grad, owned):
        old = self.grads[nr]
        if old is None:
            self.grads[nr] = grad
            self.owned[nr] = owned
        else:
            self.grads[nr] = old + grad
            self.owned[nr] = True


def _conform(grad, meta, node, nr):
    """Reduce a gradient to its tensor's shape (undoing broadcasting) and cast it to its dtype."""
    if grad._size != meta.shape:
        if not _expandable(meta.shape, grad._size):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {nr} - got "
                               f"{list(grad._size)} but expected shape compatible with {list(meta.shape)}")
        grad = grad.sum_to_size(meta.shape)
    if grad.dtype is not meta.dtype:
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
    """{node: number of edges into it} over everything reachable from the root nodes."""
    deps = {}
    seen = set()
    stack = [n for n in roots if n is not None]
    for n in stack:
        seen.add(n)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, seen


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
    """Backpropagate grad_roots from roots. With `inputs`, return their gradients (accumulate=False) or
    accumulate only into them."""
    root_edges = []
    for i, t in enumerate(roots):
        node, nr = gradient_edge(t)
        if node is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        root_edges.append((node, nr))

    deps, reachable = _dependencies([n for n, _ in root_edges])
    captures = None
    needed = None
    if inputs is not None:
        capture_edges = [gradient_edge(t) for t in inputs]
        for i, (node, _) in enumerate(capture_edges):
            if node is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
        captures = {}
        needed = _needed(reachable, [n for n, _ in capture_edges])
        capture_at = {}
        for i, edge in enumerate(capture_edges):
            capture_at.setdefault(edge, []).append(i)

    buffers = {}
    heap = []
    for (node, nr), g in zip(root_edges, grad_roots):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = _Buffer(len(node._input_meta) or 1)
        buf.add(nr, g, False)
    for node in {n for n, _ in root_edges}:
        if deps.get(node, 0) == 0:
            heapq.heappush(heap, (-node._seq, id(node), node))

    prev_mode = tls.grad_enabled
    tls.grad_enabled = create_graph
    try:
        while heap:
            _, _, node = heapq.heappop(heap)
            buf = buffers.pop(node, None)
            grads = buf.grads if buf is not None else [None] * max(len(node._input_meta), 1)
            owned = buf.owned if buf is not None else [True] * len(grads)
            if node._pre_hooks or node._retains:
                grads, owned = _run_pre_hooks(node, grads, owned)
            if captures is not None:
                for nr, g in enumerate(grads):
                    for i in capture_at.get((node, nr), ()):
                        captures[i] = g
            if isinstance(node, AccumulateGrad):
                if inputs is None and grads[0] is not None:
                    accumulate_grad(node.variable, grads[0], owned[0])
                continue
            if needed is not None and node not in needed:
                continue
            outs = _apply(node, grads, retain_graph)
            unowned = {id(g) for g, o in zip(grads, owned) if g is not None and not o} if False in owned else ()
            _release_to_next(node, outs, buffers, deps, heap, needed, unowned)
    finally:
        tls.grad_enabled = prev_mode

    if captures is None:
        return None
    result = []
    for i, t in enumerate(inputs):
        g = captures.get(i)
        if g is None and not allow_unused:
            raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
        result.append(g)
    return tuple(result)


def _run_pre_hooks(node, grads, owned):
    """Tensor hooks and node pre-hooks may replace gradients; a replacement belongs to whoever returned it."""
    hooks = node._pre_hooks
    if hooks:
        for hook in list(hooks.values()):
            new = hook(tuple(grads))
            if new is not None:
                grads, owned = list(new), [False] * len(new)
    retains = node._retains
    if retains:
        for nr, fn in list(retains.items()):
            if grads[nr] is not None:
                fn(grads[nr])
    return grads, owned


def _apply(node, grads, retain_graph):
    for g in grads:
        if g is not None:
            break
    else:
        return (None,) * len(node.next_functions)
    if node._trace is not None:
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
    if not retain_graph:
        release = getattr(node, "release_saved", None)
        if release is not None:
            release()
    return outs


def _release_to_next(node, outs, buffers, deps, heap, needed, unowned):
    """Pass a node's output gradients along its edges. A gradient object sent along two edges, or one the node
    got from outside the engine (a user's seed), is not owned: a leaf must copy it rather than keep it."""
    seen = set(unowned)
    for nr, ((nxt, input_nr), g) in enumerate(zip(node.next_functions, outs)):
        if nxt is None:
            continue
        if g is not None:
            owned = id(g) not in seen
            seen.add(id(g))
            meta = nxt._input_meta[input_nr]
            if g._size != meta.shape or g.dtype is not meta.dtype:
                g = _conform(g, meta, node, nr)
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = _Buffer(len(nxt._input_meta))
            buf.add(input_nr, g, owned)
        left = deps[nxt] - 1
        deps[nxt] = left
        if left == 0 and (needed is None or nxt in needed or isinstance(nxt, AccumulateGrad)):
            heapq.heappush(heap, (-nxt._seq, id(nxt), nxt))

