"""jit.ir_text: the text form of jit.ir graphs, the printer behind `str(graph)` and the parser `parse_ir`.

Printing follows TorchScript's layout; tensors, tensor lists and graphs that have no literal form print as
`<Tensor>`, `<Tensors>` and `<Graph>` and are restored from `Graph.attribute_table()`.

>>> from lantern.jit.ir_text import parse_ir
>>> g = parse_ir('''
... graph(%x : Tensor):
...   %1 : int = prim::Constant[value=2]()
...   %2 : Tensor = aten::mul(%x, %1)
...   return (%2)
... ''')
>>> g.findNode("aten::mul").inputs()[1].node()["value"]
2
>>> print(g)
graph(%x : Tensor):
  %1 : int = prim::Constant[value=2]()
  %2 : Tensor = aten::mul(%x, %1)
  return (%2)
<BLANKLINE>
"""
import re

import lantern
from .._tensor import Tensor
from ..core.device import device
from ..core.dtype import dtype
from . import types as T
from .ir import Graph, Node

__all__ = ["parse_ir"]


# ---------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------

def _fmt_float(d):
    """A double as TorchScript prints it: 1. / 2.5 / 1.0000000000000001e-05 / inf."""
    if d == d and abs(d) < 1e10 and d == int(d):
        return ("-" if str(d).startswith("-") else "") + str(abs(int(d))) + "."
    return "%.17g" % d


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f",
            "\v": "\\v"}


def _quote(s):
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append("\\%03o" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _scalar_tensor_literal(t):
    """'{2}' for a 0-dim tensor whose value survives the round trip through text, else None."""
    if t.dim() != 0 or t.requires_grad or t.dtype.is_complex:
        return None
    v = t.item()
    if isinstance(v, bool):
        return "{%d}" % v
    if isinstance(v, int):
        return "{%d}" % v
    text = "%g" % v
    cast = t.dtype.np.type
    return "{" + text + "}" if cast(float(text)) == cast(v) or (v != v and text == "nan") else None


class _Printer:
    """Writes graphs in TorchScript's text form; collects subgraphs and opaque attributes."""

    def __init__(self, source_ranges=True):
        self.out = []
        self.groups = []
        self.table = []
        self.source_ranges = source_ranges

    def name(self, v):
        return "%" + v.debugName()

    def decl(self, v):
        return f"{self.name(v)} : {v._type}"

    def graph(self, g):
        ins = [self.decl(v) for v in g.inputs()]
        self.out.append("graph(" + ",\n      ".join(ins) + "):\n")
        self.block_body(g._block, 2)
        self.out.append("  return (" + ", ".join(self.name(v) for v in g.outputs()) + ")\n")
        i = 0
        while i < len(self.groups):
            kind, sub = self.groups[i]
            self.out.append(f"with {kind}_{i} = ")
            self.graph_nested(sub)
            i += 1

    def graph_nested(self, g):
        ins = [self.decl(v) for v in g.inputs()]
        self.out.append("graph(" + ",\n      ".join(ins) + "):\n")
        self.block_body(g._block, 2)
        self.out.append("  return (" + ", ".join(self.name(v) for v in g.outputs()) + ")\n")

    def block_body(self, block, indent):
        for n in block.nodes():
            self.node(n, indent)

    def node(self, n, indent):
        pad = " " * indent
        outs = ", ".join(self.decl(v) for v in n._outputs)
        kind = n._kind
        attrs = dict(n.attrs)
        if isinstance(attrs.get("Subgraph"), Graph):
            kind = f"{kind}_{len(self.groups)}"
            self.groups.append((n._kind, attrs.pop("Subgraph")))
        if n._kind.startswith("aten::") and attrs.get("op") == n._kind[6:]:
            del attrs["op"]
        line = f"{pad}{outs} = {kind}"
        if attrs:
            line += "[" + ", ".join(f"{k}={self.attr(v, top=True)}" for k, v in attrs.items()) + "]"
        line += "(" + ", ".join(self.name(v) for v in n._inputs) + ")"
        if n._source_range and self.source_ranges:
            line += f" # {n._source_range}"
        self.out.append(line + "\n")
        for i, b in enumerate(n._blocks):
            params = ", ".join(self.decl(v) for v in b.inputs())
            self.out.append(f"{pad}  block{i}({params}):\n")
            self.block_body(b, indent + 4)
            self.out.append(f"{pad}    -> (" + ", ".join(self.name(v) for v in b.outputs()) + ")\n")

    def attr(self, v, top):
        if isinstance(v, bool):
            return str(int(v)) if top else str(v)
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return _fmt_float(v)
        if isinstance(v, str):
            return _quote(v)
        if v is None:
            return "None"
        if isinstance(v, dtype):
            return str(T.scalar_type_index(v))
        if isinstance(v, device):
            return _quote(str(v))
        if isinstance(v, Tensor):
            lit = _scalar_tensor_literal(v)
            if lit is not None:
                return lit
            self.table.append(v)
            return "<Tensor>"
        if isinstance(v, Graph):
            self.table.append(v)
            return "<Graph>"
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, Tensor) for x in v):
            self.table.append(v)
            return "[<Tensors>]"
        if isinstance(v, list):
            return "[" + ", ".join(self.attr(x, False) for x in v) + "]"
        if isinstance(v, tuple):
            inner = ", ".join(self.attr(x, False) for x in v)
            return "(" + inner + ("," if len(v) == 1 else "") + ")"
        if isinstance(v, T.Type):
            return str(v)
        raise RuntimeError(f"cannot print attribute value of type {type(v).__name__}")


