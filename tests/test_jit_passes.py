"""lantern.jit.passes against torch's passes: the same IR text (or the same function) goes through torch's
`torch._C._jit_pass_*` and through lantern's pass, and the resulting graphs must have the same nodes (kinds, nesting,
constant values) and compute the same results."""
import linecache
import re
import warnings

import numpy as np
import pytest
import torch

import lantern
import lantern.jit as ljit
from lantern.jit.interpreter import Interpreter
from lantern.jit.ir import parse_ir
from lantern.jit.passes import (PassLog, constant_propagation, cse, dead_code_elimination, fuse, inline, optimize,
                                peephole, unroll_loops)
from lantern.jit.verify import verify

TORCH_PASS = {
    peephole: torch._C._jit_pass_peephole,
    constant_propagation: torch._C._jit_pass_constant_propagation,
    cse: torch._C._jit_pass_cse,
    dead_code_elimination: torch._C._jit_pass_dce,
    unroll_loops: torch._C._jit_pass_loop_unrolling,
    inline: torch._C._jit_pass_inline,
}


_SCALAR_TYPES = ("int", "float", "bool", "str", "int[]", "List[int]")


def structure(graph, constants=True):
    """Node kinds in order, with nested blocks and constant values: comparable between torch and lantern.
    `constants=False` leaves constants out (the two script compilers order them differently)."""
    def block(b):
        out = []
        for n in b.nodes():
            if not constants and n.kind() == "prim::Constant":
                continue
            item = [n.kind()]
            if n.kind() == "prim::Constant" and str(n.output().type()) in _SCALAR_TYPES:
                item.append(n.output().toIValue())
            item += [block(inner) for inner in n.blocks()]
            out.append(item)
        out.append(["return", [o.node().kind() == "prim::Param" for o in b.outputs()]])
        return out
    return block(graph.block() if hasattr(graph, "block") else graph)


def _constants(graph):
    return [n.output().toIValue() for n in graph.nodes()
            if n.kind() == "prim::Constant" and str(n.output().type()) in _SCALAR_TYPES]


def both(text, lantern_pass):
    """Parse `text` with both libraries and run the matching pass on each; returns (torch graph, lantern graph)."""
    tg, lg = torch._C.parse_ir(text), parse_ir(_lantern_text(text))
    TORCH_PASS[lantern_pass](tg)
    assert lantern_pass(lg) is lg
    verify(lg)
    return tg, lg


def _lantern_text(text):
    """torch's parser wants a node without outputs as `prim::X(...)`, its printer (and lantern) as ` = prim::X(...)`."""
    return re.sub(r"^(\s*)(prim::\w+\()", r"\1 = \2", text, flags=re.M)


def same_as_torch(text, lantern_pass):
    tg, lg = both(text, lantern_pass)
    assert structure(lg) == structure(tg), f"torch:\n{tg}\nlantern:\n{lg}"
    return lg


