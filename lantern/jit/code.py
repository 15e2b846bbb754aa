"""Graphs printed as TorchScript-like Python: the `.code` of compiled functions and modules (torch's `.code`).

`python_code(graph, name)` names each value after its debug name (`y`, then `y0`, `y1` for later values of the
same name; `_0`, `_1` for unnamed ones) and follows torch's printer (python_print.cpp): constants are folded into
their uses; an unnamed value used once is written as a nested expression at its use when that keeps the order of
evaluation (and split out again when the expression gets long); `prim::If` becomes if/else and `prim::Loop`
`for ... in range(...)` or `while`. Arguments equal to the operator's defaults are left out (`torch.add(x, 1)` for
`aten::add(%x, %1, %alpha=1)`). Tensor constants print as `CONSTANTS.c0`.

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x.1 : Tensor):
...   %1 : int = prim::Constant[value=1]()
...   %2 : Tensor = aten::add(%x.1, %1, %1)
...   %3 : Tensor = aten::relu(%2)
...   return (%3)''')
>>> print(python_code(g, "f"), end="")
def f(x: Tensor) -> Tensor:
  return torch.relu(torch.add(x, 1))
"""
from ..core.tensor_impl import TensorImpl
from ..ops import registry
from ..ops.schema import NO_DEFAULT
from .types import scalar_type_index
import keyword
import math
import re
import sys

__all__ = ["python_code"]

_INDENT = "  "
_MAX_TRIP = sys.maxsize  # the trip count scripted while-loops get


def annotation(t):
    """A type as a TorchScript annotation: 'Tensor' for every tensor type, 'List[int]', 'Optional[Tensor]'..."""
    return t.annotation_str() if hasattr(t, "annotation_str") else str(t)


def python_code(graph, name="forward", annotate_self=False):
    """The readable Python of `graph` as a function called `name` (a method when input 0 is a module's self;
    `annotate_self` writes self's class too, as torch's saved code does)."""
    return _Printer(graph).function(name, annotate_self)


def _is_class_type(t):
    return type(t).__name__ == "ClassType"


def _float_literal(x):
    if math.isnan(x):
        return 'float("nan")'
    if math.isinf(x):
        return 'float("inf")' if x > 0 else 'float("-inf")'
    if abs(x) < 1e10 and x == int(x):
        return ("-" if math.copysign(1, x) < 0 else "") + f"{abs(int(x))}."
    return "%.17g" % x  # torch prints 17 significant digits: 0.10000000000000001


