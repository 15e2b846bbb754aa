"""The JIT interpreter and graph executor against torch: torch scripts a function, lantern parses torch's printed
graph and runs it; results, errors and gradients must match torch's scripted (or eager) run."""
import warnings
import weakref
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest
import torch

import lantern
from lantern.jit.executor import GraphExecutor, executor_for, run
from lantern.jit.interpreter import Error, Interpreter
from lantern.jit.ir import Graph, parse_ir
from nn_oracle import same_weights
from oracle import assert_same, noncontig, to_lib


def both(fn):
    """(torch's scripted fn, lantern's Interpreter of the same graph)."""
    scripted = torch.jit.script(fn)
    return scripted, Interpreter(parse_ir(str(scripted.graph)))


def run1(interp, *args):
    out = interp.run(list(args))
    assert len(out) == 1
    return out[0]


# --------------------------------------------------------------------------------------------------- programs

def straight(x, y):
    z = torch.matmul(x, y).relu()
    a, b = z.chunk(2, dim=1)
    return (a * b).sum(dim=0), z.size(0), z.dim(), z.shape


def looped(x, n: int):
    acc = x
    seen: List[int] = []
    for i in range(n):
        if i % 2 == 0:
            acc = acc * 2
        else:
            acc = acc + x
        seen.append(i)
    k = 0
    while k < 3:
        k += 1
    return acc, seen, k


def scalars(a: int, b: int):
    return a ** b, a / b, a // b, a % b, -a // b, a > b, float(a) * 1.5, [a, b][1], (a, b)[0], len([a, b, a]), \
        min(a, b), max(a, b), a != b, not (a > b) or a == 0


def containers(n: int, s: str):
    xs: List[int] = [n, n + 1, n + 2]
    d: Dict[str, int] = {"a": n, s: 2 * n}
    xs.append(d["a"])
    return xs[1:3], d[s], "{}-{}".format(s, n), str(n) + s, 3 in xs, len(d), xs[-1], s.upper()


def checked(x, flag: bool):
    assert x.dim() == 2, "need 2d"
    if flag:
        raise ValueError("flag " + str(x.dim()))
    return x * 2


def early_loop(x, limit: float):
    i = 0
    while bool(x.sum(0) < limit) and i < 10:
        x = x * 2 + 1
        i += 1
    return x, i


def nested(x, n: int, m: int):
    total = x * 0
    y = x + 1
    for i in range(n):
        z = x * i
        if i > 1:
            for j in range(m):
                if j == 1:
                    continue
                total = total + z * j
                if j > 2:
                    break
        else:
            total = total - y
        if bool(total.sum(0) > 100.0):
            return total, i
    return total + y, -1


def optional_and_tuple(x, a: Optional[int], t: Tuple[int, int]):
    p, q = t
    ys = [x * p, x * q]
    s = ys[0]
    for y in ys:
        s = s + y
    if a is None:
        return s, len(ys)
    return s * a, -len(ys)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.scale = 2.0

    def forward(self, x):
        return self.lin(x).tanh() * self.scale


class LNet(lantern.nn.Module):
    def __init__(self, ref):
        super().__init__()
        self.lin = lantern.nn.Linear(3, 2)
        self.scale = 2.0
        with lantern.no_grad():
            self.lin.weight.copy_(lantern.tensor(ref.lin.weight.detach().numpy()))
            self.lin.bias.copy_(lantern.tensor(ref.lin.bias.detach().numpy()))


# --------------------------------------------------------------------------------------------------- results

def test_straight_line_graph_matches_torch():
    scripted, interp = both(straight)
    x, y = noncontig(np.random.rand(3, 4).astype(np.float32)), noncontig(np.random.rand(4, 6).astype(np.float32))
    assert_same(run1(interp, to_lib(lantern, x), to_lib(lantern, y)), scripted(to_lib(torch, x), to_lib(torch, y)))


@pytest.mark.parametrize("n", [0, 1, 4])
def test_loops_and_branches_match_torch(n):
    scripted, interp = both(looped)
    x = noncontig(np.random.rand(2, 3).astype(np.float32))
    assert_same(run1(interp, to_lib(lantern, x), n), scripted(to_lib(torch, x), n))


@pytest.mark.parametrize("limit", [-1.0, 20.0, 1e9])
def test_while_loop_with_tensor_condition_matches_torch(limit):
    scripted, interp = both(early_loop)
    x = np.random.rand(3).astype(np.float64)
    assert_same(run1(interp, to_lib(lantern, x), limit), scripted(to_lib(torch, x), limit))


