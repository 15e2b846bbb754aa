"""The JIT interpreter: a Graph linearised into register instructions, run by one loop (torch's `Code` +
`InterpreterState`).

Every Value owns a register. Each instruction names its input registers, what it runs, its output registers and the
registers that die after it (a value is dropped at its last use, so intermediate tensors are freed as soon as the
program no longer needs them, as torch's MOVE/DROP do). Control flow is flat: `prim::If` becomes a conditional jump
(JF) over the two branches, `prim::Loop` a LOOP head instruction and a back jump. Constants are preloaded into
their registers once. Registry ops run through `lantern.ops.dispatcher.call`, so autograd records as in eager code.

>>> import lantern
>>> from lantern.jit.ir import Graph
>>> g = Graph()
>>> x = g.addInput("x")
>>> two = g.insertConstant(2)
>>> n = g.insertNode(g.create("aten::mul", [x, two]))
>>> n.attrs["op"] = "mul"
>>> _ = g.registerOutput(n.output())
>>> interp = Interpreter(g)
>>> interp.run([lantern.tensor([1., 2.])])
[tensor([2., 4.])]
>>> print(interp)                                      # doctest: +NORMALIZE_WHITESPACE
Interpreter: 3 registers
   0  OP    %2 = aten::mul[op=mul](%x, %1)    drop %x
   1  RET   (%2)
"""
import linecache
import math

import lantern
from . import types as jit_types
from ..ops import dispatcher as _dispatcher, generated
from ..ops import registry as _registry
from .frontend_emit import resolve_python
from ..core import user_warnings

__all__ = ["Interpreter", "Instruction", "Error"]


class Error(Exception):
    """What a scripted `raise` or failed `assert` raises when the graph runs (torch.jit.Error)."""


Error.__module__ = "lantern.jit"


class _ScriptRaise(Exception):
    """Internal: prim::RaiseException fired; the run loop turns it into `Error` with the TorchScript traceback."""


class Instruction:
    """One step of the program.

    opcode: OP (registry op through the dispatcher), PY (a builtin run in Python: scalar arithmetic, lists, tuples,
    attributes), CALL (a method, function or subgraph), FUSED (a prim::FusionGroup), MOVE (copy registers:
    branch results, loop-carried values), DROP, JF (jump if false), JMP, LOOP (loop head: continue or exit), RET.
    inputs/outputs/drops are register numbers; `target` is the jump destination; `node` the IR node it came from;
    `fn` what it calls (for OP: the registry Operator and whether its list result becomes a Python list); `step`
    the generated Python function that runs it on a register file and returns the next pc.
    """

    __slots__ = ("opcode", "label", "inputs", "outputs", "drops", "target", "node", "fn", "step")

    def __init__(self, opcode, label="", inputs=(), outputs=(), drops=(), target=None, node=None, fn=None):
        self.opcode = opcode
        self.label = label
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.drops = tuple(drops)
        self.target = target
        self.node = node
        self.fn = fn
        self.step = None

    def format(self, names):
        ins = ", ".join(names[i] for i in self.inputs)
        outs = ", ".join(names[i] for i in self.outputs)
        op = self.opcode
        if op in ("OP", "PY", "CALL", "FUSED"):
            text = f"{outs + ' = ' if outs else ''}{self.label}({ins})"
        elif op == "MOVE":
            text = f"{outs} <- {ins}"
        elif op == "JF":
            text = f"{ins} else -> {self.target}"
        elif op == "JMP":
            text = f"-> {self.target}"
        elif op == "LOOP":
            text = f"{outs} = next iteration of ({ins}) else -> {self.target}"
        elif op == "RET":
            text = f"({ins})"
        else:
            text = ""
        drops = "    drop " + ", ".join(names[i] for i in self.drops) if self.drops else ""
        return f"{op:<5} {text}{drops}".rstrip()

    def __repr__(self):
        return f"<Instruction {self.opcode} {self.label}>"


# ---------------------------------------------------------------------------------------------------------------
# Builtins run in Python: TorchScript's int/float/bool/str/list/dict operations and tensor queries.

