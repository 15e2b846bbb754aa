"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict against torch."""
from collections import OrderedDict

import pytest

from nn_oracle import same, same_error


def leaf(lib, tag):
    """A tiny module whose repr and output name it: Leaf(tag) adds tag to its input."""
    class Leaf(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.tag = tag
            self.w = lib.nn.Parameter(lib.full((1,), float(tag)))

        def forward(self, x):
            return x + self.w

        def extra_repr(self):
            return f"tag={self.tag}"

    return Leaf()


def tags(container):
    return [m.tag for m in container]


def seq(lib, n=3):
    return lib.nn.Sequential(*[leaf(lib, i) for i in range(n)])


# ---- Sequential -------------------------------------------------------------------------------------------------
def test_sequential_forward_repr_and_state_dict():
    def run(lib):
        s = seq(lib)
        return s(lib.zeros(1)).tolist(), repr(s), list(s.state_dict()), len(s)
    same(run)


def test_sequential_from_ordered_dict():
    def run(lib):
        s = lib.nn.Sequential(OrderedDict([("first", leaf(lib, 1)), ("second", leaf(lib, 2))]))
        return repr(s), [n for n, _ in s.named_parameters()], s.first.tag, tags(s[-1:])
    same(run)


def test_sequential_indexing_and_editing():
    def run(lib):
        s = seq(lib, 5)
        out = [s[0].tag, s[-1].tag, tags(s[1:4]), tags(s[::2]), type(s[1:]).__name__]
        s[1] = leaf(lib, 10)
        s[-1] = leaf(lib, 11)
        out.append(tags(s))
        del s[0]
        out.append((tags(s), list(s._modules)))
        del s[1:3]
        out.append((tags(s), list(s._modules)))
        s.append(leaf(lib, 20)).insert(0, leaf(lib, 21)).insert(-1, leaf(lib, 22)).extend([leaf(lib, 23)])
        out.append((tags(s), list(s._modules)))
        out.append((s.pop(1).tag, tags(s)))
        return out
    same(run)


def test_sequential_arithmetic():
    def run(lib):
        a, b = seq(lib, 2), seq(lib, 1)
        c = a + b
        d = a * 2
        e = 2 * b
        a += b
        b *= 3
        return (tags(c), tags(d), d[0] is d[2], tags(e), tags(a), list(a._modules), tags(b), list(b._modules),
                len(list(d.parameters())))
    same(run)


SEQUENTIAL_ERRORS = {
    "index out of range": lambda lib: seq(lib)[3],
    "negative out of range": lambda lib: seq(lib)[-4],
    "non-int index": lambda lib: seq(lib)["a"],
    "setitem out of range": lambda lib: seq(lib).__setitem__(5, leaf(lib, 1)),
    "add non-sequential": lambda lib: seq(lib) + 3,
    "iadd non-sequential": lambda lib: seq(lib).__iadd__([leaf(lib, 1)]),
    "mul by zero": lambda lib: seq(lib) * 0,
    "mul by float": lambda lib: seq(lib) * 1.5,
    "imul by zero": lambda lib: seq(lib).__imul__(0),
    "insert out of range": lambda lib: seq(lib).insert(5, leaf(lib, 1)),
    "insert non-module": lambda lib: seq(lib).insert(0, 3),
    "append non-module": lambda lib: seq(lib).append(3),
}


@pytest.mark.parametrize("name", SEQUENTIAL_ERRORS)
def test_sequential_errors(name):
    same_error(SEQUENTIAL_ERRORS[name])


def test_sequential_dir_hides_indices():
    same(lambda lib: [k for k in dir(seq(lib)) if k.isdigit() or k in ("append", "forward")])


# ---- ModuleList -------------------------------------------------------------------------------------------------
def test_module_list():
    def run(lib):
        ml = lib.nn.ModuleList([leaf(lib, i) for i in range(4)])
        out = [tags(ml), ml[-1].tag, type(ml[1:3]).__name__, tags(ml[1:3]), len(ml)]
        ml += [leaf(lib, 9)]
        ml.append(leaf(lib, 10)).extend([leaf(lib, 11)])
        ml.insert(1, leaf(lib, 12))
        ml[0] = leaf(lib, 13)
        out.append((tags(ml), list(ml._modules)))
        del ml[-1]
        del ml[::3]
        out.append((tags(ml), list(ml._modules)))
        out.append((ml.pop(0).tag, tags(ml)))
        both = ml + lib.nn.ModuleList([leaf(lib, 20)])
        out.append((type(both).__name__, tags(both)))
        out.append([n for n, _ in ml.named_parameters()])
        return out
    same(run)


def test_module_list_repr_folds_repeats():
    def run(lib):
        ml = lib.nn.ModuleList([leaf(lib, 1), leaf(lib, 1), leaf(lib, 1), leaf(lib, 2),
                                lib.nn.Sequential(leaf(lib, 3))])
        return repr(ml), repr(lib.nn.ModuleList()), repr(lib.nn.ModuleList([leaf(lib, 5)]))
    same(run)


MODULE_LIST_ERRORS = {
    "index out of range": lambda lib: lib.nn.ModuleList([leaf(lib, 1)])[1],
    "extend non-iterable": lambda lib: lib.nn.ModuleList().extend(3),
    "append non-module": lambda lib: lib.nn.ModuleList().append(3),
    "not callable": lambda lib: lib.nn.ModuleList()(1),
}


@pytest.mark.parametrize("name", MODULE_LIST_ERRORS)
def test_module_list_errors(name):
    same_error(MODULE_LIST_ERRORS[name])


# ---- ModuleDict -------------------------------------------------------------------------------------------------
def test_module_dict():
    def run(lib):
        md = lib.nn.ModuleDict({"b": leaf(lib, 1), "a": leaf(lib, 2)})
        out = [list(md), list(md.keys()), [m.tag for m in md.values()], [(k, m.tag) for k, m in md.items()],
               "a" in md, len(md)]
        md["c"] = leaf(lib, 3)
        md.update([("d", leaf(lib, 4))])
        md.update(OrderedDict([("e", leaf(lib, 5))]))
        out.append(md.pop("a").tag)
        del md["b"]
        out.append((list(md), repr(md), list(md.state_dict())))
        md.clear()
        out.append(len(md))
        return out
    same(run)


MODULE_DICT_ERRORS = {
    "missing key": lambda lib: lib.nn.ModuleDict()["x"],
    "update non-iterable": lambda lib: lib.nn.ModuleDict().update(3),
    "update element not iterable": lambda lib: lib.nn.ModuleDict().update([3]),
    "update element wrong length": lambda lib: lib.nn.ModuleDict().update([("a", leaf(lib, 1), 3)]),
    "non-module value": lambda lib: lib.nn.ModuleDict({"a": 3}),
}


@pytest.mark.parametrize("name", MODULE_DICT_ERRORS)
def test_module_dict_errors(name):
    same_error(MODULE_DICT_ERRORS[name])


# ---- ParameterList / ParameterDict ----------------------------------------------------------------------------
def test_parameter_list():
    def run(lib):
        p = lib.nn.Parameter(lib.ones(2))
        pl = lib.nn.ParameterList([p, lib.zeros(2, 3), "text"])
        pl.append(lib.ones(1, dtype=lib.float64))
        pl += [lib.nn.Parameter(lib.ones(1), requires_grad=False)]
        pl[1] = lib.full((2,), 7.)
        return (pl[0] is p, [type(x).__name__ for x in pl], len(pl), type(pl[1:3]).__name__, len(pl[::2]),
                [n for n, _ in pl.named_parameters()], repr(pl).replace("lantern.", "torch."),
                pl[-1].requires_grad, pl[1].tolist())
    same(run)


def test_parameter_dict():
    def run(lib):
        pd = lib.nn.ParameterDict({"b": lib.ones(2), "a": lib.nn.Parameter(lib.zeros(1)), "s": "str"})
        out = [list(pd), type(pd["b"]).__name__, pd.get("zz", 5), "a" in pd, len(pd)]
        pd["c"] = lib.ones(3, dtype=lib.float64)
        pd.update([("d", lib.ones(1))])
        pd.update(OrderedDict([("f", lib.ones(1)), ("e", lib.ones(1))]))
        out.append(pd.setdefault("g", lib.ones(2)).shape == (2,))
        out.append((pd.pop("b").shape == (2,), pd.popitem()[0], list(reversed(pd))))
        out.append((list(pd.keys()), [k for k, _ in pd.items()], len(list(pd.values()))))
        out.append(repr(pd))
        merged = pd | lib.nn.ParameterDict({"z": lib.ones(1)})
        out.append((type(merged).__name__, list(merged)))
        pd |= {"y": lib.ones(1)}
        out.append((list(pd), list(pd.copy()), list(pd.fromkeys(["p", "q"])), list(pd.state_dict())))
        pd.clear()
        out.append(len(pd))
        return out
    same(run)


PARAM_CONTAINER_ERRORS = {
    "list index out of range": lambda lib: lib.nn.ParameterList()[0],
    "list extend with tensor": lambda lib: lib.nn.ParameterList().extend(lib.ones(2)),
    "list not callable": lambda lib: lib.nn.ParameterList()(1),
    "dict non-string key": lambda lib: lib.nn.ParameterDict()[1],
    "dict missing key": lambda lib: lib.nn.ParameterDict()["x"],
    "dict update non-iterable": lambda lib: lib.nn.ParameterDict().update(3),
    "dict update element wrong length": lambda lib: lib.nn.ParameterDict().update([("a",)]),
    "dict not callable": lambda lib: lib.nn.ParameterDict()(1),
}


@pytest.mark.parametrize("name", PARAM_CONTAINER_ERRORS)
def test_parameter_container_errors(name):
    same_error(PARAM_CONTAINER_ERRORS[name])


def test_containers_in_a_model_state_dict():
    def run(lib):
        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = lib.nn.ModuleList([seq(lib, 2), leaf(lib, 5)])
                self.heads = lib.nn.ModuleDict({"x": leaf(lib, 6)})
                self.extra = lib.nn.ParameterList([lib.ones(1)])
                self.table = lib.nn.ParameterDict({"k": lib.ones(1)})

        m = Model()
        return list(m.state_dict()), repr(m).replace("lantern.", "torch.")  # dtypes print as lantern.float32
    same(run)


def test_sequential_of_linear():
    def run(lib):
        s = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Linear(3, 1))
        return repr(s), repr(lib.nn.ModuleList([lib.nn.Linear(2, 2)] * 3)), list(s.state_dict())
    assert same(run)[0] == "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n" \
                           "  (1): Linear(in_features=3, out_features=1, bias=True)\n)"


def test_container_is_deprecated():
    def run(lib):
        with pytest.warns(FutureWarning, match="nn.Container") as w:
            c = lib.nn.Container(a=leaf(lib, 1))
        return list(c._modules), str(w[0].message)
    same(run)