@pytest.mark.parametrize("n,m", [(0, 2), (3, 5), (5, 1), (40, 6)])
def test_nested_loops_with_break_continue_and_early_return_match_torch(n, m):
    scripted, interp = both(nested)
    x = np.random.rand(3).astype(np.float32)
    assert_same(run1(interp, to_lib(lantern, x), n, m), scripted(to_lib(torch, x), n, m))


@pytest.mark.parametrize("a", [None, 3])
def test_optionals_tuples_and_list_iteration_match_torch(a):
    scripted, interp = both(optional_and_tuple)
    x = noncontig(np.random.rand(2, 3))
    assert_same(run1(interp, to_lib(lantern, x), a, (2, 5)), scripted(to_lib(torch, x), a, (2, 5)))


@pytest.mark.parametrize("a,b", [(-7, 2), (7, -2), (3, 3), (0, 5)])
def test_scalar_arithmetic_has_torchscript_semantics(a, b):
    scripted, interp = both(scalars)
    assert_same(run1(interp, a, b), scripted(a, b))


def test_list_dict_and_string_builtins_match_torch():
    scripted, interp = both(containers)
    assert_same(run1(interp, 4, "key"), scripted(4, "key"))


def test_module_attributes_and_method_calls_match_torch():
    ref = Net()
    scripted = torch.jit.script(ref)
    interp = Interpreter(parse_ir(str(scripted.graph)))
    mine = LNet(ref)
    x = noncontig(np.random.rand(4, 3).astype(np.float32))
    expected = scripted(to_lib(torch, x))
    got = run1(interp, mine, to_lib(lantern, x))
    assert_same(got, expected)
    got.sum().backward()
    expected.sum().backward()
    assert_same(mine.lin.weight.grad, ref.lin.weight.grad)
    assert_same(mine.lin.bias.grad, ref.lin.bias.grad)


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.count = 0

    def forward(self, x):
        self.count += 1
        if self.count > 1:
            warnings.warn("called again")
        d = {"a": x, "b": x * 2}
        print("count", self.count)
        return d["b"] + self.count