def run_both(tg, lg, *args):
    """Run the torch graph and the lantern graph on the same inputs and compare every output."""
    t_out = torch._C._create_function_from_graph("f", tg)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                                                            for a in args])
    l_out = Interpreter(lg).run([lantern.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    t_out = t_out if isinstance(t_out, tuple) else (t_out,)
    if len(l_out) == 1 and isinstance(l_out[0], tuple):
        l_out = l_out[0]
    assert len(t_out) == len(l_out)
    for t, v in zip(t_out, l_out):
        np.testing.assert_allclose(np.asarray(v.tolist() if hasattr(v, "tolist") else v),
                                   np.asarray(t.tolist() if hasattr(t, "tolist") else t), rtol=1e-6, atol=1e-6)


def noncontig(*shape):
    big = np.random.RandomState(0).randn(*shape[:-1], shape[-1] * 2).astype(np.float32)
    return big[..., ::2]


# -- peephole ---------------------------------------------------------------------------------------------------
def test_peephole_t_t_traced_spec_case_26():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tt = torch.jit.trace(lambda x: x.t().t(), torch.ones(2, 3))
        lt = ljit.trace(lambda x: x.t().t(), (lantern.ones(2, 3),))
    assert [n.kind() for n in lt.graph.nodes()] == [n.kind() for n in tt.graph.nodes()] == ["aten::t", "aten::t"]
    tg, lg = tt.graph.copy(), lt.graph.copy()
    torch._C._jit_pass_peephole(tg)
    peephole(lg)
    assert list(lg.nodes()) == [] and list(tg.nodes()) == []
    assert lg.outputs()[0] is lg.inputs()[0]
    x = noncontig(2, 3)
    run_both(tg, lg, x)


FLOAT23 = "Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)"
LONG23 = "Long(2, 3, strides=[3, 1], requires_grad=0, device=cpu)"


def _arith(xtype, kind, scalar, alpha=True, ret="%5"):
    stype = "float" if isinstance(scalar, float) else "int"
    alpha_arg = ", %1" if alpha else ""
    return f"""graph(%x : {xtype}):
  %1 : int = prim::Constant[value=1]()
  %2 : {stype} = prim::Constant[value={scalar}]()
  %3 : int = prim::Constant[value=2]()
  %4 : Tensor = {kind}(%x, %2{alpha_arg})
  %5 : Tensor = aten::mul(%4, %3)
  return ({ret})"""


@pytest.mark.parametrize("xtype", ["Tensor", FLOAT23, LONG23])
@pytest.mark.parametrize("kind,scalar,alpha", [
    ("aten::add", 0, True), ("aten::add", 0.0, True), ("aten::sub", 0, True), ("aten::add", 1, True),
    ("aten::mul", 1, False), ("aten::mul", 1.0, False), ("aten::div", 1, False), ("aten::mul", 2, False)])
def test_peephole_identity_arithmetic_like_torch(xtype, kind, scalar, alpha):
    same_as_torch(_arith(xtype, kind, scalar, alpha), peephole)


def test_peephole_keeps_identity_op_between_graph_input_and_output():
    same_as_torch(_arith("Tensor", "aten::add", 0, True, ret="%4"), peephole)


@pytest.mark.parametrize("size,xtype", [("2, 3", FLOAT23), ("4, 2, 3", FLOAT23), ("2, 3", "Tensor")])
def test_peephole_expand(size, xtype):
    items = [f"  %s{i} : int = prim::Constant[value={s}]()\n" for i, s in enumerate(size.split(", "))]
    names = ", ".join(f"%s{i}" for i in range(len(items)))
    text = (f"graph(%x : {xtype}):\n" + "".join(items) +
            f"  %l : int[] = prim::ListConstruct({names})\n  %f : bool = prim::Constant[value=0]()\n"
            f"  %e : Tensor = aten::expand(%x, %l, %f)\n  %y : Tensor = aten::relu(%e)\n  return (%y)")
    tg, lg = torch._C.parse_ir(text), parse_ir(text)
    torch._C._jit_pass_constant_propagation(tg)
    torch._C._jit_pass_peephole(tg)
    constant_propagation(lg)
    peephole(lg)
    assert [n.kind() for n in lg.nodes()] == [n.kind() for n in tg.nodes()]


def test_peephole_type_as_size_dim_and_is_none():
    text = f"""graph(%x : {FLOAT23}, %y : {FLOAT23}, %o : int?):
  %n : NoneType = prim::Constant()
  %0 : int = prim::Constant[value=1]()
  %a : Tensor = aten::type_as(%x, %y)
  %s : int[] = aten::size(%a)
  %s1 : int = aten::size(%x, %0)
  %d : int = aten::dim(%y)
  %i : bool = aten::__is__(%x, %n)
  %j : bool = aten::__isnot__(%o, %n)
  %t : (Tensor, int[], int, int, bool, bool) = prim::TupleConstruct(%a, %s, %s1, %d, %i, %j)
  return (%t)"""
    lg = same_as_torch(text, peephole)
    assert lg.nodes()[-1].inputs()[0] is lg.inputs()[0]


def test_peephole_if_and_tuple_idioms():
    text = """graph(%x : Tensor, %c : bool):
  %1 : int = prim::Constant[value=1]()
  %0 : int = prim::Constant[value=0]()
  %y : Tensor = prim::If(%c)
    block0():
      -> (%x)
    block1():
      -> (%x)
  %t : (Tensor, int) = prim::TupleConstruct(%y, %1)
  %a : Tensor = prim::TupleIndex(%t, %0)
  %b : Tensor, %k : int = prim::TupleUnpack(%t)
  %l : Tensor[] = prim::ListConstruct(%a, %b)
  %n : int = aten::len(%l)
  %z : Tensor = aten::mul(%b, %n)
  return (%z)"""
    tg, lg = both(text, peephole)
    assert structure(lg) == structure(tg)
    run_both(tg, lg, noncontig(2, 3), True)


def test_peephole_leaves_contiguous_double_neg_and_constant_ifs_as_torch_does():
    text = f"""graph(%x : {FLOAT23}, %c : bool):
  %0 : int = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %a : Tensor = aten::neg(%x)
  %b : Tensor = aten::neg(%a)
  %d : Tensor = aten::contiguous(%b, %0)
  %y : Tensor = prim::If(%t)
    block0():
      -> (%d)
    block1():
      -> (%x)
  %z : Tensor = prim::If(%c)
    block0():
      -> (%y)
    block1():
      -> (%y)
  %f : bool = prim::Constant[value=0]()
  %w : bool = prim::If(%c)
    block0():
      -> (%t)
    block1():
      -> (%f)
  %l : Tensor[] = prim::ListConstruct(%z, %x)
  %p : Tensor, %q : Tensor = prim::ListUnpack(%l)
  %r : (Tensor, Tensor, bool) = prim::TupleConstruct(%p, %q, %w)
  return (%r)"""
    same_as_torch(text, peephole)


# -- constant propagation ---------------------------------------------------------------------------------------
def test_constant_propagation_spec_case_29():
    text = """graph(%x : Tensor):
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %3 : int = prim::Constant[value=3]()
  %b : int = aten::mul(%2, %3)
  %y : Tensor = aten::add(%x, %b, %1)
  return (%y)"""
    tg, lg = both(text, constant_propagation)
    assert structure(lg) == structure(tg)
    assert 6 in [n.output().toIValue() for n in lg.nodes() if n.kind() == "prim::Constant"]
    run_both(tg, lg, noncontig(2, 3))

    def f(x):
        a = 2
        b = a * 3
        return x + b
    tg, lg = torch.jit.script(f).graph.copy(), ljit.script(f).graph.copy()
    torch._C._jit_pass_constant_propagation(tg)
    constant_propagation(lg)
    assert structure(lg, constants=False) == structure(tg, constants=False)
    assert 6 in [n.output().toIValue() for n in lg.nodes() if n.kind() == "prim::Constant"]


def test_constant_propagation_scalars_tuples_lists():
    text = """graph(%x : Tensor):
  %1 : int = prim::Constant[value=7]()
  %2 : int = prim::Constant[value=2]()
  %3 : float = prim::Constant[value=1.5]()
  %a : int = aten::floordiv(%1, %2)
  %b : float = aten::mul(%3, %a)
  %c : bool = aten::lt(%a, %b)
  %l : int[] = prim::ListConstruct(%a, %2)
  %n : int = aten::len(%l)
  %t : (int, float, bool, int) = prim::TupleConstruct(%a, %b, %c, %n)
  %u : int, %v : float, %w : bool, %z : int = prim::TupleUnpack(%t)
  %y : Tensor = aten::mul(%x, %v)
  %r : (Tensor, int, bool, int) = prim::TupleConstruct(%y, %u, %w, %z)
  return (%r)"""
    tg, lg = both(text, constant_propagation)
    assert structure(lg) == structure(tg)
    run_both(tg, lg, noncontig(2, 3))


def test_constant_propagation_control_flow():
    text = """graph(%x : Tensor, %n : int):
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %0 : int = prim::Constant[value=0]()
  %2 : int = prim::Constant[value=2]()
  %a : Tensor = prim::If(%f)
    block0():
      %p : Tensor = aten::mul(%x, %2)
      -> (%p)
    block1():
      %q : Tensor = aten::neg(%x)
      -> (%q)
  %b : Tensor = prim::Loop(%0, %t, %a)
    block0(%i : int, %c : Tensor):
      %r : Tensor = aten::mul(%c, %2)
      -> (%t, %r)
  %d : Tensor = prim::Loop(%n, %f, %b)
    block0(%j : int, %e : Tensor):
      %s : Tensor = aten::mul(%e, %2)
      -> (%t, %s)
  %g : Tensor = prim::If(%t)
    block0():
      %four : int = aten::mul(%2, %2)
      %h : Tensor = aten::add(%d, %four, %2)
      -> (%h)
    block1():
      -> (%d)
  return (%g)"""
    tg, lg = both(text, constant_propagation)
    assert structure(lg) == structure(tg)
    run_both(tg, lg, noncontig(3), 4)


def test_constant_propagation_keeps_random_mutated_and_side_effects():
    text = """graph(%x : Tensor):
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %l : int[] = prim::ListConstruct(%1, %2)
  %none : NoneType = prim::Constant()
  %r : Tensor = aten::rand(%l, %none, %none, %none, %none)
  %e : int[] = aten::append(%l, %2)
  %n : int = aten::len(%l)
  %y : Tensor = aten::add(%r, %n, %1)
  return (%y)"""
    same_as_torch(text, constant_propagation)


def test_constant_propagation_folds_tensor_ops_through_the_dispatcher():
    g = parse_ir("""graph(%x : Tensor):
  %2 : int = prim::Constant[value=2]()
  %y : Tensor = aten::mul(%x, %2)
  return (%y)""")
    with g.insert_point_guard(g.nodes()[0]):
        c = g.insertConstant(lantern.tensor([1.0, 2.0]))
    g.findNode("aten::mul").replaceInput(0, c)
    constant_propagation(g)
    (node,) = g.nodes()
    assert node.kind() == "prim::Constant" and node.output().toIValue().tolist() == [2.0, 4.0]
    assert g.outputs()[0].toIValue().dtype == lantern.float32
    g.nodes()[0].attrs["value"] = lantern.tensor([1.0, 2.0], requires_grad=True)
    g.registerOutput(g.insert("aten::neg", [g.outputs()[0]]).output())
    constant_propagation(g)
    assert [n.kind() for n in g.nodes()] == ["prim::Constant", "aten::neg"]  # keeps the autograd edge


# -- cse --------------------------------------------------------------------------------------------------------
def test_cse_scripted_duplicate_add_spec_case_29():
    def f(x):
        y = x + 1
        z = x + 1
        return y * z
    tg, lg = torch.jit.script(f).graph.copy(), ljit.script(f).graph.copy()
    torch._C._jit_pass_cse(tg)
    cse(lg)
    assert [n.kind() for n in lg.nodes()].count("aten::add") == 1
    assert structure(lg, constants=False) == structure(tg, constants=False)
    run_both(tg, lg, noncontig(2, 3))


def test_cse_respects_blocks_mutation_and_randomness():
    text = """graph(%x : Tensor, %c : bool):
  %1 : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %1, %1)
  %y : Tensor = prim::If(%c)
    block0():
      %b : Tensor = aten::add(%x, %1, %1)
      %inner : Tensor = aten::neg(%b)
      -> (%inner)
    block1():
      %inner2 : Tensor = aten::neg(%x)
      -> (%inner2)
  %again : Tensor = aten::neg(%x)
  %half : float = prim::Constant[value=0.5]()
  %d : Tensor = aten::dropout(%x, %half, %c)
  %d2 : Tensor = aten::dropout(%x, %half, %c)
  %m : Tensor = aten::mul(%x, %1)
  %w : Tensor = aten::add_(%m, %1, %1)
  %m2 : Tensor = aten::mul(%x, %1)
  %t : (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %y, %again, %d, %d2, %m, %m2)
  return (%t)"""
    lg = same_as_torch(text, cse)
    assert [n.kind() for n in lg.nodes()].count("aten::neg") == 1


# -- dead code elimination ----------------------------------------------------------------------------------------
def test_dce_scripted_unused_value_and_local_mutation():
    def f(x):
        y = x * 2
        z = x * 3
        z.add_(1)
        x.add_(1)
        return x
    tg = torch.jit.script(f).graph  # the script compiler runs DCE
    g = parse_ir("""graph(%x : Tensor):
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %3 : int = prim::Constant[value=3]()
  %y : Tensor = aten::mul(%x, %2)
  %z : Tensor = aten::mul(%x, %3)
  %z2 : Tensor = aten::add_(%z, %1, %1)
  %x2 : Tensor = aten::add_(%x, %1, %1)
  return (%x)""")
    dead_code_elimination(g)
    assert [n.kind() for n in g.nodes()] == [n.kind() for n in tg.nodes()]


def test_dce_blocks_side_effects_and_dead_outputs():
    text = """graph(%x : Tensor, %c : bool, %n : int):
  %t : bool = prim::Constant[value=1]()
  %1 : int = prim::Constant[value=1]()
  %msg : str = prim::Constant[value="boom"]()
  %none : NoneType = prim::Constant()
  %a : Tensor, %b : Tensor = prim::If(%c)
    block0():
      %p : Tensor = aten::neg(%x)
      %q : Tensor = aten::relu(%x)
      -> (%p, %q)
    block1():
      prim::RaiseException(%msg, %none)
      -> (%x, %x)
  %r : Tensor, %s : Tensor = prim::Loop(%n, %t, %a, %x)
    block0(%i : int, %u : Tensor, %v : Tensor):
      %u2 : Tensor = aten::mul(%u, %1)
      %v2 : Tensor = aten::exp(%v)
      -> (%t, %u2, %v2)
  %view : Tensor = aten::t(%r)
  %w : Tensor = aten::add_(%view, %1, %1)
  %dead : Tensor = aten::tanh(%x)
  return (%r)"""
    tg, lg = both(text, dead_code_elimination)
    assert structure(lg) == structure(tg)
    run_both(tg, lg, noncontig(3, 3), True, 3)


# -- loop unrolling -----------------------------------------------------------------------------------------------
def test_unroll_then_constant_propagation_spec_case_29():
    def h(x):
        for i in range(3):
            x = x * 2
        return x
    tg, lg = torch.jit.script(h).graph.copy(), ljit.script(h).graph.copy()
    assert "prim::Loop" in [n.kind() for n in lg.nodes()]
    torch._C._jit_pass_loop_unrolling(tg)
    torch._C._jit_pass_constant_propagation(tg)
    unroll_loops(lg)
    constant_propagation(lg)
    assert [n.kind() for n in lg.nodes()].count("aten::mul") == 3
    assert structure(lg, constants=False) == structure(tg, constants=False)
    run_both(tg, lg, noncontig(2, 3))


@pytest.mark.parametrize("trips", [0, 5, 63, 64])
def test_unroll_constant_trip_counts_with_counter(trips):
    src = f"""
def h(x):
    for i in range({trips}):
        x = x + i
    return x
"""
    tg = torch.jit.CompilationUnit(src).h.graph.copy()
    filename = f"<unroll {trips}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    lg = ljit.script(ns["h"]).graph.copy()
    torch._C._jit_pass_loop_unrolling(tg)
    torch._C._jit_pass_constant_propagation(tg)
    unroll_loops(lg)
    constant_propagation(lg)
    verify(lg)
    assert structure(lg, constants=False) == structure(tg, constants=False)
    assert sorted(map(str, _constants(lg))) == sorted(map(str, _constants(tg)))
    run_both(tg, lg, noncontig(3))


def test_unroll_dynamic_trip_count_by_eight():
    def w(x, n: int):
        for i in range(n):
            x = x * 0.5 + i
        return x
    tg, lg = torch.jit.script(w).graph.copy(), ljit.script(w).graph.copy()
    torch._C._jit_pass_loop_unrolling(tg)
    unroll_loops(lg)
    verify(lg)
    assert structure(lg, constants=False) == structure(tg, constants=False)
    for n in (0, 1, 7, 8, 9, 17):
        run_both(tg, lg, noncontig(4), n)


def test_unroll_skips_while_loops_and_big_bodies():
    body = "".join(f"      %v{i + 1} : Tensor = aten::neg(%v{i})\n" for i in range(33))
    text = f"""graph(%x : Tensor, %c : bool):
  %t : bool = prim::Constant[value=1]()
  %3 : int = prim::Constant[value=3]()
  %a : Tensor = prim::Loop(%3, %c, %x)
    block0(%i : int, %u : Tensor):
      %u2 : Tensor = aten::neg(%u)
      -> (%c, %u2)
  %b : Tensor = prim::Loop(%3, %t, %a)
    block0(%j : int, %v0 : Tensor):
{body}      -> (%t, %v33)
  return (%b)"""
    same_as_torch(text, unroll_loops)


# -- inlining -----------------------------------------------------------------------------------------------------
def test_inline_call_function_like_torch():
    def callee(x):
        return x.neg() + 1

    def caller(x):
        return callee(x) * 2
    tcaller, lcaller = torch.jit.script(caller), ljit.script(caller)
    assert "prim::CallFunction" in [n.kind() for n in lcaller.graph.nodes()]
    tg, lg = tcaller.graph.copy(), lcaller.graph.copy()
    torch._C._jit_pass_inline(tg)
    inline(lg)
    assert [n.kind() for n in lg.nodes() if n.kind() != "prim::Constant"] == \
        [n.kind() for n in tg.nodes() if n.kind() != "prim::Constant"] == ["aten::neg", "aten::add", "aten::mul"]
    run_both(tg, lg, noncontig(2, 3))


def test_inline_call_method_needs_the_module():
    class Block(lantern.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = lantern.nn.Parameter(lantern.ones(3) * 2)

        def forward(self, x):
            return x * self.scale

    class Net(lantern.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Block()

        def forward(self, x):
            return lantern.relu(self.inner(x))
    sm = ljit.script(Net())
    g = sm.graph.copy()
    inline(g)
    assert "prim::CallMethod" in [n.kind() for n in g.nodes()]
    inline(g, sm)
    verify(g)
    assert "prim::CallMethod" not in [n.kind() for n in g.all_nodes()]
    x = lantern.tensor(noncontig(2, 3))
    out = Interpreter(g).run([sm, x])[0]
    np.testing.assert_allclose(out.tolist(), np.maximum(np.asarray(x.tolist()) * 2, 0))


# -- fusion ---------------------------------------------------------------------------------------------------------
def _gelu(x):
    return x * 0.5 * (1 + (0.79788456 * (x + 0.044715 * x ** 3)).tanh())


def test_fuse_gelu_chain_into_one_group():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lt = ljit.trace(_gelu, (lantern.ones(4, 5),))
    g = lt.graph.copy()
    fuse(g)
    verify(g)
    kinds = [n.kind() for n in g.nodes()]
    assert kinds == ["prim::FusionGroup"]
    sub = g.nodes()[0].g("Subgraph")
    assert {n.kind() for n in sub.nodes()} >= {"aten::mul", "aten::add", "aten::tanh", "aten::pow"}
    x = noncontig(4, 5)
    expected = _gelu(torch.tensor(x))
    out = Interpreter(g).run([lantern.tensor(x)])[0]
    np.testing.assert_allclose(out.tolist(), expected.tolist(), rtol=1e-5, atol=1e-6)


def test_fuse_respects_dependencies_blocks_and_outputs():
    text = """graph(%x : Tensor, %c : bool):
  %1 : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::exp(%x)
  %no : bool = prim::Constant[value=0]()
  %s : Tensor = aten::sum(%a, %none, %no, %none)
  %b : Tensor = aten::sigmoid(%x)
  %d : Tensor = aten::add(%b, %s, %1)
  %e : Tensor = aten::tanh(%d)
  %y : Tensor = prim::If(%c)
    block0():
      %p : Tensor = aten::neg(%e)
      %q : Tensor = aten::relu(%p)
      -> (%q)
    block1():
      -> (%e)
  %m : Tensor = aten::mm(%y, %y)
  %z : Tensor = aten::mul(%m, %d)
  %r : (Tensor, Tensor) = prim::TupleConstruct(%z, %b)
  return (%r)"""
    tg, lg = torch._C.parse_ir(text), parse_ir(text)
    fuse(lg)
    verify(lg)
    top = [n.kind() for n in lg.nodes()]
    assert top.count("prim::FusionGroup") == 1 and "aten::exp" in top and "aten::sum" in top
    group = lg.findNode("prim::FusionGroup", recurse=False)
    assert [n.kind() for n in group.g("Subgraph").nodes()] == ["prim::Constant", "aten::sigmoid", "aten::add",
                                                               "aten::tanh"]
    assert len(group.outputs()) == 3  # b (returned), d (used by mul), e (used by the If)
    inner = lg.findNode("prim::If").blocks()[0]
    assert [n.kind() for n in inner.nodes()] == ["prim::FusionGroup"]
    run_both(tg, lg, noncontig(3, 3), True)
    run_both(tg, lg, noncontig(3, 3), False)


def test_fuse_does_not_move_across_mutation():
    g = parse_ir("""graph(%x : Tensor):
  %1 : int = prim::Constant[value=1]()
  %y : Tensor = aten::neg(%x)
  %w : Tensor = aten::add_(%x, %1, %1)
  %z : Tensor = aten::exp(%y)
  %v : Tensor = aten::exp(%z)
  return (%v)""")
    fuse(g)
    verify(g)
    assert [n.kind() for n in g.nodes()] == ["prim::Constant", "aten::neg", "aten::add_", "prim::FusionGroup"]


# -- pipeline -----------------------------------------------------------------------------------------------------
def test_optimize_logs_each_pass_and_keeps_results():
    def f(x, n: int):
        a = 2
        for i in range(4):
            x = x * a + i
        y = x + 1
        z = x + 1
        unused = x.exp()
        return y * z
    sf = ljit.script(f)
    log = PassLog()
    g = optimize(sf.graph.copy(), log)
    verify(g)
    names = [r.name for r in log]
    assert names == ["inline", "constant_propagation", "peephole", "cse", "dead_code_elimination", "unroll_loops",
                     "constant_propagation", "peephole", "cse", "fuse"]
    by_name = {r.name: r for r in log}
    assert by_name["unroll_loops"].removed["prim::Loop"] == 1 and by_name["unroll_loops"].diff
    assert by_name["fuse"].added["prim::FusionGroup"] == 1
    assert "unroll_loops" in str(log) and "-1 prim::Loop" in str(log)
    assert [n.kind() for n in g.nodes()] == ["prim::FusionGroup"]
    records = []
    optimize(sf.graph.copy(), records.append)
    assert [r.name for r in records] == names
    x = noncontig(2, 3)
    tf = torch.jit.script(f)
    out = Interpreter(g).run([lantern.tensor(x), 3])[0]
    np.testing.assert_allclose(out.tolist(), tf(torch.tensor(x), 3).tolist(), rtol=1e-5)


def test_inline_nested_calls_with_blocks_get_fresh_values():
    def leaf(x):
        return x.exp()

    def mid(x):
        if bool(x.sum() > 0):
            return leaf(x) + 1
        return leaf(-x)

    def top(x):
        return mid(x) * mid(x + 1)
    tg, lg = torch.jit.script(top).graph.copy(), ljit.script(top).graph.copy()
    torch._C._jit_pass_inline(tg)
    inline(lg)
    verify(lg)
    assert structure(lg, constants=False) == structure(tg, constants=False)
    names = [v.debugName() for n in lg.all_nodes() for v in n.outputs()]
    assert len(names) == len(set(names))
    assert str(parse_ir(str(lg))) == str(lg)
    run_both(tg, lg, noncontig(3))
