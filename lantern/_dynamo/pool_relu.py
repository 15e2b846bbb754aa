"""A captured graph's ReLU before a max pool moved after it: the same values from a quarter of the work.

ReLU is monotone, so the largest of the ReLUs of a window is the ReLU of its largest element:
`max_pool(relu(x)) == relu(max_pool(x))`, exactly (a NaN in the window gives NaN either way). The second form
runs ReLU, and in the backward ReLU's mask, on the pooled tensor — a quarter of the elements for a 2×2 pool —
which eager mode cannot do, because it runs each module as written. Gradients are equal too: where the window's
largest element is positive both forms pick it; where it is not, eager's ReLU zeroes the gradient of every
element of the window, and so does the moved ReLU's mask of the pooled value. Only the pool's indices can differ
(eager's point at the first of the window's zeros), so the pass applies only where nothing reads them. An
in-place `relu_` moves too where nothing else reads its input and that input is a fresh result (a convolution's,
a batch norm's), so no tensor outside the graph sees the change.

>>> import lantern
>>> from lantern.jit.tracer import _trace_graph
>>> f = lambda x: lantern.nn.functional.max_pool2d(x.relu(), 2)
>>> graph, _ = _trace_graph(f, (lantern.randn(1, 1, 4, 4),), signature_of=f)
>>> [n.kind() for n in pool_before_relu(graph).nodes() if n.kind() != "prim::Constant"]
['aten::max_pool2d_with_indices', 'aten::relu']
"""
from ..core.reference import specialisation

__all__ = ["pool_before_relu"]

_MAX_POOLS = {"aten::max_pool1d_with_indices", "aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices"}
_FRESH = {"aten::convolution", "aten::native_batch_norm", "aten::addmm", "aten::add"}  # results no one else holds


def _in_place_on_fresh(relu):
    source = relu.inputs()[0]
    return source.node().kind() in _FRESH and source.offset() == 0 and len(source.uses()) == 1


def _moves(relu):
    """The max pool node `relu` can move after, or None."""
    if not (relu.kind() == "aten::relu" or relu.kind() == "aten::relu_" and _in_place_on_fresh(relu)):
        return None
    if len(relu.output().uses()) != 1:
        return None
    pool = relu.output().uses()[0].user
    if pool.kind() not in _MAX_POOLS or pool.inputs()[0] is not relu.output() or pool.owningBlock() is not \
            relu.owningBlock():
        return None
    return pool if not any(v.hasUses() for v in pool.outputs()[1:]) else None


@specialisation(replaces="a captured graph's relu followed by a max pool, run as written",
                when="torch.compile's ordinary capture (fast paths on), for aten::relu (or relu_ of a fresh "
                     "result nothing else reads) whose only use is a "
                     "max_pool{1,2,3}d_with_indices whose indices nothing reads",
                parity_test="tests/test_compile.py::test_relu_moved_after_max_pool_gives_eagers_values_and_grads")
def pool_before_relu(graph):
    """Rewrite `pool(relu(x))` to `relu(pool(x))` in `graph` (in place), where the rewrite is exact; returns
    `graph`."""
    for relu in list(graph.nodes()):
        pool = _moves(relu)
        if pool is None:
            continue
        pooled, moved = pool.outputs()[0], relu.output()
        pool.replaceInput(0, relu.inputs()[0])
        relu.moveAfter(pool)
        pooled.replaceAllUsesWith(moved)
        relu.replaceInput(0, pooled)
        moved.setType(pooled.type())
    return graph