def _tensor_len(x):
    if hasattr(x, "dim") and callable(getattr(x, "dim")) and not isinstance(x, (list, tuple, dict, str)):
        if x.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return x.size(0)
    return len(x)


def _size(x, dim=None):
    return list(x.size()) if dim is None else x.size(dim)


def _item_of(convert):
    def fn(x):
        if hasattr(x, "item") and not isinstance(x, (int, float, bool, str)):
            x = x.item()
        return convert(x)
    return fn


def _range_length(lo, hi, step):
    if step == 0:
        raise RuntimeError("range() arg 3 must not be zero")
    return len(range(lo, hi, step))


def _list_slice(seq, start=None, end=None, step=1):
    return seq[start:end:step]


def _set_item(container, key, value):
    container[key] = value


def _append(seq, value):
    seq.append(value)
    return seq


def _format(fmt, *args):
    return fmt.format(*args)


def _warn(message, stacklevel=2):
    user_warnings.warn(message, stacklevel=2)


def _round_to_zero_floordiv(a, b):
    return int(a / b)


def _scalar_or_tensor(name, py):
    """A math builtin on a Python number; a tensor argument goes to lantern's op of the same name."""
    def fn(*args):
        if all(isinstance(a, (int, float, bool)) for a in args):
            return py(*args)
        return getattr(lantern, name)(*args)
    return fn


_PYTHON_OPS = {
    "aten::add": lambda a, b, *alpha: a + b if not alpha else a + alpha[0] * b,
    "aten::sub": lambda a, b, *alpha: a - b if not alpha else a - alpha[0] * b,
    "aten::mul": lambda a, b: a * b,
    "aten::div": lambda a, b: a / b,
    "aten::floordiv": lambda a, b: a // b,
    "aten::remainder": lambda a, b: a % b,
    "aten::__round_to_zero_floordiv": _round_to_zero_floordiv,
    "aten::neg": lambda a: -a,
    "aten::abs": lambda a: abs(a),
    "aten::eq": lambda a, b: a == b,
    "aten::ne": lambda a, b: a != b,
    "aten::lt": lambda a, b: a < b,
    "aten::le": lambda a, b: a <= b,
    "aten::gt": lambda a, b: a > b,
    "aten::ge": lambda a, b: a >= b,
    "aten::__and__": lambda a, b: a & b,
    "aten::__or__": lambda a, b: a | b,
    "aten::__xor__": lambda a, b: a ^ b,
    "aten::__not__": lambda a: not a,
    "aten::__lshift__": lambda a, b: a << b,
    "aten::__rshift__": lambda a, b: a >> b,
    "aten::__is__": lambda a, b: a is b,
    "aten::__isnot__": lambda a, b: a is not b,
    "aten::__contains__": lambda a, b: b in a,
    "aten::__getitem__": lambda a, i: a[i],
    "aten::_set_item": _set_item,
    "aten::len": _tensor_len,
    "aten::append": _append,
    "aten::extend": lambda a, b: a.extend(b),
    "aten::insert": lambda a, i, v: a.insert(i, v),
    "aten::pop": lambda a, *i: a.pop(*i),
    "aten::remove": lambda a, v: a.remove(v),
    "aten::clear": lambda a: a.clear(),
    "aten::reverse": lambda a: a.reverse(),
    "aten::list": lambda a: list(a),
    "aten::copy": lambda a: a.copy(),
    "aten::keys": lambda d: list(d.keys()),
    "aten::values": lambda d: list(d.values()),
    "aten::items": lambda d: list(d.items()),
    "aten::get": lambda d, k, *default: d.get(k, *default),
    "aten::setdefault": lambda d, k, v: d.setdefault(k, v),
    "aten::dict": lambda *a: dict(*a),
    "aten::slice": _list_slice,
    "aten::size": _size,
    "aten::dim": lambda t: t.dim(),
    "aten::numel": lambda t: t.numel(),
    "aten::Int": _item_of(int),
    "aten::Float": _item_of(float),
    "aten::Bool": _item_of(bool),
    "aten::IntImplicit": _item_of(int),
    "aten::FloatImplicit": _item_of(float),
    "aten::ScalarImplicit": _item_of(lambda v: v),
    "aten::item": _item_of(lambda v: v),
    "aten::str": lambda a: str(a),
    "aten::format": _format,
    "aten::join": lambda sep, items: sep.join(items),
    "aten::warn": _warn,
    "aten::__range_length": _range_length,
    "aten::__derive_index": lambda index, start, step: start + index * step,
    "aten::min": _scalar_or_tensor("min", min),
    "aten::max": _scalar_or_tensor("max", max),
    "aten::floor": _scalar_or_tensor("floor", math.floor),
    "aten::ceil": _scalar_or_tensor("ceil", math.ceil),
    "aten::sqrt": _scalar_or_tensor("sqrt", math.sqrt),
    "aten::exp": _scalar_or_tensor("exp", math.exp),
    "aten::log": _scalar_or_tensor("log", math.log),
    "aten::pow": lambda a, b: a ** b,
    "aten::device": lambda s: __import__("lantern").device(s),
    "prim::TupleConstruct": lambda *a: a,
    "prim::ListConstruct": lambda *a: list(a),
    "prim::TupleIndex": lambda t, i: t[i],
    "prim::TupleSlice": lambda t, *b: t[slice(*b)],
    "prim::DictConstruct": lambda *kv: dict(zip(kv[0::2], kv[1::2])),
    "prim::Uninitialized": lambda: None,
    "prim::unchecked_cast": lambda a: a,
    "prim::unchecked_unwrap_optional": lambda a: a,
    "prim::dtype": lambda t: t.dtype,
    "prim::device": lambda t: t.device,
    "prim::requires_grad": lambda t: t.requires_grad,
    "prim::is_cuda": lambda t: t.is_cuda,
    "prim::layout": lambda t: t.layout,
    "prim::shape": lambda t: list(t.shape),
    "prim::data": lambda t: t.detach(),
    "prim::grad": lambda t: t.grad,
    "prim::NumToTensor": lambda v: __import__("lantern").tensor(v),
    "prim::min": lambda *a: min(*a),
    "prim::max": lambda *a: max(*a),
    "prim::Print": lambda *a: print(*a),
    "prim::AutogradAdd": lambda a, b: a if b is None else (b if a is None else a + b),
    "prim::abs": lambda a: abs(a),
    "aten::_unwrap_optional": lambda a: a,
    "aten::__setitem__": _set_item,
    "aten::is_floating_point": lambda t: t.is_floating_point(),
    "aten::sort": lambda seq, reverse=False: seq.sort(reverse=reverse),
}


