"""lantern.utils._pytree against torch.utils._pytree: the same trees and calls on both, compared (spec rows 61-63)."""
import collections

import numpy as np
import pytest
import torch
import torch.utils._pytree as tp

import lantern
import lantern.utils._pytree as lp
from oracle import assert_same, noncontig, to_lib

P = collections.namedtuple("P", "a b")
Q = collections.namedtuple("Q", "a b")


def trees(lib):
    """Trees covering every built-in node type, with None and tensors as leaves."""
    t = to_lib(lib, noncontig(np.arange(6.0).reshape(2, 3)))
    return [
        {'b': (1, [2, 3]), 'a': None, 'c': {'d': 4}},
        [P(1, (2, None)), collections.OrderedDict(z=1, y=[t])],
        (collections.defaultdict(list, {3: "x", 1: (4.0,)}), collections.deque([1, [2]], maxlen=5)),
        lib.Size([2, 3]),
        {"size": t.shape, "t": t, "e": [], "f": ()},
        t,
        None,
        P(a={"k": [1]}, b=lib.tensor(2)),
        [lib.max(t, 0), lib.sort(t, 1)],
    ]


def same_leaves(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if isinstance(e, torch.Tensor):
            assert_same(g, e)
        elif isinstance(e, torch.Size):
            assert type(g) is lantern.Size and tuple(g) == tuple(e)
        else:
            assert g == e and type(g) is type(e)


@pytest.mark.parametrize("index", range(len(trees(torch))))
def test_flatten_unflatten_and_repr_match_torch(index):
    tree_t, tree_l = trees(torch)[index], trees(lantern)[index]
    leaves_t, spec_t = tp.tree_flatten(tree_t)
    leaves_l, spec_l = lp.tree_flatten(tree_l)
    same_leaves(leaves_l, leaves_t)
    assert repr(spec_l) == repr(spec_t)
    assert (spec_l.num_leaves, spec_l.num_nodes, spec_l.num_children, spec_l.is_leaf()) == \
        (spec_t.num_leaves, spec_t.num_nodes, spec_t.num_children, spec_t.is_leaf())
    back = lp.tree_unflatten(leaves_l, spec_l)
    assert type(back) is type(tree_l)
    assert lp.tree_structure(back) == spec_l and hash(lp.tree_structure(back)) == hash(spec_l)
    same_leaves(lp.tree_leaves(back), leaves_t)
    assert [keystr for keystr in map(lp.keystr, (p for p, _ in lp.tree_flatten_with_path(tree_l)[0]))] == \
        [tp.keystr(p) for p, _ in tp.tree_flatten_with_path(tree_t)[0]]


def test_spec_case_23_round_trip_and_errors():
    tree = {'b': (1, [2, 3]), 'a': None, 'c': {'d': 4}}
    leaves, spec = lp.tree_flatten(tree)
    assert leaves == [1, 2, 3, None, 4] and lp.tree_unflatten(leaves, spec) == tree
    assert lp.tree_unflatten(spec, leaves) == tree      # torch accepts the arguments swapped
    assert repr(spec).startswith("TreeSpec(dict, ['b', 'a', 'c'], [TreeSpec(tuple, None, [*,")
    assert lp.tree_map(lambda x: x + 1, {'x': 7, 'y': (42, 64)}) == {'x': 8, 'y': (43, 65)}
    assert lp.tree_map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]]) == [[5, 7, 9], [6, 1, 2]]