def parse_ir(text, attribute_table=None):
    """Parse TorchScript IR text (as printed by `str(graph)` or torch) into a Graph.

    `<Tensor>`, `<Tensors>` and `<Graph>` attributes are taken in order from `attribute_table`
    (see `Graph.attribute_table()`)."""
    return _Parser(text, attribute_table).parse()


# ---------------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------------

_PUNCT = ("->", "::", "(", ")", "[", "]", "{", "}", ",", ":", "=", "*", "?", "<", ">")
_LEAF_TYPES = {
    "int": T.IntType, "float": T.FloatType, "bool": T.BoolType, "str": T.StrType, "NoneType": T.NoneType,
    "Device": T.DeviceType, "Scalar": T.NumberType, "number": T.NumberType, "Any": T.AnyType,
    "ScalarType": T.IntType, "Layout": T.IntType, "MemoryFormat": T.IntType,
}
_OCTAL = frozenset("01234567")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", '"': '"', "\\": "\\",
                   "'": "'", "a": "\a"}


class _Tok:
    __slots__ = ("kind", "text", "pos", "comment")

    def __init__(self, kind, text, pos):
        self.kind, self.text, self.pos = kind, text, pos
        self.comment = None

    def __repr__(self):
        return f"{self.kind}:{self.text!r}"


def _is_ident_char(ch):
    return ch.isalnum() or ch in "_."


def _tokenize(text):
    toks, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
            if toks:
                toks[-1].comment = text[i + 1:j].strip()
            i = j
        elif ch == "%":
            j = i + 1
            while j < n and _is_ident_char(text[j]):
                j += 1
            toks.append(_Tok("value", text[i + 1:j], i))
            i = j
        elif ch == '"' or ch == "'":
            j, buf = i + 1, []
            while j < n and text[j] != ch:
                if text[j] == "\\":
                    j += 1
                    if text[j] in _OCTAL:
                        k = j
                        while k < j + 3 and k < n and text[k] in _OCTAL:
                            k += 1
                        buf.append(chr(int(text[j:k], 8)))
                        j = k
                        continue
                    buf.append(_SIMPLE_ESCAPES.get(text[j], text[j]))
                else:
                    buf.append(text[j])
                j += 1
            if j >= n:
                raise RuntimeError(f"parse_ir: unterminated string at offset {i}")
            toks.append(_Tok("string", "".join(buf), i))
            i = j + 1
        elif ch.isdigit() or (ch == "-" and i + 1 < n and (text[i + 1].isdigit() or text[i + 1:i + 4] in
                                                          ("inf", "nan"))):
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "." or
                             (text[j] in "+-" and text[j - 1] in "eE" and text[i:j].lstrip("-")[:1].isdigit())):
                j += 1
            toks.append(_Tok("number", text[i:j], i))
            i = j
        elif ch.isalpha() or ch == "_":
            j = i
            while j < n and _is_ident_char(text[j]):
                j += 1
            while text.startswith("::", j) and j + 2 < n and (text[j + 2].isalpha() or text[j + 2] == "_"):
                j += 2
                while j < n and _is_ident_char(text[j]):
                    j += 1
            toks.append(_Tok("ident", text[i:j], i))
            i = j
        else:
            for p in _PUNCT:
                if text.startswith(p, i):
                    toks.append(_Tok("punct", p, i))
                    i += len(p)
                    break
            else:
                raise RuntimeError(f"parse_ir: unexpected character {ch!r} at offset {i}")
    toks.append(_Tok("eof", "", n))
    return toks