def _str_literal(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _same_default(value, default):
    """Whether a constant argument equals the schema default (so the printer may leave it out)."""
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return tuple(value) == tuple(default)
    if isinstance(value, bool) or isinstance(default, bool):
        return type(value) is type(default) and value == default
    if isinstance(value, (int, float)) and isinstance(default, (int, float)):
        return value == default
    if value is None or default is None:
        return value is default
    return type(value) is type(default) and value == default


def _long(text, depth):
    """torch's isLongLine: an expression this long, at this indentation, gets a statement of its own."""
    return len(text) + depth * 2 >= 40


def _named(value):
    """Whether a value carries a source name (`y.3`), not just a number (`%5`)."""
    name = value.debugName() if hasattr(value, "debugName") else ""
    return bool(name) and not name.isdigit()


_SCALAR_CASTS = {"aten::Bool": "bool", "aten::Int": "int", "aten::Float": "float", "aten::str": "str",
                 "aten::len": "len"}
_BINARY = {"aten::__is__": "is", "aten::__isnot__": "is not", "aten::__and__": "and", "aten::__or__": "or"}


# lantern's own ops, written as torch ops giving the same values so that torch.jit.load compiles the code
# (_mha_unpack: q, k, v as contiguous copies, the slices of one contiguous copy; its one-stack backward is lantern's)
_TORCH_SPELLINGS = {"_mha_unpack": "torch.unbind(torch.contiguous({}))"}


class _Printer:
    def __init__(self, graph):
        self.graph = graph
        self.names = {}       # Value -> name
        self.taken = set(keyword.kwlist) | {"torch", "ops", "CONSTANTS", "uninitialized", "annotate"}
        self.temps = 0
        self.constants = []   # tensor constants in order of appearance -> CONSTANTS.c<i>
        self.inline = set()   # nodes printed as a nested expression at their single use
        self.exprs = {}       # Value -> its expression, for inlined nodes already reached
        self.const_names = {}  # Value -> name, for constants too long to inline
        self.lines = []
        self._count_uses(graph.block())

    # ---- analysis: which values print as nested expressions (torch's python_print scan) ------------------------
    def _count_uses(self, block):
        """Count every value's uses (block outputs included), then scan for the values to inline."""
        self.uses = {}

        def walk(b):
            for node in b.nodes():
                for i, v in enumerate(node.inputs()):
                    self.uses.setdefault(v, []).append((node, i))
                for sub in node.blocks():
                    walk(sub)
            for v in b.outputs():
                self.uses.setdefault(v, []).append((None, 0))

        walk(block)
        self._scan_block(block)

    def _scan_block(self, block):
        """A value is inlined only where a reverse walk of the block meets its producer exactly where the
        expression tree expects it, so printing never reorders computations."""
        nodes = list(block.nodes())
        self._scan_inputs(nodes, len(nodes), list(block.outputs()), None)
        for index in reversed(range(len(nodes))):
            self._scan_node(nodes, index)

    def _scan_node(self, nodes, index):
        node = nodes[index]
        if node in self.inline:
            return index
        for sub in node.blocks():
            self._scan_block(sub)
        return self._scan_inputs(nodes, index, list(node.inputs()), node)

    def _scan_inputs(self, nodes, index, inputs, user):
        point = self._previous(nodes, index)
        for offset in reversed(range(len(inputs))):
            v = inputs[offset]
            if point >= 0 and nodes[point] is v.node() and self._can_inline(v, user, offset):
                producer = nodes[point]
                point = self._scan_node(nodes, point)
                self.inline.add(producer)
        return point

    @staticmethod
    def _previous(nodes, index):
        index -= 1
        while index >= 0 and nodes[index].kind() == "prim::Constant":
            index -= 1
        return index

    def _can_inline(self, value, user, offset):
        node = value.node()
        if len(list(node.outputs())) != 1 or len(self.uses.get(value, ())) != 1 or list(node.blocks()):
            return False
        if user is not None and _named(value):
            return False  # a variable of the source keeps its name, unless it is just returned
        if user is not None and user.kind() == "prim::Loop" and offset >= 2:
            return False
        return node.kind() != "prim::isinstance"

    # ---- names -----------------------------------------------------------------------------------------------
    def _fresh(self, base):
        if base and base.isidentifier() and base not in self.taken:
            self.taken.add(base)
            return base
        if base and base.isidentifier():
            i = 0
            while f"{base}{i}" in self.taken:
                i += 1
            self.taken.add(f"{base}{i}")
            return f"{base}{i}"
        while f"_{self.temps}" in self.taken:
            self.temps += 1
        name = f"_{self.temps}"
        self.taken.add(name)
        return name

    def name(self, value, hint=None):
        if value not in self.names:
            debug = value.debugName() if hasattr(value, "debugName") else ""
            base, dot, suffix = (debug or "").rpartition(".")
            base = base if dot and suffix.isdigit() else debug
            if not base or base[0].isdigit():
                base = hint
            self.names[value] = self._fresh(base)
        return self.names[value]

    # ---- expressions -----------------------------------------------------------------------------------------
    def literal(self, value):
        if isinstance(value, TensorImpl):
            for i, c in enumerate(self.constants):
                if c is value:
                    return f"CONSTANTS.c{i}"
            self.constants.append(value)
            return f"CONSTANTS.c{len(self.constants) - 1}"
        if isinstance(value, bool) or value is None:
            return str(value)
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return _float_literal(value)
        if isinstance(value, str):
            # a function reference of the script frontend (a str subclass) prints as the name it calls
            return _str_literal(value) if type(value) is str else str(value)
        if isinstance(value, list):
            return "[" + ", ".join(self.literal(v) for v in value) + "]"
        if isinstance(value, tuple):
            items = [self.literal(v) for v in value]
            return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"
        kind = type(value).__name__
        if kind == "device":
            return f"torch.device({_str_literal(str(value))})"
        if kind == "dtype":
            return str(scalar_type_index(value))  # torch's code spells a dtype as its ScalarType int
        if hasattr(value, "name") and callable(value):
            return str(value.name)
        return repr(value)

    def expr(self, value):
        node = value.node()
        if node.kind() == "prim::Constant":
            return self.const_names.get(value) or self.literal(node.attrs.get("value"))
        if value in self.exprs:
            return self.exprs[value]
        return self.name(value)

    def split_long(self, inputs, depth):
        """Inputs whose inlined expression is too long get their own statement, and so do the inlined inputs
        before them, so evaluation order stays that of the graph (torch's splitLongInlines)."""
        last = 0
        for i, v in enumerate(inputs):
            if v in self.exprs and _long(self.exprs[v], depth):
                last = i + 1
        for v in inputs[:last]:
            if v in self.exprs:
                self.emit(depth, f"{self.name(v)} = {self.exprs.pop(v)}")

    def args(self, values):
        return ", ".join(self.expr(v) for v in values)

    def node_expr(self, node):
        kind = node.kind()
        ins = list(node.inputs())
        ns, _, op = kind.partition("::")
        if kind in _SCALAR_CASTS:
            return f"{_SCALAR_CASTS[kind]}({self.args(ins)})"
        if kind in _BINARY:
            return f"{self.expr(ins[0])} {_BINARY[kind]} {self.expr(ins[1])}"
        if kind == "aten::__not__":
            return f"not {self.expr(ins[0])}"
        if kind == "aten::__getitem__" or kind == "prim::TupleIndex":
            return f"{self.expr(ins[0])}[{self.expr(ins[1])}]"
        if ns == "aten":
            if op in _TORCH_SPELLINGS:
                return _TORCH_SPELLINGS[op].format(self.args(ins))
            return f"torch.{op}({self.aten_args(node, ins)})"
        if kind == "prim::GetAttr":
            attr = node.attrs["name"]
            obj = self.expr(ins[0])
            return f"{obj}.{attr}" if attr.isidentifier() else f"getattr({obj}, {_str_literal(attr)})"
        if kind == "prim::CallMethod":
            return f"({self.expr(ins[0])}).{node.attrs['name']}({self.args(ins[1:])}, )"
        if kind == "prim::CallFunction":
            fn = node.attrs.get("fn")
            if fn is None:
                return f"{self.expr(ins[0])}({self.args(ins[1:])})"
            kwnames = tuple(getattr(fn, "kwnames", ()))
            split = len(ins) - len(kwnames)
            args = [self.expr(v) for v in ins[:split]]
            args += [f"{k}={self.expr(v)}" for k, v in zip(kwnames, ins[split:])]
            return f"{fn}({', '.join(args)})"
        if kind == "prim::TupleConstruct":
            items = [self.expr(v) for v in ins]
            return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"
        if kind == "prim::ListConstruct":
            return f"[{self.args(ins)}]"
        if kind == "prim::DictConstruct":
            return "{" + ", ".join(f"{self.expr(k)}: {self.expr(v)}" for k, v in zip(ins[::2], ins[1::2])) + "}"
        if kind in ("prim::TupleUnpack", "prim::ListUnpack"):
            return self.expr(ins[0])
        if kind == "prim::Uninitialized":
            return f"uninitialized({annotation(node.output().type())})"
        if kind == "prim::Print":
            return f"print({self.args(ins)})"
        return f"ops.{ns}.{op}({self.args(ins)})"

    def aten_args(self, node, ins):
        """The arguments of an aten call, dropping trailing ones equal to their schema defaults."""
        schema = self._schema(node)
        if schema is None or len(schema.args) != len(ins):
            keep = len(ins)  # no schema to read defaults from: trailing Nones are defaults in every aten op
            while keep and ins[keep - 1].node().kind() == "prim::Constant" and \
                    ins[keep - 1].node().attrs.get("value") is None:
                keep -= 1
            return self.args(ins[:keep])
        keep = len(ins)
        while keep and schema.args[keep - 1].default is not NO_DEFAULT:
            producer = ins[keep - 1].node()
            if producer.kind() != "prim::Constant" or not _same_default(producer.attrs.get("value"),
                                                                       schema.args[keep - 1].default):
                break
            keep -= 1
        parts = []
        for arg, v in zip(schema.args[:keep], ins[:keep]):
            parts.append(f"{arg.name}={self.expr(v)}" if arg.kwarg_only else self.expr(v))
        return ", ".join(parts)

    @staticmethod
    def _schema(node):
        op = node.attrs.get("op", node.kind().partition("::")[2])
        entry = registry.REGISTRY.get(op) or registry.REGISTRY.get(op.partition(".")[0])
        return entry.schema if entry is not None else None

    # ---- statements ------------------------------------------------------------------------------------------
    def emit(self, depth, text):
        self.lines.append(_INDENT * depth + text)

    def block(self, block, depth):
        for node in block.nodes():
            if node.kind() == "prim::Constant":
                continue
            self.split_long(list(node.inputs()), depth)
            if node.kind() == "prim::If":
                self.if_(node, depth)
            elif node.kind() == "prim::Loop":
                self.loop(node, depth)
            elif node in self.inline:
                self.exprs[node.output()] = self.node_expr(node)
            else:
                self.statement(node, depth)

    def statement(self, node, depth):
        outs = list(node.outputs())
        text = self.node_expr(node)
        hint = node.attrs.get("name") if node.kind() == "prim::GetAttr" else None
        if not outs:
            self.emit(depth, text)
        elif len(outs) == 1:
            self.emit(depth, f"{self.name(outs[0], hint)} = {text}")
        else:
            targets = ", ".join(self.name(v) for v in outs)
            comma = "," if node.kind() in ("prim::TupleUnpack", "prim::ListUnpack") else ""
            self.emit(depth, f"{targets}{comma} = {text}")

    def assign(self, depth, targets, values, together=False):
        """`a = x` for each pair whose sides differ; `together`: one tuple assignment, so swaps stay right."""
        pairs = [(t, self.expr(v) if not isinstance(v, str) else v) for t, v in zip(targets, values)]
        pairs = [(t, e) for t, e in pairs if t != e]
        if together and len(pairs) > 1:
            self.emit(depth, ", ".join(t for t, _ in pairs) + " = " + ", ".join(e for _, e in pairs))
            return
        for t, e in pairs:
            self.emit(depth, f"{t} = {e}")

    def if_(self, node, depth):
        outs = [self.name(v) for v in node.outputs()]
        then, other = list(node.blocks())
        self.emit(depth, f"if {self.expr(node.input())}:")
        mark = len(self.lines)
        self.block(then, depth + 1)
        self.assign(depth + 1, outs, list(then.outputs()))
        if len(self.lines) == mark:
            self.emit(depth + 1, "pass")
        mark = len(self.lines)
        self.emit(depth, "else:")
        self.block(other, depth + 1)
        self.assign(depth + 1, outs, list(other.outputs()))
        if len(self.lines) == mark + 1:
            self.lines.pop()

    def loop(self, node, depth):
        """`for i in range(n):` for a counted loop, `while cond:` for one with a condition (as torch prints)."""
        ins = list(node.inputs())
        trip, cond, init = ins[0], ins[1], ins[2:]
        body = list(node.blocks())[0]
        counter, *carried_in = list(body.inputs())
        cond_next, *carried_out = list(body.outputs())
        names = [self.name(v) for v in node.outputs()]
        for value, name in zip(carried_in, names):
            self.names[value] = name
        self.assign(depth, names, init)
        counter_used = self._used(counter, body)
        if self._constant(trip) == _MAX_TRIP:
            flag = None if self._constant(cond) is True and self._constant(cond_next) is True else self._fresh(None)
            if flag:
                self.emit(depth, f"{flag} = {self.expr(cond)}")
            i = self.name(counter, "i") if counter_used else None
            if i:
                self.emit(depth, f"{i} = 0")
            self.emit(depth, f"while {flag or 'True'}:")
            self.block(body, depth + 1)
            targets, values = ([flag], [cond_next]) if flag else ([], [])
            if i:
                targets, values = targets + [i], values + [f"{i} + 1"]
            self.assign(depth + 1, targets + names, values + carried_out, together=True)
            if self.lines[-1].endswith(":"):
                self.emit(depth + 1, "pass")
            return
        if self._constant(cond) is not True:
            self.emit(depth, f"if {self.expr(cond)}:")
            depth += 1
        i = self.name(counter, "i") if counter_used else self._fresh(None)
        self.emit(depth, f"for {i} in range({self.expr(trip)}):")
        self.block(body, depth + 1)
        self.assign(depth + 1, names, carried_out, together=True)
        if self._constant(cond_next) is not True:
            self.emit(depth + 1, f"if not {self.expr(cond_next)}:")
            self.emit(depth + 2, "break")
        if self.lines[-1].endswith(":"):
            self.emit(depth + 1, "pass")

    @staticmethod
    def _constant(value):
        node = value.node()
        return node.attrs.get("value") if node.kind() == "prim::Constant" else None

    @staticmethod
    def _used(value, block):
        def walk(b):
            for node in b.nodes():
                if any(v is value for v in node.inputs()) or any(walk(s) for s in node.blocks()):
                    return True
            return any(v is value for v in b.outputs())
        return walk(block)

    # ---- the function ----------------------------------------------------------------------------------------
    def constant_table(self):
        """Constants too long to inline are defined first, in order of first use (as torch does)."""
        seen = set()

        def walk(block):
            for node in block.nodes():
                for v in node.inputs():
                    visit(v)
                for sub in node.blocks():
                    walk(sub)
            for v in block.outputs():
                visit(v)

        def visit(v):
            if v in seen or v.node().kind() != "prim::Constant":
                return
            seen.add(v)
            text = self.literal(v.node().attrs.get("value"))
            if _long(text, 1):
                self.emit(1, f"{self.name(v)} = {text}")
                self.const_names[v] = self.name(v)

        walk(self.graph.block())

    def function(self, name, annotate_self):
        inputs = list(self.graph.inputs())
        defaults = getattr(self.graph, "_defaults", None) or [None] * len(inputs)
        params = []
        for i, (v, default) in enumerate(zip(inputs, defaults)):
            is_self = i == 0 and _is_class_type(v.type())
            n = self.name(v, "self" if is_self else "arg")
            param = n if is_self and not annotate_self else f"{n}: {annotation(v.type())}"
            params.append(param if default is None else f"{param}={self.literal(default.value)}")
        outs = list(self.graph.outputs())
        if len(outs) == 1:
            ret_type = annotation(outs[0].type())
        else:
            ret_type = "Tuple[" + ", ".join(annotation(v.type()) for v in outs) + "]"
        self.constant_table()
        self.block(self.graph.block(), 1)
        self.split_long(outs, 1)
        if len(outs) == 1:
            self.emit(1, f"return {self.expr(outs[0])}")
        else:
            self.emit(1, f"return ({self.args(outs)})")
        fname = name if name.isidentifier() else "_" + re.sub(r"\W", "", name)  # '<lambda>' -> '_lambda'
        header = f"def {fname}(" + ",\n    ".join(params) + f") -> {ret_type}:"
        return header + "\n" + "\n".join(self.lines) + "\n"