def _unpack(count):
    def fn(seq):
        if len(seq) != count:
            raise RuntimeError(f"Expected {count} elements in a list but found {len(seq)}")
        return seq
    return fn


def _raise_exception(message, exc_name=None):
    raise _ScriptRaise(f"{exc_name or 'RuntimeError'}: {message}")


def _attr(node, name, default=None):
    return node.attrs.get(name, default)


def _resolve_python(node, kind):
    """(opcode, label, fn) for a node that is not a registry op."""
    if kind in ("prim::TupleUnpack", "prim::ListUnpack"):
        return "PY", kind, _unpack(len(node.outputs()))
    if kind == "prim::ConstantChunk":
        chunks, dim = _attr(node, "chunks"), _attr(node, "dim", 0)
        return "PY", f"{kind}[chunks={chunks}, dim={dim}]", lambda t: t.chunk(chunks, dim)
    if kind == "prim::GetAttr":
        name = _attr(node, "name")
        return "PY", f'{kind}[name="{name}"]', lambda obj: getattr(obj, name)
    if kind == "prim::SetAttr":
        name = _attr(node, "name")
        return "PY", f'{kind}[name="{name}"]', lambda obj, value: setattr(obj, name, value)
    if kind == "prim::CallMethod":
        name = _attr(node, "name")
        return "CALL", f'{kind}[name="{name}"]', lambda obj, *args: getattr(obj, name)(*args)
    if kind == "prim::CallFunction":
        return "CALL", kind, _call_function(node)
    if kind == "prim::RaiseException":
        return "PY", kind, _raise_exception
    if kind == "prim::FusionGroup":
        return "FUSED", kind, _fusion_group(node)
    if kind == "prim::isinstance":
        return "PY", kind, _isinstance(node)
    if kind == "aten::pow" and _output_type(node) == "int":
        return "PY", kind, lambda a, b: int(a ** b)
    if kind in ("aten::pow", "aten::div") and _output_type(node) == "float":
        fn = _PYTHON_OPS[kind]
        return "PY", kind, lambda a, b: float(fn(a, b))
    fn = _PYTHON_OPS.get(kind)
    if fn is not None:
        return "PY", kind, fn
    if kind.startswith("aten::"):
        python = str(_attr(node, "python", ""))
        if python and not python.startswith("Tensor.") and not callable(getattr(lantern, kind[6:], None)):
            return "PY", kind, resolve_python(python)  # an aten op lantern has only as F.<op> (aten::linear)
        return "PY", kind, _fallback(kind[6:], python.startswith("Tensor."))
    raise NotImplementedError(f"lantern.jit interpreter: no implementation of {kind} (node: {_node_text(node)})")


