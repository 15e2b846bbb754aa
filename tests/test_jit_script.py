"""lantern.jit.script against torch.jit.script: graph shapes (node kinds, control flow) and results.

Each scripted function is written once against the name `torch`; `lan(fn)` is the same code object with `torch`
and `F` rebound to lantern, so both libraries compile exactly the same source.
"""
import types
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lantern
import lantern.jit as ljit
from lantern.jit.frontend import NotSupportedError, script


def lan(fn):
    """fn with its globals `torch`/`F` pointing at lantern (same source, same code object)."""
    g = dict(fn.__globals__, torch=lantern, F=lantern.nn.functional)
    out = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__annotations__ = fn.__annotations__
    return out


def kinds(graph, recurse=False):
    out = []
    for n in graph.nodes():
        out.append(n.kind())
        if recurse:
            for b in n.blocks():
                out += kinds(b, True)
    return out


def both(fn):
    return torch.jit.script(fn), script(lan(fn))


def same(a, b):
    """Compare a torch result with a lantern result (tensors by value and dtype; tuples/lists recursively)."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, lantern.Tensor)
        assert str(a.dtype).replace("torch.", "") == b.dtype.name
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-5)
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    else:
        assert a == b and type(a) is type(b)


def t_pair(*shape, seed=0):
    arr = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.from_numpy(arr.copy()), lantern.tensor(arr)


# ------------------------------------------------------------------------------------------- spec cases 27-29

def my_function(x):
    if x.mean() > 1.0:
        r = torch.tensor(1.0)
    else:
        r = torch.tensor(2.0)
    return r


def jo_f(a, b):
    c = a + b
    d = c * c
    e = torch.tanh(d * c)
    return d + (e + e)


def loop3(x):
    y = x * 2  # noqa: F841 (dead: absent from the scripted graph)
    for i in range(3):
        x = x * 2
    return x


def test_case27_graph_keeps_control_flow():
    ts, ls = both(my_function)
    assert kinds(ls.graph) == kinds(ts.graph)
    if_node = [n for n in ls.graph.nodes() if n.kind() == "prim::If"][0]
    assert len(if_node.blocks()) == 2 and len(if_node.outputs()) == 1
    assert "block0():" in str(ls.graph) and "block1():" in str(ls.graph)


def test_case27_runs_both_branches():
    ts, ls = both(my_function)
    same(ts(torch.ones(2, 2)), ls(lantern.ones(2, 2)))
    same(ts(torch.ones(2, 2) + 1), ls(lantern.ones(2, 2) + 1))
    assert ls(lantern.ones(2, 2)).item() == 2.0 and ls(lantern.ones(2, 2) + 1).item() == 1.0


def test_case28_node_kinds_in_order():
    ts, ls = both(jo_f)
    expected = ["prim::Constant", "aten::add", "aten::mul", "aten::mul", "aten::tanh", "aten::add", "aten::add"]
    assert kinds(ts.graph) == expected
    assert kinds(ls.graph) == expected
    assert len(ls.graph.outputs()) == 1
    add = [n for n in ls.graph.nodes() if n.kind() == "aten::add"][0]
    assert len(add.inputs()) == 3 and add.inputs()[2].node().attrs["value"] == 1  # alpha materialised


def test_case29_loop_and_dce_at_script_time():
    ts, ls = both(loop3)
    assert kinds(ls.graph) == kinds(ts.graph) == ["prim::Constant"] * 3 + ["prim::Loop"]
    assert kinds(ls.graph, recurse=True).count("aten::mul") == 1  # the unused y = x * 2 is gone
    loop = ls.graph.findNode("prim::Loop")
    assert len(loop.inputs()) == 3 and len(loop.blocks()[0].inputs()) == 2
    assert [str(v.type()) for v in loop.blocks()[0].inputs()] == ["int", "Tensor"]


def local_mutation(x):
    y = x * 2
    z = x * 3
    z.add_(1)
    x.add_(1)
    return x


def test_script_time_dce_is_alias_aware():
    ts, ls = both(local_mutation)
    assert kinds(ls.graph) == kinds(ts.graph) == ["prim::Constant", "aten::add_"]


def test_case29_loop_runs():
    ts, ls = both(loop3)
    a, b = t_pair(2, 3)
    same(ts(a), ls(b))


def test_gradients_flow_through_scripted_graph():
    ts, ls = both(jo_f)
    ta, la = t_pair(3, seed=1)
    tb, lb = t_pair(3, seed=2)
    ta.requires_grad_()
    tb.requires_grad_()
    la.requires_grad_()
    lb.requires_grad_()
    ts(ta, tb).sum().backward()
    ls(la, lb).sum().backward()
    same(ta.grad, la.grad)
    same(tb.grad, lb.grad)


# ---------------------------------------------------------------------------------------------- control flow

def while_break(x, n: int):
    s = 0
    i = 0
    while i < n:
        if i == 2:
            break
        s += i
        i += 1
    return x + s


def early_return_in_loop(xs: List[int], limit: int) -> int:
    for x in xs:
        if x == 0:
            continue
        if x > limit:
            return x
    return -1


def guard_return(x, flag: bool):
    if flag:
        return x * 2
    y = x + 1
    return y * y


def nested_loops(n: int) -> int:
    total = 0
    for i in range(n):
        for j in range(1, i, 2):
            if j == 5:
                continue
            total += i * j
    return total


def test_while_break_graph_and_types():
    ts, ls = both(while_break)
    assert kinds(ls.graph).count("prim::Loop") == 1 == kinds(ts.graph).count("prim::Loop")
    loop = ls.graph.findNode("prim::Loop")
    assert [str(v.type()) for v in loop.outputs()] == ["int", "int"]
    assert loop.inputs()[0].node().attrs["value"] == 9223372036854775807


def test_early_return_and_continue_graph():
    g = script(lan(early_return_in_loop)).graph
    assert "prim::Loop" in kinds(g) and kinds(g)[-1] == "prim::If"
    assert str(g.outputs()[0].type()) == "int"



def _pair_args(args):
    """(torch args, lantern args): a tuple spec becomes a tensor pair (t_pair), anything else is passed to both."""
    pairs = [t_pair(*a) if isinstance(a, tuple) else (a, a) for a in args]
    return [t for t, _ in pairs], [x for _, x in pairs]

@pytest.mark.parametrize("fn, args", [
    (while_break, [(2, 3), 5]), (while_break, [(2, 3), 1]),
    (early_return_in_loop, [[1, 0, 9, 3], 4]), (early_return_in_loop, [[1, 2], 4]),
    (guard_return, [(3,), True]), (guard_return, [(3,), False]),
    (nested_loops, [9]),
])
def test_control_flow_results(fn, args):
    ts, ls = both(fn)
    targs, largs = _pair_args(args)
    same(ts(*targs), ls(*largs))


# ------------------------------------------------------------------------------------- types and data structures

def lists_tuples(xs: List[torch.Tensor], k: int) -> Tuple[torch.Tensor, int]:
    t = xs[0]
    for x in xs:
        t = t + x * k
    sizes = [1, 2]
    sizes.append(k)
    return t, len(sizes) + len(xs)


def optional_arg(x, y: Optional[torch.Tensor] = None):
    if y is not None:
        return x + y
    return x - 1


def dict_arg(d: Dict[str, torch.Tensor], key: str):
    return d[key] * 2


def scalar_math(a: int, b: float) -> Tuple[float, int, bool, float]:
    return a / 2 + b, a // 3 - a % 3, a < b and b < 10.0, -b * 2 ** 2


def tensor_methods(x):
    y = x.view(-1).sum(0, keepdim=True)
    z = x.t().reshape(2, 3).relu()
    return y + z[0, 1:] + x.shape[0] + F.relu(x).mean(dim=1)[0]


def comprehension(x, n: int) -> List[torch.Tensor]:
    ys = [x * i for i in range(n)]
    sq = [float(i) for i in [1, 2, 3]]
    return [y + sq[1] for y in ys]


def setitem(x):
    y = x.clone()
    y[0] = 5.0
    y[1, 1:] = x[0, :2]
    return y


def comprehension_if(xs: List[int]) -> List[int]:
    return [x for x in xs if x > 0]


def overloads(x) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    v, i = x.max(1)
    y = torch.transpose(x, 0, 1).softmax(-1).view(3, 3).expand(2, 3, 3)
    return v + x.max(), i, y.sum(0).masked_fill(y[0] > 0.5, 0.0)


def test_overload_matching_graph():
    ts, ls = both(overloads)
    ops = [n for n in ls.graph.nodes() if n.kind() not in ("prim::Constant", "prim::ListConstruct")]
    assert [n.kind() for n in ops] == [n.kind() for n in ts.graph.nodes()
                                       if n.kind() not in ("prim::Constant", "prim::ListConstruct")]
    assert ops[0].attrs["op"] == "max.dim" and len(ops[0].outputs()) == 2


def enumerated(xs: List[torch.Tensor]):
    total = xs[0] * 0
    for i, x in enumerate(xs):
        total = total + x * i
    return total


def test_comprehension_and_setitem_graphs():
    g = script(lan(comprehension)).graph
    assert kinds(g).count("prim::Loop") == 3 and str(g.outputs()[0].type()) == "Tensor[]"
    g = script(lan(setitem)).graph
    assert {"aten::fill_", "aten::copy_"} <= set(kinds(g))  # in place: kept by DCE
    with pytest.raises(torch.jit.frontend.NotSupportedError, match="Comprehension ifs"):
        torch.jit.script(comprehension_if)
    with pytest.raises(NotSupportedError, match="Comprehension ifs"):
        script(comprehension_if)


@pytest.mark.parametrize("fn, args", [
    (comprehension, [(3, 3), 4]), (setitem, [(3, 3)]), (overloads, [(3, 3)]), (enumerated, "list"),
    (lists_tuples, None), (optional_arg, "opt"), (scalar_math, [7, 2.5]), (tensor_methods, [(3, 2)]),
])
def test_typed_results(fn, args):
    ts, ls = both(fn)
    if fn is lists_tuples:
        a, b = t_pair(2, 2)
        same(ts([a, a * 2], 3), ls([b, b * 2], 3))
    elif args == "list":
        a, b = t_pair(2, 3)
        same(ts([a, a + 1, a * 3]), ls([b, b + 1, b * 3]))
    elif args == "opt":
        a, b = t_pair(2)
        same(ts(a), ls(b))
        same(ts(a, a), ls(b, b))
    else:
        targs, largs = _pair_args(args)
        same(ts(*targs), ls(*largs))


def test_input_types_and_schema():
    _, ls = both(lists_tuples)
    assert [str(v.type()) for v in ls.graph.inputs()] == ["Tensor[]", "int"]
    assert str(ls.graph.outputs()[0].type()) == "(Tensor, int)"
    assert str(script(lan(dict_arg)).graph.inputs()[0].type()) == "Dict(str, Tensor)"
    assert str(script(lan(optional_arg)).graph.inputs()[1].type()) == "Tensor?"


def test_optional_refinement_graph():
    g = script(lan(optional_arg)).graph
    assert "aten::__isnot__" in kinds(g)
    assert any(n.kind() == "prim::unchecked_cast" for b in g.findNode("prim::If").blocks() for n in b.nodes())


def test_tensor_scalar_ops_use_registry_schemas():
    g = script(lan(tensor_methods)).graph
    ops = {n.kind(): n for n in g.nodes()}
    assert ops["aten::sum"].attrs["op"] == "sum" and len(ops["aten::sum"].inputs()) == 4
    assert "aten::slice" in ops and "aten::select" in ops and "aten::size" in ops


# ------------------------------------------------------------------------------------- calls, ignore, unused

def helper(x, k: int = 3):
    return x * k


def calls_helper(x):
    return helper(x) + helper(x, 2)


def test_call_function():  # result waits on lantern.jit.executor
    ts, ls = both(calls_helper)
    assert kinds(ls.graph).count("prim::CallFunction") == 2 == kinds(ts.graph).count("prim::CallFunction")
    a, b = t_pair(3)
    same(ts(a), ls(b))


def test_ignore_and_unused():  # results wait on lantern.jit.executor
    @ljit.ignore
    def in_python(x):
        return x + 100

    @ljit.unused
    def never(x):
        return x

    def uses(x):
        return in_python(x) * 2

    def uses_unused(x, flag: bool):
        if flag:
            return never(x)
        return x

    s = script(uses)
    assert s(lantern.ones(1)).item() == 202.0
    u = script(uses_unused)
    assert "prim::RaiseException" in kinds(u.graph, recurse=True)
    assert u(lantern.ones(1), False).item() == 1.0
    with pytest.raises(ljit.Error, match="marked @torch.jit.unused"):  # torch.jit.Error, not a RuntimeError
        u(lantern.ones(1), True)


def test_is_scripting_is_static():
    def f(x):
        if torch.jit.is_scripting():
            return x + 1
        return x - 1
    assert not ljit.is_scripting()
    g = dict(f.__globals__, torch=types.SimpleNamespace(jit=ljit))
    s = script(types.FunctionType(f.__code__, g, "f"))
    assert "prim::If" not in kinds(s.graph) and "aten::add" in kinds(s.graph)


# ------------------------------------------------------------------------------------------------- modules

def make_net(nn, jit):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(3, 2)
            self.seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
            self.k = 2

        def forward(self, x):
            y = self.seq(self.l(x))
            for i, m in enumerate(self.seq):
                if i == 0:
                    y = m(y)
            return self.scale(y) + self.l.bias.sum()

        def scale(self, y):
            return y * self.k

        @jit.export
        def other(self, n: int) -> int:
            return n + self.k

        @jit.unused
        def dropped(self, x):
            return x
    return Net


def test_module_structure():
    tnet = make_net(torch.nn, torch.jit)()
    lnet = make_net(lantern.nn, ljit)()
    tm, lm = torch.jit.script(tnet), script(lnet)
    assert isinstance(lm, ljit.RecursiveScriptModule) and isinstance(lm.seq, ljit.RecursiveScriptModule)
    def ops(g):
        return [k for k in kinds(g) if k != "prim::Constant"]
    assert ops(lm.graph) == ops(tm.graph)
    assert str(lm.graph.inputs()[0].type()) == str(next(tm.graph.inputs()).type()) == "__torch__.test_jit_script.Net"
    assert str(lm.graph.inputs()[0].type()).startswith("__torch__.") and lm.graph.inputs()[0].debugName() == "self"
    get = [n for n in lm.graph.nodes() if n.kind() == "prim::GetAttr"]
    assert [n.attrs["name"] for n in get][:2] == ["seq", "l"]
    assert sorted(n for n, _ in lm.named_parameters()) == sorted(n for n, _ in tnet.named_parameters())
    assert set(lm._methods) >= {"forward", "scale", "other"}


def test_module_runs():
    lnet = make_net(lantern.nn, ljit)()
    lm = script(lnet)
    x = lantern.randn(4, 3)
    np.testing.assert_allclose(lm(x).detach().numpy(), lnet(x).detach().numpy(), rtol=1e-6)
    assert lm.other(3) == 5


# ---------------------------------------------------------------------------------------------------- errors

def uses_with(x):
    with x:
        pass
    return x


def undefined_name(x):
    return x + zz  # noqa: F821


def branch_types(x, flag: bool):
    if flag:
        y = 1
    else:
        y = 2.0
    return x + y


def bad_arg_type(x):
    return x + "a"


@pytest.mark.parametrize("fn, cls, text", [
    (uses_with, RuntimeError, None), (undefined_name, RuntimeError, "undefined value zz"),
    (branch_types, RuntimeError, "Type mismatch"), (bad_arg_type, RuntimeError, "Expected a value of type"),
])
def test_compile_errors(fn, cls, text):
    with pytest.raises(cls) as torch_err:
        torch.jit.script(fn)
    with pytest.raises(Exception) as lantern_err:
        script(lan(fn))
    assert isinstance(lantern_err.value, (RuntimeError, NotSupportedError))
    assert fn.__code__.co_filename in str(lantern_err.value) and "<--- HERE" in str(lantern_err.value)
    if text is not None:
        assert text in str(torch_err.value) and text in str(lantern_err.value)


def test_not_supported_error_class():
    def uses_try(x):
        try:
            y = x
        except Exception:
            y = x
        return y
    with pytest.raises(torch.jit.frontend.NotSupportedError):
        torch.jit.script(uses_try)
    with pytest.raises(NotSupportedError):
        script(uses_try)
    with pytest.raises(RuntimeError, match="Expected a single top-level function"):
        script(lambda x: x)


def test_argument_type_errors():
    def f(x, n: int):
        return x + n
    ts, ls = torch.jit.script(f), script(f)
    for targs, largs in [((1, 2), (1, 2)), ((torch.ones(2), 2.5), (lantern.ones(2), 2.5))]:
        with pytest.raises(RuntimeError) as te:
            ts(*targs)
        with pytest.raises(RuntimeError) as le:
            ls(*largs)
        assert str(le.value).splitlines()[0] == str(te.value).splitlines()[0]
    with pytest.raises(RuntimeError, match="missing value for argument 'n'"):
        ls(lantern.ones(1))


def test_compilation_unit_from_source_text():
    src = """
def h(x, n: int):
    for i in range(n):
        x = x + i
    return x
"""
    tu, lu = torch.jit.CompilationUnit(src), ljit.CompilationUnit(src)
    assert kinds(lu.h.graph) == [k for k in kinds(tu.h.graph)]
    a, b = t_pair(3)
    same(tu.h(a, 4), lu.h(b, 4))


def test_scripted_module_checks_argument_types_like_torch():
    def make(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(2, 2)

            def forward(self, x):
                return self.lin(x).relu()
        return lib.jit.script(Net())
    messages = []
    for lib in (torch, lantern):
        with pytest.raises(RuntimeError) as caught:
            make(lib)(3)
        messages.append(str(caught.value).splitlines()[0])
    assert messages[0] == messages[1] == ("forward() Expected a value of type 'Tensor (inferred)' for argument 'x' "
                                          "but instead found type 'int'.")