def test_attribute_writes_dicts_print_and_warn_match_torch(capsys):
    ref = torch.jit.script(Counter())
    interp = Interpreter(parse_ir(str(ref.graph)))
    mine = lantern.nn.Module()
    mine.count = 0
    results = []
    for lib, call in ((torch, lambda x: ref(x)), (lantern, lambda x: run1(interp, mine, x))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outs = [call(lib.ones(2)) for _ in range(2)]
        results.append((outs, [(w.category, str(w.message)) for w in caught], capsys.readouterr().out))
    (t_outs, t_warn, t_out), (l_outs, l_warn, l_out) = results
    assert_same(l_outs, t_outs)
    assert mine.count == ref.count == 2
    assert l_warn == t_warn == [(UserWarning, "called again")]
    assert l_out == t_out == "count 1\ncount 2\n"


# --------------------------------------------------------------------------------------------------- autograd

@pytest.mark.parametrize("n", [1, 3])
def test_gradients_through_loops_match_torch(n):
    scripted, interp = both(looped)
    x = np.random.rand(2, 3)
    tx, lx = torch.tensor(x, requires_grad=True), lantern.tensor(x, requires_grad=True)
    (scripted(tx, n)[0] ** 2).sum().backward()
    (run1(interp, lx, n)[0] ** 2).sum().backward()
    assert_same(lx.grad, tx.grad)


def test_executor_gradients_match_eager_torch():
    def f(x, w):
        return ((x @ w).sigmoid() * x.sum(1, keepdim=True)).mean([0, 1])
    graph = parse_ir(str(torch.jit.script(f).graph))
    ex = GraphExecutor(graph)
    x, w = np.random.rand(4, 3), np.random.rand(3, 5)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    lx, lw = lantern.tensor(x, requires_grad=True), lantern.tensor(w, requires_grad=True)
    f(tx, tw).backward()
    for _ in range(2):  # the second step reuses the cached plan
        lx.grad = lw.grad = None
        out = ex.run([lx, lw])[0]
        out.backward()
        assert_same(out.detach(), f(tx, tw).detach())
        assert_same(lx.grad, tx.grad)
        assert_same(lw.grad, tw.grad)
    assert len(ex.plans) == 1


# --------------------------------------------------------------------------------------------------- errors

def _last_line(message):
    return message.rstrip("\n").rsplit("\n", 1)[-1]


@pytest.mark.parametrize("args,last", [(((3,), False), "RuntimeError: AssertionError: need 2d"),
                                       (((2, 2), True), "builtins.ValueError: flag 2")])
def test_raise_and_assert_raise_jit_error_like_torch(args, last):
    scripted, interp = both(checked)
    shape, flag = args
    with pytest.raises(torch.jit.Error) as expected:
        scripted(torch.ones(shape), flag)
    with pytest.raises(Error) as got:
        interp.run([lantern.ones(shape), flag])
    assert type(got.value).__name__ == type(expected.value).__name__ == "Error"
    assert not issubclass(Error, RuntimeError) and not issubclass(torch.jit.Error, RuntimeError)
    assert _last_line(str(got.value)) == _last_line(str(expected.value)) == last


def test_failing_op_raises_runtime_error_with_interpreter_traceback():
    scripted, interp = both(lambda_free_matmul)
    with pytest.raises(RuntimeError) as expected:
        scripted(torch.ones(2, 3), torch.ones(2, 3))
    with pytest.raises(RuntimeError) as got:
        interp.run([lantern.ones(2, 3), lantern.ones(2, 3)])
    header = "The following operation failed in the TorchScript interpreter.\nTraceback of TorchScript"
    assert str(expected.value).startswith(header) and str(got.value).startswith(header)
    assert "return x.mm(y)\n" in str(got.value) and "aten::mm(%x.1, %y.1)" in str(got.value)
    assert _last_line(str(got.value)) == _last_line(str(expected.value))


def lambda_free_matmul(x, y):
    return x.mm(y)


def test_python_list_errors_become_runtime_errors_like_torch():
    def pick(xs: List[int], i: int):
        return xs[i]
    scripted, interp = both(pick)
    with pytest.raises(RuntimeError) as expected:
        scripted([1, 2], 5)
    with pytest.raises(RuntimeError) as got:
        interp.run([[1, 2], 5])
    assert _last_line(str(got.value)) == _last_line(str(expected.value)) == "RuntimeError: list index out of range"


def test_wrong_number_of_inputs():
    _, interp = both(straight)
    with pytest.raises(RuntimeError, match="expected 2 inputs"):
        interp.run([lantern.ones(2, 2)])


# --------------------------------------------------------------------------------------------------- program shape

class _Probe:
    """A `self` whose methods the graph calls: keeps a weak reference to one tensor, later reports if it is dead."""

    def keep(self, t):
        self.ref = weakref.ref(t)
        return t

    def check(self, t):
        self.dead = self.ref() is None
        return t


PROBE_IR = """graph(%self : __torch__.Probe,
      %x : Tensor):
  %a : Tensor = aten::exp(%x)
  %r : Tensor = prim::CallMethod[name="keep"](%self, %a)
  %b : Tensor = aten::neg(%r)
  %c : Tensor = aten::sin(%b)
  %d : Tensor = prim::CallMethod[name="check"](%self, %c)
  return (%d)
"""


def test_values_are_freed_at_their_last_use():
    interp = Interpreter(parse_ir(PROBE_IR))
    probe = _Probe()
    out = run1(interp, probe, lantern.ones(3))
    assert probe.dead  # exp's result was released once neg had read it, before the graph finished
    assert_same(out, torch.ones(3).exp().neg().sin())
    listing = str(interp)
    assert "aten::neg[op=neg](%r)    drop %r" in listing
    assert "RET   (%d)" in listing


def test_instruction_listing_shows_jumps_and_loops():
    _, interp = both(looped)
    opcodes = [ins.opcode for ins in interp.instructions]
    assert opcodes.count("LOOP") == 2 and opcodes.count("JF") == 1 and opcodes[-1] == "RET"
    for ins in interp.instructions:
        if ins.opcode in ("JF", "JMP", "LOOP"):
            assert 0 <= ins.target < len(interp.instructions)
    lines = str(interp).splitlines()
    assert lines[0].startswith("Interpreter: ") and len(lines) == len(interp.instructions) + 1
    steps = []
    interp.trace_run([lantern.ones(2), 2], out=steps.append)
    assert sum("LOOP" in s for s in steps) == 3 + 4  # two iterations + exit, three iterations + exit


def test_call_function_subgraph_and_tuple_ops():
    callee = parse_ir("""graph(%a : Tensor, %b : Tensor):
  %c : Tensor = aten::mul(%a, %b)
  %d : (Tensor, Tensor) = prim::TupleConstruct(%c, %a)
  return (%d)
""")
    g = Graph()
    x, y = g.addInput("x"), g.addInput("y")
    call = g.insertNode(g.create("prim::CallFunction", [x, y]))
    call.attrs["Subgraph"] = callee
    first = g.insertNode(g.create("prim::TupleIndex", [call.output(), g.insertConstant(0)]))
    unpack = g.insertNode(g.create("prim::TupleUnpack", [call.output()], num_outputs=2))
    g.registerOutput(first.output())
    g.registerOutput(unpack.outputs()[1])
    tx, ty = torch.rand(3), torch.rand(3)
    got = Interpreter(g).run([lantern.tensor(tx.numpy()), lantern.tensor(ty.numpy())])
    assert_same(got, [tx * ty, tx])


def test_fusion_group_runs_its_subgraph_with_autograd():
    sub = parse_ir("""graph(%a : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %c : Tensor = aten::mul(%a, %b)
  %d : Tensor = aten::add(%c, %a, %one)
  %e : Tensor = aten::tanh(%d)
  return (%e)
""")
    g = Graph()
    x, y = g.addInput("x"), g.addInput("y")
    group = g.insertNode(g.create("prim::FusionGroup", [x, y]))
    group.attrs["Subgraph"] = sub
    g.registerOutput(group.output())
    a, b = np.random.rand(4, 3), np.random.rand(3)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    lx, ly = lantern.tensor(a, requires_grad=True), lantern.tensor(b, requires_grad=True)
    expected = (tx * ty + tx).tanh()
    got = run1(Interpreter(g), lx, ly)
    assert_same(got.detach(), expected.detach())
    expected.sum().backward()
    got.sum().backward()
    assert_same(lx.grad, tx.grad)
    assert_same(ly.grad, ty.grad)


# --------------------------------------------------------------------------------------------------- executor

def test_executor_caches_one_plan_per_specialisation():
    def f(x, k: int):
        return x * k + x.sum(0)
    graph = parse_ir(str(torch.jit.script(f).graph))
    ex = GraphExecutor(graph, optimize=False)
    for shape, grad in [((2, 3), False), ((2, 3), False), ((4,), False), ((2, 3), True)]:
        arr = np.random.rand(*shape).astype(np.float32)
        got = ex.run([lantern.tensor(arr, requires_grad=grad), 3])[0]
        assert_same(got.detach(), f(torch.tensor(arr), 3))
    assert len(ex.plans) == 3
    with lantern.no_grad():
        ex.run([lantern.ones(2, 3, requires_grad=True), 3])
    assert len(ex.plans) == 4
    state = ex.debug_state()
    assert state.startswith("GraphExecutor: 4 plan(s)")
    assert "plan (float32[2, 3], int)" in state and "plan (float32[2, 3] requires_grad, int) no_grad" in state
    plan = ex.plan_for([lantern.ones(4), 1])
    assert str(plan.graph.inputs()[0].type()) == "Float(4, requires_grad=0, device=cpu)"
    assert graph.inputs()[0].type().sizes is None  # the executor refines a copy, never the graph it was given


def test_run_convenience_reuses_the_executor():
    scripted = torch.jit.script(straight)
    graph = parse_ir(str(scripted.graph))
    x, y = np.random.rand(3, 4).astype(np.float32), np.random.rand(4, 2).astype(np.float32)
    expected = scripted(torch.tensor(x), torch.tensor(y))
    for _ in range(2):
        assert_same(run(graph, [lantern.tensor(x), lantern.tensor(y)])[0], expected)
    assert len(executor_for(graph).plans) == 1


# --------------------------------------------------------------------------------------------------- end to end

def _mlp(nn):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(4, 8)
            self.l2 = nn.Linear(8, 3)

        def forward(self, x):
            h = self.l1(x).relu()
            if bool(h.sum(0).sum(0) > 0):
                h = h * 2
            return self.l2(h).tanh()
    return MLP()


@pytest.mark.parametrize("compile_", ["trace", "script"])
def test_training_a_compiled_model_matches_eager_torch(compile_):
    """Three SGD steps on a traced / scripted MLP give torch's eager losses and gradients."""
    ref, mine = _mlp(torch.nn), _mlp(lantern.nn)
    same_weights(ref, mine)
    x = noncontig(np.random.rand(6, 4).astype(np.float32))
    tx, lx = to_lib(torch, x), to_lib(lantern, x)
    compiled = lantern.jit.trace(mine, (lx,)) if compile_ == "trace" else lantern.jit.script(mine)
    lopt = lantern.optim.SGD(mine.parameters(), lr=0.1)
    for _ in range(3):
        ref.zero_grad()
        lopt.zero_grad()
        tloss = (ref(tx) ** 2).mean(0).sum(0)
        lloss = (compiled(lx) ** 2).mean(0).sum(0)
        tloss.backward()
        lloss.backward()
        assert_same(lloss.detach(), tloss.detach())
        for (name, p), q in zip(ref.named_parameters(), mine.parameters()):
            assert_same(q.grad, p.grad, path=name)
        with torch.no_grad():  # torch.optim.SGD's step, without importing torch's compiler stack
            for p in ref.parameters():
                p.sub_(0.1 * p.grad)
        lopt.step()