def _with_memory_formats(op, as_list):
    """Call `op` with the TorchScript ints at its MemoryFormat parameters turned back into memory formats."""
    def run(*args):
        out = _dispatcher.call(op, jit_types.with_memory_formats(op.schema, args))
        return list(out) if as_list else out
    return run


def _overload_with_arity(op, n):
    """Another overload of op's base name (same alias kind) that takes exactly n arguments, if there is one."""
    base = op.name.partition(".")[0]
    for other in _registry.REGISTRY.values():
        if other.schema.name == base and other.kind == op.kind and len(other.schema.args) == n:
            return other
    return None


def _holds_tensor(t):
    """Whether a value of IR type `t` may be (or contain) a tensor: then an aten node is a registry op call."""
    if not isinstance(t, (jit_types.IntType, jit_types.FloatType, jit_types.BoolType, jit_types.StrType,
                          jit_types.NoneType, jit_types.NumberType, jit_types.DeviceType, jit_types.DtypeType,
                          jit_types.ListType, jit_types.TupleType, jit_types.OptionalType, jit_types.DictType)):
        return True
    return any(_holds_tensor(c) for c in t.contained_types())


def _output_type(node):
    outs = node.outputs()
    return str(outs[0].type()) if len(outs) == 1 else None


def _fallback(name, method_only=False):
    """An aten node without a registry op (the script frontend's calls of Python-level lantern functions):
    lantern's function of that name, else the first argument's method."""
    function = None if method_only else getattr(lantern, name, None)
    if callable(function):
        return function

    def call_method(*args):
        method = getattr(args[0], name, None) if args else None
        if method is None:
            raise NotImplementedError(f"lantern.jit interpreter: no implementation of aten::{name} for "
                                      f"({', '.join(type(a).__name__ for a in args)})")
        return method(*args[1:])
    return call_method


def _subgraph(node):
    g = _attr(node, "Subgraph")
    if g is None and hasattr(node, "hasAttribute") and node.hasAttribute("Subgraph"):
        g = node.g("Subgraph")
    return g


def _call_function(node):
    """prim::CallFunction: a 'Subgraph' attribute (run by a nested interpreter), a Python function in the attribute
    'fn'/'function', or (torch's layout) a callable first input."""
    graph = _subgraph(node)
    if graph is not None:
        inner = []
        n_params = len(graph.inputs())

        def run_subgraph(*args):
            if not inner:
                inner.append(Interpreter(graph))
            out = inner[0].run(list(args[len(args) - n_params:]))
            return out[0] if len(out) == 1 else tuple(out)
        return run_subgraph
    target = _attr(node, "fn", _attr(node, "function"))
    if target is not None:
        graph = getattr(target, "graph", None)
        if graph is None:
            return target
        n_params = len(graph.inputs())
        return lambda *args: target(*args[len(args) - n_params:])
    return lambda fn, *args: fn(*args)