def _number(text):
    body = text.lstrip("-")
    if body in ("inf", "nan"):
        return float(text)
    if any(c in body for c in ".eE") or body in ("inf", "nan"):
        return float(text)
    return int(text)


class _Opaque:
    """A value taken from the attribute table: kept as is, never coerced."""

    def __init__(self, value):
        self.value = value


class _TensorLiteral:
    """A `{2}` attribute: becomes a 0-dim tensor once the output type gives its dtype."""

    def __init__(self, value):
        self.value = value


class _Parser:
    def __init__(self, text, table):
        self.text = text
        self.toks = _tokenize(text)
        self.pos = 0
        self.table = list(table or [])
        # the n-th opaque marker in the text takes table[n], whatever order the sections are parsed in
        self.opaque_index = {}
        for k, t in enumerate(self.toks):
            if t.text == "<" and t.kind == "punct":
                self.opaque_index[t.pos] = len(self.opaque_index)
        self.groups = {}

    # -- token helpers -----------------------------------------------------------------------------
    def peek(self, k=0):
        return self.toks[self.pos + k]

    def next(self):
        t = self.toks[self.pos]
        self.pos += 1
        return t

    def at(self, text, kind=None):
        t = self.toks[self.pos]
        return t.text == text and t.kind != "string" and (kind is None or t.kind == kind)

    def accept(self, text):
        if self.at(text):
            self.pos += 1
            return True
        return False

    def expect(self, text):
        t = self.next()
        if t.text != text or t.kind == "string":
            self.error(f"expected '{text}' but found '{t.text}'", t)
        return t

    def error(self, msg, tok=None):
        tok = tok or self.peek()
        line = self.text.count("\n", 0, tok.pos) + 1
        raise RuntimeError(f"parse_ir: {msg} (line {line})")

    # -- graph structure ---------------------------------------------------------------------------
    def parse(self):
        # Subgraphs are printed after the graph that uses them (`with prim::FusionGroup_0 = graph(...)`), and a
        # subgraph only refers to later ones: parse the sections last to first.
        sections = [(None, self.pos)]
        self.skip_graph()
        while self.accept("with"):
            name = self.next().text
            self.expect("=")
            sections.append((name, self.pos))
            self.skip_graph()
        if self.peek().kind != "eof":
            self.error(f"unexpected '{self.peek().text}' after the graph")
        for name, start in reversed(sections):
            self.pos = start
            g = self.parse_graph()
            self.groups[name] = g
        return g

    def skip_graph(self):
        self.expect("graph")
        while not (self.at("with", "ident") or self.peek().kind == "eof"):
            self.pos += 1

    def parse_graph(self):
        g = Graph()
        numeric = [int(m) for m in re.findall(r"%(\d+)\b", self.text)]
        g._next_unique = max(numeric, default=-1) + 1
        self.env = {}
        self.expect("graph")
        self.expect("(")
        if not self.accept(")"):
            while True:
                self.define(g.param_node().addOutput(), *self.value_decl())
                if self.accept(")"):
                    break
                self.expect(",")
        self.expect(":")
        self.parse_nodes(g, g.block())
        self.expect("return")
        for v in self.value_list():
            g.registerOutput(v)
        return g

    def define(self, v, name, type_):
        # As in torch's parser a later definition shadows an earlier one of the same name.
        self.env[name] = v
        v.setType(type_)
        if name.isdigit():
            v._unique = int(name)
        else:
            v.setDebugName(name)

    def use(self, tok):
        if tok.kind != "value":
            self.error(f"expected a value but found '{tok.text}'", tok)
        try:
            return self.env[tok.text]
        except KeyError:
            self.error(f"use of undefined value %{tok.text}", tok)

    def value_decl(self):
        t = self.next()
        if t.kind != "value":
            self.error(f"expected a value name but found '{t.text}'", t)
        if self.accept(":"):
            return t.text, self.parse_type()
        return t.text, T.TensorType.get()  # torch's parser defaults an unannotated value to Tensor

    def value_list(self):
        self.expect("(")
        out = []
        if not self.accept(")"):
            while True:
                out.append(self.use(self.next()))
                if self.accept(")"):
                    break
                self.expect(",")
        return out

    def parse_nodes(self, g, block):
        while True:
            t = self.peek()
            if t.kind == "eof" or (t.kind == "ident" and (t.text == "return" or t.text.startswith("block")
                                                          and self.peek(1).text == "(")) or t.text == "->":
                return
            self.parse_node(g, block)

    def parse_node(self, g, block):
        decls = []
        if self.peek().kind == "value":
            while True:
                decls.append(self.value_decl())
                if not self.accept(","):
                    break
        if decls or self.at("="):
            self.expect("=")
        kt = self.next()
        if kt.kind != "ident":
            self.error(f"expected a node kind but found '{kt.text}'", kt)
        kind, subgraph = kt.text, None
        if kind in self.groups:
            subgraph = self.groups[kind]
            kind = kind.rsplit("_", 1)[0]
        node = Node(g, kind)
        if kind.startswith("aten::"):
            node.attrs["op"] = kind[6:]
        if self.accept("["):
            while not self.accept("]"):
                name = self.next().text
                self.expect("=")
                node.attrs[name] = self.attr_value()
                if not (self.at(",") or self.at("]")):
                    self.error(f"attribute '{name}' of {kind} is not a value the IR text can hold (a tensor "
                               "printed as its data?); print tensors as <Tensor> and pass an attribute_table")
                self.accept(",")
        if subgraph is not None:
            node.attrs["Subgraph"] = subgraph.copy()
        for v in self.value_list():
            node.addInput(v)
        node._source_range = self.toks[self.pos - 1].comment
        for name, type_ in decls:
            self.define(node.addOutput(), name, type_)
        if kind == "prim::Constant" and "value" in node.attrs:
            out_t = node._outputs[0]._type if node._outputs else None
            node.attrs["value"] = _coerce(node.attrs["value"], out_t)
        else:
            for k, v in node.attrs.items():
                node.attrs[k] = _coerce(v, None)
        block.appendNode(node)
        while self.peek().kind == "ident" and self.peek().text.startswith("block") and self.peek(1).text == "(":
            self.next()
            b = node.addBlock()
            self.expect("(")
            if not self.accept(")"):
                while True:
                    self.define(b.param_node().addOutput(), *self.value_decl())
                    if self.accept(")"):
                        break
                    self.expect(",")
            self.expect(":")
            self.parse_nodes(g, b)
            self.expect("->")
            for v in self.value_list():
                b.registerOutput(v)

    # -- attribute values --------------------------------------------------------------------------
    def attr_value(self):
        t = self.next()
        if t.kind == "number":
            return _number(t.text)
        if t.kind == "string":
            return t.text
        if t.kind == "ident":
            if t.text in ("True", "False"):
                return t.text == "True"
            if t.text == "None":
                return None
            if t.text in ("inf", "nan"):
                return float(t.text)
            self.error(f"unexpected attribute value '{t.text}'", t)
        if t.text == "<":
            name = self.next().text
            self.expect(">")
            return self.from_table(name, t)
        if t.text == "{":
            v = self.attr_value()
            self.expect("}")
            return _TensorLiteral(v)
        if t.text in ("[", "("):
            close = "]" if t.text == "[" else ")"
            items = []
            if t.text == "[" and self.at("<"):
                marker = self.next()
                name = self.next().text
                self.expect(">")
                self.expect("]")
                return self.from_table(name, marker)
            while not self.accept(close):
                items.append(self.attr_value())
                if not self.accept(","):
                    self.expect(close)
                    break
            return items if close == "]" else tuple(items)
        self.error(f"unexpected attribute value '{t.text}'", t)

    def from_table(self, what, marker):
        k = self.opaque_index[marker.pos]
        if k >= len(self.table):
            raise RuntimeError(f"parse_ir: the text holds an opaque <{what}> attribute; pass its value in "
                               "attribute_table (see Graph.attribute_table())")
        return _Opaque(self.table[k])

    # -- types -------------------------------------------------------------------------------------
    def parse_type(self):
        t = self.parse_type_atom()
        while True:
            if self.at("[") and self.peek(1).text == "]":
                self.pos += 2
                t = T.ListType(t)
            elif self.accept("?"):
                t = T.OptionalType(t)
            else:
                return t

    def type_args(self, close):
        args = []
        while not self.accept(close):
            args.append(self.parse_type())
            self.accept(",")
        return args

    def parse_type_atom(self):
        t = self.next()
        if t.text == "(":
            return T.TupleType(self.type_args(")"))
        if t.kind != "ident":
            self.error(f"expected a type but found '{t.text}'", t)
        name = t.text
        if name in _LEAF_TYPES:
            return _LEAF_TYPES[name].get()
        if name == "Dict" and self.accept("("):
            k, v = self.type_args(")")
            return T.DictType(k, v)
        if name in ("List", "Optional", "Tuple", "Dict") and self.accept("["):
            args = self.type_args("]")
            if name == "List":
                return T.ListType(args[0])
            if name == "Optional":
                return T.OptionalType(args[0])
            if name == "Dict":
                return T.DictType(*args)
            return T.TupleType(args)
        if name == "Function":
            return T.FunctionType()
        dt = None
        if name.endswith("Tensor") and name != "Tensor":
            dt = T.dtype_from_legacy_name(name[:-6])
            if dt is not None:
                return self.tensor_details(dt, unsized=True)
        if name == "Tensor":
            return self.tensor_details(None, unsized=True)
        dt = T.dtype_from_legacy_name(name)
        if dt is not None:
            return self.tensor_details(dt, unsized=False)
        return T.ClassType(name)

    def tensor_details(self, dt, unsized):
        if not self.at("("):
            return T.TensorType(dt) if dt is not None else T.TensorType.get()
        self.next()
        sizes, strides, rg, dev = [], None, None, None
        while not self.accept(")"):
            t = self.next()
            if t.text == "*":
                sizes.append(None)
            elif t.kind == "number":
                sizes.append(int(t.text))
            elif t.kind == "ident" and self.at("="):
                self.next()
                if t.text == "strides":
                    self.expect("[")
                    strides = []
                    while not self.accept("]"):
                        s = self.next()
                        strides.append(None if s.text == "*" else int(s.text))
                        self.accept(",")
                elif t.text == "requires_grad":
                    rg = bool(int(self.next().text))
                elif t.text == "device":
                    dev = self.next().text
                    if self.at(":") and self.peek(1).kind == "number":
                        self.next()
                        dev += ":" + self.next().text
                else:
                    self.next()
            else:
                self.error(f"unexpected '{t.text}' in a tensor type", t)
            self.accept(",")
        if unsized and not sizes:
            sizes = None
        if dt is None and sizes is None and strides is None and rg is None and dev is None:
            return T.TensorType.get()
        return T.TensorType(dt, sizes, rg, strides, dev)


