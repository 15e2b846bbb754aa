"""lantern.inspect.autograd_graph: structure against torch's grad_fn graph, saved tensors, leaves, the pictures."""
import re

import numpy as np
import pytest
import torch
from PIL import Image

import lantern
from lantern.inspect import AutogradGraph, autograd_graph
from test_autograd_function import make_exp


def _walk(fn, seen):
    """(type name, [(child, input_nr)]) from a grad_fn, nodes met before given as ('ref', k): same for both."""
    if fn is None:
        return None
    if fn in seen:
        return ("ref", seen[fn])
    seen[fn] = len(seen)
    return (type(fn).__name__, [(_walk(f, seen), nr) for f, nr in fn.next_functions])


def _walk_ours(node, seen):
    """The same shape, read from our GraphNodes (name and .next edges only)."""
    if node is None:
        return None
    if node.index in seen:
        return ("ref", seen[node.index])
    seen[node.index] = len(seen)
    return (node.name, [(_walk_ours(e.node, seen), e.input_nr) for e in node.next])


def _mlp(T):
    x = T.arange(12.).reshape(3, 4).requires_grad_()
    w = (T.arange(8.).reshape(4, 2) / 10).requires_grad_()
    h = (x @ w).relu()
    return (h.t().sum(1) * h.sum()).exp().mean()


def _views_and_inplace(T):
    x = T.arange(6.).reshape(2, 3).requires_grad_()
    y = x * 1
    y[0].mul_(2)
    v = x.view(6)[1:4]
    return (y * 3).sum() + (v * v).sum()


def _multi_output(T):
    x = T.arange(6.).reshape(2, 3).requires_grad_()
    std, mean = T.std_mean(x, dim=0)
    return (std * mean).sum()


def _no_grad_input(T):
    x = T.ones(3, requires_grad=True)
    c = T.full((3,), 2.)
    return (x * c + c).sum()


def _custom_function(T):
    x = T.ones(2, requires_grad=True)
    return make_exp(T).apply(x * 2).sum()


@pytest.mark.parametrize("build", [_mlp, _views_and_inplace, _multi_output, _no_grad_input, _custom_function])
def test_structure_matches_torch(build):
    theirs = _walk(build(torch).grad_fn, {})
    g = autograd_graph(build(lantern))
    assert _walk_ours(g.nodes[0], {}) == theirs
    assert len(g.nodes) == len({id(n.fn) for n in g.nodes})


def test_nodes_are_in_topological_order_and_share_subgraphs():
    g = autograd_graph(_mlp(lantern))
    position = {n.index: k for k, n in enumerate(g.nodes)}
    assert [n.index for n in g.nodes] == list(range(len(g.nodes)))
    for n in g.nodes:
        for e in n.next:
            if e.node is not None:
                assert position[e.node.index] > position[n.index]
    relu = g.node("ReluBackward0")
    users = [n.name for n in g.nodes for e in n.next if e.node is relu]
    assert sorted(users) == ["SumBackward0", "TBackward0"]
    text = str(g)
    assert text.count("ReluBackward0") == 2 and "#%d ReluBackward0  (shown above)" % relu.index in text


def _saved_tensors_torch(fn):
    return {a[len("_saved_"):]: getattr(fn, a) for a in dir(fn)
            if a.startswith("_saved_") and isinstance(getattr(fn, a), torch.Tensor)}


def test_saved_tensors_match_torch_names_shapes_and_dtypes():
    theirs, ours = _mlp(torch).grad_fn, autograd_graph(_mlp(lantern))
    pairs, stack, seen = [], [(theirs, ours.nodes[0])], set()
    while stack:
        t, n = stack.pop()
        if t is None or n.index in seen:
            continue
        seen.add(n.index)
        pairs.append((t, n))
        stack.extend((tf, e.node) for (tf, _), e in zip(t.next_functions, n.next))
    assert len(pairs) == len(ours.nodes)
    checked = 0
    for t, n in pairs:
        expected = {k: (tuple(v.shape), str(v.dtype).rpartition(".")[2], v._is_view())
                    for k, v in _saved_tensors_torch(t).items()}
        got = {s.name: (s.shape, str(s.dtype).rpartition(".")[2], s.is_view) for s in n.saved}
        assert got == expected, n.name
        checked += len(got)
        assert all(s.version == s.current_version == 0 for s in n.saved)
    assert checked == 6  # exp: result; mul: self, other; relu: result; mm: self (x, a view: reshape), mat2


