"""jit.trace against torch.jit.trace: graph structure and types, warnings, containers, modules, check_trace."""
import re
import warnings

import numpy as np
import pytest
import torch

import lantern
from lantern.core.state import tls
from oracle import noncontig

LIBS = (torch, lantern)


def _t(lib, arr):
    """The same values and (non-contiguous) strides in lib: a strided view of a larger buffer, as oracle does."""
    arr = np.asarray(arr, dtype=np.float32)
    base = lib.tensor(np.ascontiguousarray(noncontig(arr).base))
    return base[..., ::2] if arr.ndim else base


def _trace(lib, fn, inputs, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.trace(fn, inputs, **kw)


def _summary(lib, fn, inputs, **kw):
    """(_ops, input types, output type) of a fresh trace, read while the traced function is alive and before it
    runs: torch erases a graph's types once its function is freed or executed."""
    traced = _trace(lib, fn, inputs, check_trace=False, **kw)
    return _ops(traced.graph), _in_types(traced.graph), _out_type(traced.graph)


_DECLS = re.compile(r"%[\w.]+ : (.*?)(?=, %|$)", re.S)


def _ops(graph):
    """(kind, number of inputs, output types as printed) of each node but constants: what must match torch
    (torch's Python `str(value.type())` drops the refinement, so types are read from the printed node)."""
    return [(n.kind(), len(list(n.inputs())), _DECLS.findall(str(n).split(" = ")[0]))
            for n in graph.nodes() if n.kind() != "prim::Constant"]


def _out_type(graph):
    """The printed type of the graph's output."""
    out = next(iter(graph.outputs()))
    if out.node().kind() == "prim::Param":
        return _in_types(graph)[list(graph.inputs()).index(out)]
    return _DECLS.findall(str(out.node()).split(" = ")[0])[out.offset()]


def _in_types(graph):
    """The printed types of the graph's inputs."""
    header = str(graph).split("):\n")[0][len("graph("):]
    return _DECLS.findall(" ".join(header.split()))


# ---- spec cases 26 and 27 -------------------------------------------------------------------------------------

def test_case26_t_t_traced_has_two_aten_t():
    x = np.random.rand(2, 3)
    seen = {}
    for lib in LIBS:
        traced = _trace(lib, lambda x: x.t().t(), _t(lib, x))
        assert [n.kind() for n in traced.graph.nodes()] == ["aten::t", "aten::t"]
        seen[lib] = (_ops(traced.graph), _in_types(traced.graph))  # torch erases the types once the trace runs
        np.testing.assert_array_equal(np.asarray(traced(_t(lib, x))), x.astype(np.float32))
    assert seen[lantern] == seen[torch]
    assert all(n.attrs["op"] == "t" for n in traced.graph.nodes())


def _my_function(lib):
    def my_function(x):
        if x.mean() > 1.0:
            r = lib.tensor(1.0)
        else:
            r = lib.tensor(2.0)
        return r
    return my_function


def test_case27_trace_freezes_control_flow():
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            traced = lib.jit.trace(_my_function(lib), lib.ones(2, 2))
        tracer_warnings = [w for w in caught if w.category is lib.jit.TracerWarning]
        assert tracer_warnings and tracer_warnings[0].filename == __file__
        assert "Converting a tensor to a Python boolean" in str(tracer_warnings[0].message)
        assert not [n for n in traced.graph.nodes() if n.kind() in ("aten::mean", "aten::gt")]  # dead: removed
        assert traced(lib.ones(2, 2)).item() == 2.0
        assert traced(lib.ones(2, 2) + 1).item() == 2.0
        with pytest.raises(AttributeError, match="'ScriptFunction' object has no attribute 'forward'"):
            traced.forward


# ---- graphs -------------------------------------------------------------------------------------------------

GRAPH_CASES = {
    "pointwise": (lambda m, x, y: (x + y).relu() * y, 2),
    "cat": (lambda m, x, y: m.cat([x, y], 1).neg(), 2),
    "views": (lambda m, x, y: x.transpose(0, 1).unsqueeze(0).exp(), 2),
    "two_outputs": (lambda m, x, y: x.max(1), 2),
    "reuse": (lambda m, x, y: (x * x, x.sigmoid() - y), 2),
    "dead_code": (lambda m, x, y: (x.exp(), y.sum())[0] + 1, 2),
}


@pytest.mark.parametrize("name", sorted(GRAPH_CASES))
def test_graph_matches_torch(name):
    fn, nargs = GRAPH_CASES[name]
    arrays = [np.random.rand(3, 4) for _ in range(nargs)]
    mine, theirs = (_summary(lib, lambda *a, lib=lib: fn(lib, *a), tuple(_t(lib, a) for a in arrays))
                    for lib in LIBS)
    assert mine == theirs


def test_node_inputs_in_schema_order_with_defaults():
    g = _trace(lantern, lambda x, y: x.add(y), (lantern.ones(2), lantern.ones(2)), check_trace=False).graph
    (add,) = [n for n in g.nodes() if n.kind() == "aten::add"]
    x, y = g.inputs()
    assert list(add.inputs())[:2] == [x, y]
    alpha = add.inputs()[2].node()
    assert alpha.kind() == "prim::Constant" and alpha.attrs["value"] == 1 and add.attrs["op"] == "add"


def test_inplace_op_output_becomes_the_tensor():
    for lib in LIBS:
        g = _trace(lib, lambda x: x.add_(1).mul(2), lib.ones(2), check_trace=False).graph
        add_, mul = [n for n in g.nodes() if n.kind() != "prim::Constant"]
        assert (add_.kind(), mul.kind()) == ("aten::add_", "aten::mul")
        assert list(mul.inputs())[0] == add_.output()


def test_captured_tensor_becomes_a_constant():
    for lib in LIBS:
        c = lib.ones(2) * 3
        g = _trace(lib, lambda x: x + c, lib.ones(2), check_trace=False).graph
        add = next(n for n in g.nodes() if n.kind() == "aten::add")
        const = list(add.inputs())[1].node()
        assert const.kind() == "prim::Constant"
    assert const.attrs["value"] is c


def test_tracer_key_is_off_after_the_trace_and_after_an_error():
    with pytest.raises(RuntimeError):
        _trace(lantern, lambda x: x.view(-1, 7), lantern.ones(2, 3))
    with pytest.raises(RuntimeError):
        _trace(torch, lambda x: x.view(-1, 7), torch.ones(2, 3))
    assert tls.tracer is None and not tls.observed


# ---- inputs and outputs ---------------------------------------------------------------------------------------

def test_tuple_input_is_unpacked():
    mine, theirs = (_summary(lib, lambda p: p[0] + p[1], ((_t(lib, np.ones((2, 3))), _t(lib, np.ones((2, 3)))),))
                    for lib in LIBS)
    assert mine == theirs


@pytest.mark.parametrize("kind", ["tuple", "list", "nested"])
def test_container_outputs(kind):
    make = {"tuple": lambda x: (x * 2, x), "list": lambda x: [x, x * 2], "nested": lambda x: (x.exp(), (x, x + 1))}
    mine, theirs = (_summary(lib, make[kind], _t(lib, np.ones((2, 2)))) for lib in LIBS)
    assert mine == theirs


@pytest.mark.parametrize("fn", [lambda x: {"a": x * 2}, lambda x: 3, lambda x: None], ids=["dict", "int", "none"])
def test_bad_outputs_raise_like_torch(fn):
    errors = []
    for lib in LIBS:
        with pytest.raises(RuntimeError) as info:
            _trace(lib, fn, lib.ones(2))
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_dict_output_with_strict_false():
    kinds = [_ops(_trace(lib, lambda x: {"a": x * 2}, lib.ones(2), strict=False, check_trace=False).graph)[-1][0]
             for lib in LIBS]
    assert kinds == ["prim::DictConstruct"] * 2


def test_example_kwarg_inputs_and_names():
    mine, theirs = (_summary(lib, lambda x, y: x * y, None,
                             example_kwarg_inputs={"x": lib.ones(2), "y": lib.ones(2) + 1}) for lib in LIBS)
    assert mine == theirs
    g = _trace(lantern, lambda x, y: x * y, None, example_kwarg_inputs={"x": lantern.ones(2), "y": lantern.ones(2)})
    assert [v.debugName() for v in g.graph.inputs()] == ["x", "y"]


def test_function_names_like_torch():
    def fff(x):
        return x + 1
    for lib_fn in (fff, lambda x: x):
        assert _trace(lantern, lib_fn, lantern.ones(2)).name == _trace(torch, lib_fn, torch.ones(2)).name


# ---- TracerWarnings -------------------------------------------------------------------------------------------

WARNING_CASES = {
    "bool": lambda x: x * 2 if bool(x.sum() > 0) else x,
    "float": lambda x: x * float(x.sum()),
    "int": lambda x: x * int(x.sum()),
    "item": lambda x: x * x.sum().item(),
    "tolist": lambda x: x * len(x.tolist()),
    "iter": lambda x: sum(t for t in x),
    "complex": lambda x: x * complex(x.sum()).real,
    "len": lambda x: x * len(x),
    "index (no warning)": lambda x: x * [1, 2, 3, 4, 5][x.sum().long()],
}


@pytest.mark.parametrize("name", sorted(WARNING_CASES))
def test_tracer_warnings_match_torch(name):
    messages = []
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.jit.trace(WARNING_CASES[name], lib.ones(2, 2), check_trace=False)
        got = [w for w in caught if w.category is lib.jit.TracerWarning]
        assert all(w.filename == __file__ for w in got)
        messages.append([str(w.message) for w in got])
    assert messages[0] == messages[1] and bool(messages[0]) == ("no warning" not in name)


def test_deprecation_warning_like_torch():
    texts = []
    for lib in LIBS:
        with pytest.warns(DeprecationWarning) as caught:
            lib.jit.trace(lambda x: x + 1, lib.ones(2), check_trace=False)
        texts.append(str(caught[0].message))
    assert texts[0] == texts[1]


# ---- modules --------------------------------------------------------------------------------------------------

def _module_class(lib):
    def __init__(self):
        lib.nn.Module.__init__(self)
        self.l = lib.nn.Linear(3, 4)
        self.seq = lib.nn.Sequential(lib.nn.Linear(4, 4), lib.nn.ReLU())
        self.register_buffer("b", lib.zeros(4))

    def forward(self, x):
        return self.seq(self.l(x)) + self.b, x

    def other(self, x):
        return x * 2

    return type("M", (lib.nn.Module,), {"__init__": __init__, "forward": forward, "other": other,
                                        "__module__": __name__, "__qualname__": "M"})


def _attr_chains(graph):
    """Each tensor read through prim::GetAttr as its dotted path from self, in a sorted list."""
    chains = []
    for n in graph.nodes():
        if n.kind() == "prim::GetAttr" and str(n.output().type()) == "Tensor":
            path, cur = [], n
            while cur.kind() == "prim::GetAttr":
                path.append(cur.s("name"))
                cur = cur.input().node()
            chains.append(".".join(reversed(path)))
    return sorted(chains)


def test_trace_module_like_torch():
    x = np.random.rand(2, 3)
    traced, summary = {}, {}
    state = _module_class(torch)().state_dict()
    for lib in LIBS:
        m = _module_class(lib)()
        m.load_state_dict({k: lib.tensor(v.numpy()) for k, v in state.items()})
        t = _trace(lib, m, _t(lib, x))
        assert type(t).__name__ == "TopLevelTracedModule" and type(t.l).__name__ == "TracedModule"
        assert t.l.weight is m.l.weight and callable(t.forward)
        traced[lib] = t
        graph = t.graph if lib is lantern else t.inlined_graph
        summary[lib] = _attr_chains(graph), _in_types(graph), _out_type(graph)
    assert summary[lantern] == summary[torch]
    assert [n for n, _ in traced[lantern].named_parameters()] == [n for n, _ in traced[torch].named_parameters()]
    out_l, out_t = (traced[lib](_t(lib, x))[0] for lib in LIBS)
    np.testing.assert_allclose(out_l.detach().numpy(), out_t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_trace_module_several_methods_and_bound_forward():
    for lib in LIBS:
        m = _module_class(lib)()
        x = lib.ones(2, 3)
        t = _trace(lib, m.forward, x)
        assert type(t).__name__ == "TopLevelTracedModule"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t2 = lib.jit.trace_module(m, {"forward": x, "other": x})
        assert [n.kind() for n in t2.other.graph.nodes() if n.kind() != "prim::Constant"] == ["aten::mul"]
        assert str(next(iter(t2.other.graph.inputs())).type()) == str(next(iter(t2.graph.inputs())).type())
        assert t2.other(x).tolist() == [[2.0] * 3] * 2


# ---- check_trace ----------------------------------------------------------------------------------------------

def test_check_trace_raises_when_retrace_differs():
    messages = []
    for lib in LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(lib.jit.TracingCheckError) as info:
                lib.jit.trace(_my_function(lib), lib.ones(2, 2), check_inputs=[(lib.ones(2, 2) + 1,)])
        messages.append(str(info.value).splitlines()[:2])
    assert messages[0] == messages[1]


def test_check_trace_warns_when_outputs_differ():
    for lib in LIBS:
        noise = iter([lib.zeros(2), lib.ones(2)] * 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(lib.jit.TracingCheckError, match="Tensor-valued Constant nodes differed"):
                lib.jit.trace(lambda x: x + next(noise), lib.ones(2))
        msgs = [str(w.message) for w in caught if w.category is lib.jit.TracerWarning]
        assert any(m.startswith("Output nr 1. of the traced function does not match the corresponding output of "
                                "the repeated trace. Detailed error:") for m in msgs)


def test_traced_submodules_get_their_own_forward():
    x = np.random.rand(2, 3)
    summary = {}
    for lib in LIBS:
        t = _trace(lib, _module_class(lib)(), _t(lib, x))
        seq = t.seq.graph if lib is lantern else t.seq.inlined_graph
        types = _in_types(t.l.graph) + _in_types(t.seq.graph)[:1] + [_out_type(t.l.graph)]
        summary[lib] = _attr_chains(seq), [re.sub(r"___torch_mangle_\d+\.", "", s) for s in types]  # torch's uniquing
    assert summary[lantern] == summary[torch]


def test_nondeterministic_nodes_warn_in_check_trace():
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.jit.trace(lambda x: x * lib.rand(3), lib.ones(3))
        msgs = [str(w.message) for w in caught if w.category is lib.jit.TracerWarning]
        assert msgs[0].startswith("Trace had nondeterministic nodes. Did you forget call .eval() on your model? "
                                  "Nodes:\n\t%")
    assert all(w.filename == __file__ for w in caught if w.category is lantern.jit.TracerWarning)


def test_trace_entry_warnings_like_torch():
    seen = []
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.jit.trace(lambda x: x + 1, lib.ones(2), optimize=True, check_trace=False)
            lib.jit.trace_module(_module_class(lib)(), {"other": lib.ones(2)}, check_trace=False)
        seen.append([(w.category, str(w.message)) for w in caught])
    assert [(c.__name__, m) for c, m in seen[0]] == [(c.__name__, m) for c, m in seen[1]]


def test_tracing_a_script_module_returns_it():
    for lib in LIBS:
        t = _trace(lib, _module_class(lib)(), lib.ones(2, 3))
        assert _trace(lib, t, lib.ones(2, 3)) is t


def test_traced_module_backward_reaches_the_shared_parameters():
    x = np.random.rand(2, 3)
    state = _module_class(torch)().state_dict()
    grads = {}
    for lib in LIBS:
        m = _module_class(lib)()
        m.load_state_dict({k: lib.tensor(v.numpy()) for k, v in state.items()})
        t = _trace(lib, m, _t(lib, x))
        t(_t(lib, x))[0].pow(2).sum().backward()
        grads[lib] = [p.grad.numpy() for p in m.parameters()]
    for g_l, g_t in zip(grads[lantern], grads[torch]):
        np.testing.assert_allclose(g_l, g_t, rtol=1e-5, atol=1e-6)


def test_check_trace_of_a_module_compares_graphs():
    for lib in LIBS:
        branchy = type("Branchy", (lib.nn.Module,), {"forward": lambda self, x: x * 2 if x.sum() > 0 else x - 1})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(lib.jit.TracingCheckError, match="ERROR: Graphs differed across invocations!"):
                lib.jit.trace(branchy(), lib.ones(2), check_inputs=[(-lib.ones(2),)])
            assert lib.jit.trace(branchy(), lib.ones(2), check_inputs=[(lib.ones(2) + 1,)])(-lib.ones(2)).tolist() \
                == [-2.0, -2.0]