def _tensor_from_literal(value, t):
    dt = t.dtype if isinstance(t, T.TensorType) else None
    if dt is None:
        dt = lantern.int64 if isinstance(value, int) and not isinstance(value, bool) else None
    if dt is not None and dt.name == "bool":
        value = bool(value)
    return lantern.tensor(value, dtype=dt)


def _coerce(v, t):
    """Give a parsed attribute the Python type its printed value stood for (guided by the value type)."""
    if isinstance(v, _Opaque):
        return v.value
    if isinstance(v, _TensorLiteral):
        return _tensor_from_literal(v.value, t)
    if isinstance(t, T.OptionalType):
        return None if v is None else _coerce(v, t.elem)
    if isinstance(t, T.BoolType) and isinstance(v, int):
        return bool(v)
    if isinstance(t, T.FloatType) and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if isinstance(t, T.DeviceType) and isinstance(v, str):
        return device(v)
    if isinstance(v, list):
        elem = t.elem if isinstance(t, T.ListType) else None
        return [_coerce(x, elem) for x in v]
    if isinstance(v, tuple):
        elems = t.elems if isinstance(t, T.TupleType) and len(t.elems) == len(v) else (None,) * len(v)
        return tuple(_coerce(x, e) for x, e in zip(v, elems))
    return v