def _fusion_group(node):
    from . import fusion  # cycle: jit.fusion imports jit.interpreter
    runner = getattr(fusion, "run_fusion_group", None)
    n_out = len(node.outputs())
    if runner is not None:
        def run_fused(*args):
            out = runner(node, list(args))
            if n_out == 1 and not isinstance(out, (list, tuple)):
                return out
            return out[0] if n_out == 1 else tuple(out)
        return run_fused
    graph = _subgraph(node)
    if graph is None:
        raise RuntimeError(f"prim::FusionGroup without a 'Subgraph' attribute: {_node_text(node)}")
    inner = Interpreter(graph)

    def run_unfused(*args):
        out = inner.run(list(args))
        return out[0] if n_out == 1 else tuple(out)
    return run_unfused


def _isinstance(node):
    types = _attr(node, "types", ())
    type_of = getattr(jit_types, "type_of", None)

    def fn(value):
        if type_of is None:
            raise NotImplementedError("prim::isinstance needs lantern.jit.types.type_of")
        t = type_of(value)
        return any(t.is_subtype_of(c) if not isinstance(c, str) else str(t) == c for c in types)
    return fn


def _node_text(node):
    try:
        return str(node).strip()
    except Exception:
        return node.kind()


# ---------------------------------------------------------------------------------------------------------------
# Liveness: which values die at which instruction.

def _free_values(block, out=None, defined=None):
    """Values used inside `block` (recursively) that are defined outside it."""
    out = set() if out is None else out
    defined = set() if defined is None else defined
    defined.update(id(v) for v in block.inputs())
    for node in block.nodes():
        for v in node.inputs():
            if id(v) not in defined:
                out.add(v)
        for b in node.blocks():
            _free_values(b, out, defined)
        defined.update(id(v) for v in node.outputs())
    for v in block.outputs():
        if id(v) not in defined:
            out.add(v)
    return {v for v in out if id(v) not in defined}


class _Liveness:
    """Backward liveness over nested blocks, by value id. `after[node]`: values live right after the node;
    `branch_in[if_node]`: values some branch needs; `entry_drops[block]`: values to drop as a branch starts (only
    the other branch needs them); `loop_keep[loop]`: values the loop body reads from outside, live for the whole
    loop."""

    def __init__(self, graph):
        self.after = {}
        self.branch_in = {}
        self.entry_drops = {}
        self.loop_keep = {}
        self.block(graph.block(), {id(v) for v in graph.outputs()})

    def block(self, block, live_after):
        live = set(live_after) | {id(v) for v in block.outputs()}
        for node in reversed(list(block.nodes())):
            self.after[id(node)] = set(live)
            rest = live - {id(v) for v in node.outputs()}
            used = {id(v) for v in node.inputs()}
            kind = node.kind()
            if kind == "prim::If":
                ins = [self.block(b, rest) for b in node.blocks()]
                union = set().union(*ins)
                self.branch_in[id(node)] = union
                for b, b_in in zip(node.blocks(), ins):
                    self.entry_drops[id(b)] = union - b_in
                used |= union
            elif kind == "prim::Loop":
                keep = {id(v) for v in _free_values(node.blocks()[0])} | {id(node.inputs()[0])}
                self.loop_keep[id(node)] = keep
                self.block(node.blocks()[0], rest | keep)
                used |= keep
            else:
                for b in node.blocks():
                    used |= {id(v) for v in _free_values(b)}
            live = rest | used
        return live - {id(v) for v in block.inputs()}


# ---------------------------------------------------------------------------------------------------------------