ERRORS = {
    "unflatten_count": lambda m: m.tree_unflatten([1, 2], m.tree_structure({'b': (1, [2, 3]), 'a': None})),
    "unflatten_not_a_spec": lambda m: m.tree_unflatten([1], [1]),
    "arity": lambda m: m.tree_map(lambda a, b: a + b, [1, 2], [1]),
    "node_type": lambda m: m.tree_map(lambda a, b: a + b, [1, 2], (1, 2)),
    "keys": lambda m: m.tree_map(lambda a, b: a + b, {'a': 1, 'c': 2}, {'b': 1, 'c': 2}),
    "namedtuple_class": lambda m: m.tree_map(lambda a, b: a + b, P(1, 2), Q(1, 2)),
    "leaf_vs_node": lambda m: m.tree_map(lambda a, b: a + b, [1], 1),
    "map_only_bad_arg": lambda m: m.map_only(3),
    "treespec_tuple": lambda m: m.treespec_tuple([1]),
    "treespec_dict": lambda m: m.treespec_dict(a=1),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_torch(name):
    caught = []
    for module in (tp, lp):
        with pytest.raises(Exception) as info:
            ERRORS[name](module)
        caught.append(info.value)
    assert type(caught[1]) is type(caught[0])
    assert str(caught[1]) == str(caught[0])


def test_tree_map_variants_match_torch():
    def run(m, lib):
        t = lib.ones(2)
        tree = {"x": [t, 1, None], "y": (2.5, t * 3)}
        seen = []
        out = (
            m.tree_map_only(lib.Tensor, lambda v: v.sum().item(), tree),
            m.tree_map_only((int, float), lambda v: -v, tree)["y"][0],
            m.tree_map_only(lambda v: v is None, lambda v: "none", tree)["x"][2],
            m.tree_map(lambda a, b: (a, b), {"u": 1, "v": 2}, collections.OrderedDict(v=[3], u=4)),
            m.tree_map(lambda v: v, [1, (2, 3)], is_leaf=lambda v: isinstance(v, tuple)),
            m.tree_map_(seen.append, [1, [2, 3]]), seen,
            m.tree_all(lambda v: v is not None, tree), m.tree_any(lambda v: v is None, tree),
            m.tree_all_only(int, lambda v: v > 0, tree), m.tree_any_only(float, lambda v: v > 3, tree),
            m.tree_leaves([1, [2, (3,)]], is_leaf=lambda v: isinstance(v, list) and len(v) == 2),
            m.tree_is_leaf(None), m.tree_is_leaf([]), m.tree_is_leaf(t),
            m.tree_map(lambda a, b: a + b, collections.deque([1, 2], maxlen=3), collections.deque([3, 4])),
        )
        return out
    expected, got = run(tp, torch), run(lp, lantern)
    assert repr(got) == repr(expected).replace("torch.", "lantern.")


def test_registry_matches_torch():
    class PtT:
        def __init__(self, a, b):
            self.a, self.b = a, b

    class PtL(PtT):
        pass
    for m, cls in ((tp, PtT), (lp, PtL)):
        m.register_pytree_node(cls, lambda p: ([p.a, p.b], None), lambda v, c, cls=cls: cls(*v),
                               flatten_with_keys_fn=lambda p: ([(m.GetAttrKey("a"), p.a), (m.GetAttrKey("b"), p.b)],
                                                               None))
    for m, cls in ((tp, PtT), (lp, PtL)):
        doubled = m.tree_map(lambda v: v * 2, cls(1, [2]))
        assert type(doubled) is cls and doubled.a == 2 and doubled.b == [4]
        assert m.tree_leaves({"p": cls(P(1, 2), None)}) == [1, 2, None]
        assert [m.keystr(k) for k, _ in m.tree_flatten_with_path(cls(1, 2))[0]] == [".a", ".b"]
    msgs = []
    for m, cls in ((tp, PtT), (lp, PtL)):
        with pytest.raises(ValueError) as info:
            m.register_pytree_node(cls, lambda p: ([], None), lambda v, c: None)
        msgs.append(str(info.value).replace("PtL", "PtT"))
        with pytest.raises(ValueError, match="Type mismatch"):
            m.tree_map(lambda a, b: a, cls(1, 2), (1, 2))
    assert msgs[0] == msgs[1]
    assert list(lp.SUPPORTED_NODES)[:7] == list(tp.SUPPORTED_NODES)[:7]
    assert lantern.Size in lp.SUPPORTED_NODES and isinstance(lp.SUPPORTED_NODES[PtL], lp.NodeDef)


def test_treespec_equality_and_leafspec_match_torch():
    for m, lib in ((tp, torch), (lp, lantern)):
        spec = m.tree_structure([1, (2, 3)])
        assert spec == m.tree_structure([lib.ones(1), (None, "s")])
        assert spec != m.tree_structure([1, [2, 3]]) and spec != m.tree_structure([1, (2, 3, 4)])
        assert m.tree_structure({"a": 1, "b": 2}) != m.tree_structure({"b": 2, "a": 1})
        assert m.tree_structure(5) == m.treespec_leaf() and repr(m.treespec_leaf()) == "*"
        assert m.treespec_tuple([m.treespec_leaf()] * 2) == m.tree_structure((0, 0))
        assert m.treespec_dict(x=m.treespec_leaf()) == m.tree_structure({"x": 0})
        assert spec.children()[1].child(0).is_leaf() and spec.context is None
        with pytest.warns(FutureWarning):
            m.LeafSpec()


def test_dataclass_nodes_and_paths_match_torch():
    import dataclasses

    @dataclasses.dataclass
    class PointT:
        x: object
        y: object = None

    @dataclasses.dataclass
    class PointL(PointT):
        pass
    results = []
    for m, cls in ((tp, PointT), (lp, PointL)):
        m.register_dataclass(cls)
        tree = {"p": cls([1, 2]), "q": cls(3, (4,))}
        leaves, spec = m.tree_flatten(tree)
        mapped = m.tree_map_with_path(lambda path, v, w: f"{m.keystr(path)}={v}+{w}", tree,
                                      {"p": cls([5, 6]), "q": cls(7, (8,))})
        results.append((leaves, repr(spec).replace("PointL", "PointT"), repr(mapped).replace("PointL", "PointT")))
        with pytest.raises(ValueError) as info:
            m.register_dataclass(type("Plain", (), {}))
        results.append(str(info.value).split("initialize")[0])
        with pytest.raises(ValueError) as info:
            m.register_dataclass(cls, field_names=["x", "z"])
        results.append(str(info.value))
    assert results[:3] == results[3:]