def test_in_place_change_after_save_shows_the_stale_version():
    def build(T):
        a = T.ones(3, requires_grad=True) * 1
        b = a.sigmoid()
        c = (b * a).sum()
        a.add_(1)
        return c
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as theirs:
        build(torch).backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as ours:
        build(lantern).backward()
    assert "is at version 1; expected version 0 instead" in str(theirs.value) and \
        "is at version 1; expected version 0 instead" in str(ours.value)
    g = autograd_graph(build(lantern))
    mul = g.nodes[1]
    assert mul.name == "MulBackward0"
    other = {s.name: s for s in mul.saved}["other"]
    assert (other.version, other.current_version, other.stale) == (0, 1, True)
    assert not {s.name: s for s in mul.saved}["self"].stale
    assert g.stale == [(mul, other)]
    assert "1 STALE" in str(g).splitlines()[0]
    assert "saved other: [3] float32  v0, now v1  <-- STALE" in str(g)
    dot = g.to_dot()
    assert re.search(r'n1 \[[^\n]*color="#cc0000", penwidth=2', dot)
    assert "v0, now v1: stale" in dot and 'label="red: a saved tensor was modified in place' in dot


def test_saved_views_are_flagged_like_torch():
    def build(T):
        base = T.arange(4.).requires_grad_() * 1
        v = base[1:]
        return v * v, v
    tw, tv = build(torch)
    assert tw.grad_fn._saved_self._is_view()
    w, v = build(lantern)
    saved = autograd_graph(w).nodes[0].saved
    assert [(s.name, s.shape, s.is_view) for s in saved] == [("other", (3,), True), ("self", (3,), True)]
    assert saved[0].tensor is v
    assert "saved self: [3] float32 (view)  v0" in str(autograd_graph(w))


def test_accumulate_grad_leaves_show_their_variable_and_grad():
    lin = lantern.nn.Linear(3, 2)
    x = lantern.ones(4, 3, requires_grad=True)
    loss = lin(x).sum()
    g = autograd_graph(loss, params=dict(lin.named_parameters()))
    leaves = [n for n in g.nodes if n.is_leaf]
    assert [n.name for n in leaves] == ["AccumulateGrad"] * 3
    assert {id(n.variable) for n in leaves} == {id(x), id(lin.weight), id(lin.bias)}
    assert sorted(n.variable_name or "" for n in leaves) == ["", "bias", "weight"]
    assert "variable 'weight': [2, 3] float32, requires_grad=True, grad: None" in str(g)
    addmm = g.node("AddmmBackward0")
    assert {s.name: s.leaf for s in addmm.saved}["mat1"] == next(n.index for n in leaves if n.variable is x)
    loss.backward()
    after = autograd_graph(loss)
    assert "variable: [4, 3] float32, requires_grad=True, grad: [4, 3] float32" in str(after)
    assert all(s.freed for s in after.node("AddmmBackward0").saved)
    assert "saved mat1: freed by backward" in str(after)


def test_hooks_are_listed():
    x = lantern.ones(2, requires_grad=True)
    y = x * 2
    z = y.sum()

    def double(grad):
        return grad * 2
    y.register_hook(double)
    y.retain_grad()
    z.grad_fn.register_hook(lambda gi, go: None)
    x.register_hook(double)
    g = autograd_graph(z)
    hooks = {n.name: n.hooks for n in g.nodes}
    assert hooks["MulBackward0"] == [f"prehook {double.__qualname__}", "retain_grad (output 0)"]
    assert hooks["SumBackward0"] == ["hook test_hooks_are_listed.<locals>.<lambda>"]
    assert hooks["AccumulateGrad"] == [f"tensor hook {double.__qualname__}"]


def test_several_roots_share_nodes():
    x = lantern.ones(3, requires_grad=True)
    h = x.exp()
    a, b = h.sum(), (h * 2).mean()
    g = autograd_graph([a, b])
    assert [n.name for n in g.nodes].count("ExpBackward0") == 1
    assert sorted((n.roots, n.name) for n in g.nodes if n.roots) == [([0], "SumBackward0"), ([1], "MeanBackward0")]
    text = str(g)
    assert text.splitlines()[0] == "autograd graph: 2 roots, 5 nodes, 1 saved tensor"
    assert "root 0: tensor [] float32, output 0 of" in text and "ExpBackward0  (shown above)" in text
    dot = g.to_dot()
    assert dot.count("-> r0") == 1 and dot.count("-> r1") == 1