class Interpreter:
    """A graph compiled to register instructions. `run(inputs)` returns the list of graph outputs.

    `instructions` is the program; `print(interpreter)` shows it with value names; `registers` maps register
    numbers to names. Build it once and run it many times."""

    def __init__(self, graph):
        self.graph = graph
        self.instructions = []
        self.registers = []       # register number -> printable name
        self._reg = {}            # id(Value) -> register number
        self._const = set()       # registers preloaded with constants (never dropped)
        self._frame = []          # the initial register file: constants filled in
        self._zero = None         # a constant 0 register, made for the first loop's trip counter
        self._live = _Liveness(graph)
        n_in = len(graph.inputs())
        for v in graph.inputs():
            self._register(v)
        self._emit_block(graph.block())
        self._emit(Instruction("RET", inputs=[self._reg_of(v) for v in graph.outputs()]))
        self._frame += [None] * (len(self.registers) - len(self._frame))
        self._n_inputs = n_in
        for pc, ins in enumerate(self.instructions):
            ins.step = _compile_step(ins, pc)
        self._steps = [ins.step for ins in self.instructions]
        self._outputs = self.instructions[-1].inputs

    # -- registers
    def _register(self, value=None, name=None):
        r = len(self.registers)
        if value is not None:
            self._reg[id(value)] = r
            name = "%" + str(value.debugName())
        self.registers.append(name)
        return r

    def _reg_of(self, value):
        r = self._reg.get(id(value))
        if r is None:
            raise RuntimeError(f"lantern.jit interpreter: value %{value.debugName()} is used before it is defined")
        return r

    def _constant(self, node):
        r = self._register(node.output())
        self._const.add(r)
        self._frame += [None] * (r + 1 - len(self._frame))
        self._frame[r] = _attr(node, "value")

    def _drop_ids(self, ids):
        """Registers of the value ids that may be dropped (constants stay), in a stable order."""
        regs = {self._reg[i] for i in ids if i in self._reg}
        return sorted(regs - self._const)

    def _emit(self, ins):
        self.instructions.append(ins)
        return ins

    # -- code generation
    def _emit_block(self, block):
        for node in block.nodes():
            kind = node.kind()
            if kind == "prim::Constant":
                self._constant(node)
                continue
            after = self._live.after[id(node)]
            if kind == "prim::If":
                self._emit_if(node, after)
                continue
            if kind == "prim::Loop":
                self._emit_loop(node, after)
                continue
            ins_regs = [self._reg_of(v) for v in node.inputs()]
            out_regs = [self._register(v) for v in node.outputs()]
            dying = {id(v) for v in list(node.inputs()) + list(node.outputs())} - after
            op_name = _attr(node, "op") if kind.startswith("aten::") or kind == _attr(node, "op") else None
            resolved = None
            if op_name is not None and (kind not in _PYTHON_OPS or any(_holds_tensor(v.type()) for v in node.inputs())):
                resolved = self._resolve_op(node, kind, op_name)
            opcode, label, fn = resolved or _resolve_python(node, kind)
            self._emit(Instruction(opcode, label, ins_regs, out_regs, self._drop_ids(dying), node=node, fn=fn))

    def _resolve_op(self, node, kind, op_name):
        label = f"{kind}[op={op_name}]"
        op = _registry.REGISTRY.get(op_name)
        if op is not None:
            n = len(node.inputs())
            if n != len(op.schema.args):
                op = _overload_with_arity(op, n)
                if op is None:
                    raise RuntimeError(f"lantern.jit interpreter: {_node_text(node)} has {n} inputs, but lantern's "
                                       f"{op_name} takes {len(_registry.REGISTRY[op_name].schema.args)}: "
                                       f"{_registry.REGISTRY[op_name].schema.text}")
            returns = op.schema.returns
            as_list = len(node.outputs()) == 1 and len(returns) == 1 and returns[0].is_list
            if any(a.type == "MemoryFormat" for a in op.schema.args):
                return "PY", label, _with_memory_formats(op, as_list)
            return "OP", label, (op, as_list)
        composite = _registry.COMPOSITES.get(op_name) or _registry.COMPOSITES.get(op_name.partition(".")[0])
        if composite is not None:
            return "PY", label, composite
        return None

    def _move(self, label, sources, dests, live_on):
        """Copy block results into their destination registers; sources dead afterwards are dropped."""
        src = [self._reg_of(v) for v in sources]
        drops = [r for r in self._drop_ids({id(v) for v in sources} - live_on) if r not in dests]
        if src or drops:
            self._emit(Instruction("MOVE", label, inputs=src, outputs=dests, drops=drops))

    def _emit_if(self, node, after):
        cond = node.inputs()[0]
        outs = [self._register(v) for v in node.outputs()]
        live_in_branches = self._live.branch_in[id(node)]
        jf = self._emit(Instruction("JF", inputs=[self._reg_of(cond)], node=node,
                                    drops=self._drop_ids({id(cond)} - after - live_in_branches)))
        rest = after - {id(v) for v in node.outputs()}
        skip = None
        for i, block in enumerate(node.blocks()):
            if i == 1:
                jf.target = len(self.instructions)
            entry = self._drop_ids(self._live.entry_drops[id(block)])
            if entry:
                self._emit(Instruction("DROP", drops=entry))
            self._emit_block(block)
            self._move(f"block{i} result", block.outputs(), outs, rest)
            if i == 0:
                skip = self._emit(Instruction("JMP"))
        skip.target = len(self.instructions)
        dead = self._drop_ids({id(v) for v in node.outputs()} - after)
        if dead:
            self._emit(Instruction("DROP", drops=dead))

    def _emit_loop(self, node, after):
        max_trip, init_cond, *inits = node.inputs()
        body = node.blocks()[0]
        counter_in, *carried_in = body.inputs()
        keep = self._live.loop_keep[id(node)]
        trip = self._register(name=f"$trip{len(self.registers)}")
        cond = self._register(name=f"$cond{len(self.registers)}")
        i_reg = self._register(counter_in)
        carried = [self._register(v) for v in carried_in]
        outs = [self._register(v) for v in node.outputs()]
        live_on = after | keep
        if self._zero is None:
            self._zero = self._register(name="$0")
            self._const.add(self._zero)
            self._frame += [None] * (self._zero - len(self._frame)) + [0]
        src = [self._zero, self._reg_of(init_cond)] + [self._reg_of(v) for v in inits]
        drops = [r for r in self._drop_ids({id(v) for v in [init_cond] + inits} - live_on)]
        self._emit(Instruction("MOVE", "loop entry", inputs=src, outputs=[trip, cond] + carried, drops=drops))
        head = len(self.instructions)
        loop = self._emit(Instruction("LOOP", inputs=[trip, self._reg_of(max_trip), cond], outputs=[i_reg],
                                      node=node))
        self._emit_block(body)
        self._move("loop back", body.outputs(), [cond] + carried, live_on)
        self._emit(Instruction("JMP", target=head))
        loop.target = len(self.instructions)
        exit_drops = [trip, cond, i_reg] + carried
        exit_drops += self._drop_ids(({id(v) for v in node.outputs()} | keep) - after)
        self._emit(Instruction("MOVE", "loop exit", inputs=carried, outputs=outs,
                               drops=[r for r in dict.fromkeys(exit_drops) if r not in outs]))

    # -- running
    def run(self, inputs):
        """Run the program on `inputs` (a list, one per graph input) and return the list of outputs."""
        if len(inputs) != self._n_inputs:
            raise RuntimeError(f"expected {self._n_inputs} inputs to the graph, got {len(inputs)}")
        regs = self._frame.copy()
        regs[:self._n_inputs] = inputs
        steps = self._steps
        n = len(steps) - 1
        pc = 0
        try:
            while pc < n:
                pc = steps[pc](regs)
        except Exception as e:
            raise _wrap_error(e, self.instructions[pc])
        return [regs[r] for r in self._outputs]

    __call__ = run

    def trace_run(self, inputs, out=print):
        """Run step by step, reporting each executed instruction and the values it wrote (slow; for reading)."""
        regs = self._frame.copy()
        regs[:self._n_inputs] = inputs
        pc, n = 0, len(self.instructions) - 1
        while pc < n:
            ins = self.instructions[pc]
            nxt = ins.step(regs)
            wrote = "" if ins.opcode == "LOOP" and nxt != pc + 1 else \
                ", ".join(f"{self.registers[r]}={_short(regs[r])}" for r in ins.outputs)
            out(f"{pc:4}  {ins.format(self.registers)}" + (f"    => {wrote}" if wrote else ""))
            pc = nxt
        return [regs[r] for r in self._outputs]

    def __str__(self):
        lines = [f"Interpreter: {len(self.registers)} registers"]
        for pc, ins in enumerate(self.instructions):
            lines.append(f"{pc:4}  {ins.format(self.registers)}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<lantern.jit.Interpreter: {len(self.instructions)} instructions, {len(self.registers)} registers>"


def _short(v):
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return f"{v.dtype}{list(v.shape)}"
    text = repr(v)
    return text if len(text) < 40 else text[:37] + "..."


_UNPACKS = ("prim::TupleUnpack", "prim::ListUnpack", "prim::ConstantChunk")


def _compile_step(ins, pc):
    """The instruction as a Python function of the register file that returns the next pc (generated once, so
    running an instruction is one call with no decoding)."""
    ns = {"call": _dispatcher.call, "fn": ins.fn}
    args = "".join(f"r[{i}], " for i in ins.inputs)
    outs = "".join(f"r[{o}], " for o in ins.outputs)
    op = ins.opcode
    body = []
    if op in ("OP", "PY", "CALL", "FUSED"):
        if op == "OP":
            ns["op"], as_list = ins.fn
            expr = f"list(call(op, ({args})))" if as_list else f"call(op, ({args}))"
        else:
            expr = f"fn({args})"
        if not ins.outputs:
            body.append(expr)
        elif len(ins.outputs) == 1 and not ins.label.startswith(_UNPACKS):
            body.append(f"r[{ins.outputs[0]}] = {expr}")
        else:
            body.append(f"{outs}= {expr}")
    elif op == "MOVE" and ins.inputs:
        body.append(f"{outs}= {args}")
    elif op == "LOOP":
        t, m, c = ins.inputs
        body += [f"t = r[{t}]", f"if t >= r[{m}] or not r[{c}]:", f"    return {ins.target}",
                 f"r[{ins.outputs[0]}] = t", f"r[{t}] = t + 1", f"return {pc + 1}"]
    elif op == "JF":
        body.append(f"c = r[{ins.inputs[0]}]")
    if ins.drops and op != "LOOP":
        body.append(" = ".join(f"r[{d}]" for d in ins.drops) + " = None")
    if op == "JF":
        body.append(f"return {pc + 1} if c else {ins.target}")
    elif op == "JMP":
        body.append(f"return {ins.target}")
    elif op != "LOOP":
        body.append(f"return {pc + 1}")
    src = "def step(r):\n" + "".join(f"    {line}\n" for line in body)
    return generated.in_memory(f"jit instruction {pc}: {op} {ins.label}", "step", src, ns)  # lines in linecache


_HEADER = ("The following operation failed in the TorchScript interpreter.\n"
           "Traceback of TorchScript (most recent call last):\n")


def _where(node):
    """The failing node for the traceback: its source line (from a `file:line:col` source range) and the node."""
    rng = node.sourceRange()
    text = f"  {_node_text(node)}\n"
    if not rng:
        return text
    parts = str(rng).rsplit(":", 2)
    if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return f"  {rng}\n{text}"
    path, line, col = parts[0], int(parts[1]), int(parts[2])
    source = linecache.getline(path, line).rstrip()
    where = f'  File "{path}", line {line}\n'
    if source:
        where += f"{source}\n{' ' * col}~ <--- HERE\n"
    return where + text


def _wrap_error(e, ins):
    """torch's interpreter error: a scripted raise becomes jit.Error, any other failure RuntimeError, both with
    the failing node's source; errors already wrapped by an inner graph pass through."""
    if isinstance(e, Error) or str(e).startswith(_HEADER):
        return e
    where = _where(ins.node) if ins.node is not None else ""
    if isinstance(e, _ScriptRaise):
        return Error(f"{_HEADER}{where}{e}\n")
    wrapped = RuntimeError(f"{_HEADER}{where}RuntimeError: {e}\n")
    wrapped.__cause__ = e
    return wrapped