def test_multi_output_edges_carry_input_nr():
    g = autograd_graph(_multi_output(lantern))
    mul = g.node("MulBackward0")
    assert [(e.node.name, e.input_nr) for e in mul.next] == [("StdMeanBackward0", 0),
                                                              ("StdMeanBackward0", 1)]
    assert "(output 1) #%d StdMeanBackward0" % mul.next[1].node.index in str(g)
    assert ' [label=" out 1"]' in g.to_dot()


def test_roots_without_history_and_leaf_roots():
    g = autograd_graph(lantern.ones(2))
    assert g.nodes == [] and "no autograd history (requires_grad=False)" in str(g)
    x = lantern.ones(2, requires_grad=True)
    g = autograd_graph(x)
    assert [n.name for n in g.nodes] == ["AccumulateGrad"] and g.nodes[0].variable is x
    assert "a leaf: its gradient goes to #0 AccumulateGrad" in str(g)


def test_deep_graphs_need_no_recursion():
    x = lantern.ones(1, requires_grad=True)
    y = x
    for _ in range(1500):
        y = y * 1.0
    g = autograd_graph(y)
    assert len(g.nodes) == 1501 and len(str(g).splitlines()) > 1500


def _dot_edges(dot):
    return set(re.findall(r"^\s*(\w+) -> (\w+)", dot, re.M))


def test_dot_has_every_node_edge_leaf_and_root():
    lin = lantern.nn.Linear(3, 2)
    loss = lin(lantern.ones(4, 3)).relu().sum()
    g = autograd_graph(loss, params=dict(lin.named_parameters()))
    dot = g.to_dot()
    edges = _dot_edges(dot)
    expected = {(f"n{e.node.index}", f"n{n.index}") for n in g.nodes for e in n.next if e.node is not None}
    expected |= {(f"v{n.index}", f"n{n.index}") for n in g.nodes if n.is_leaf}
    expected.add(("n0", "r0"))
    assert edges == expected
    for n in g.nodes:
        assert re.search(rf"^  n{n.index} \[shape=box.*{n.name} <FONT", dot, re.M)
    assert dot.count('fillcolor="#cfe2f3"') == 2  # AccumulateGrad boxes
    assert re.search(r'v\d+ \[shape=ellipse[^\n]*label="weight\\n\[2, 3\] float32"\]', dot)
    assert re.search(r'r0 \[shape=ellipse[^\n]*label="root\\n\[\] float32"\]', dot)


def test_pictures_render(tmp_path):
    x = lantern.ones(2, 3, requires_grad=True)
    y = x * 1
    z = (y.sigmoid() * y).sum()
    y.add_(1)
    g = autograd_graph(z)
    png = g.save(str(tmp_path / "g.png"))
    image = Image.open(png)
    assert image.size[0] > 200 and image.size[1] > 300
    colors = np.asarray(image.convert("RGB")).reshape(-1, 3)
    assert len(np.unique(colors, axis=0)) > 20
    assert (np.abs(colors.astype(int) - [204, 0, 0]).sum(1) < 30).sum() > 50  # the stale node's red border
    svg = open(g.save(str(tmp_path / "g.svg"))).read()
    for name in ("SumBackward0", "MulBackward0", "SigmoidBackward0", "AccumulateGrad", "stale"):
        assert name in svg
    assert open(g.save(str(tmp_path / "g.dot"))).read() == g.to_dot()
    assert isinstance(g, AutogradGraph) and repr(g) == "<AutogradGraph: 1 root(s), 5 nodes>"


def test_tensors_packed_by_saved_tensors_hooks_are_marked():
    x = lantern.ones(2, requires_grad=True)
    store = []
    with lantern.autograd.graph.saved_tensors_hooks(lambda t: store.append(t) or len(store) - 1,
                                                    lambda i: store[i]):
        y = (x * x).sum()
    saved = autograd_graph(y).node("MulBackward0").saved
    assert [(s.name, s.packed, s.shape, s.version) for s in saved] == [("other", True, None, 0),
                                                                       ("self", True, None, 0)]
    assert "saved self: packed by saved_tensors_hooks  v0" in str(autograd_graph(y))
    assert "packed by hooks" in autograd_graph(y).to_dot()
