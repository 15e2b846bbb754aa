"""The script frontend's IR emitter: a Python function's AST -> an SSA Graph (torch's ir_emitter, in Python).

Expressions evaluate either to IR Values or to "sugared" compile-time values (a Python module such as `lantern`,
a submodule, a bound method) that only become nodes when called. Statements update an environment mapping names
to Values; `if` and loops open blocks whose changed variables become the If/Loop outputs. Exits were moved to the
ends of statement lists by frontend_exits, so `break` and `return` only set the special names '$cont' and '$ret'.

>>> import lantern
>>> from lantern.jit.frontend import script
>>> def f(x, n: int):
...     return x * n + 1
>>> [n.kind() for n in script(f).graph.nodes()]
['prim::Constant', 'aten::mul', 'aten::add']
"""
import ast
import builtins
import importlib
import inspect
import operator
import typing

import lantern
from .. import _tensor
from .._tensor import Tensor
from ..core import dtype as _dt
from ..ops.op_kinds import AliasKind, OpKind
from ..ops.registry import REGISTRY
from .types import (TensorType, IntType, FloatType, BoolType, StrType, NoneType, ListType, TupleType,
                    OptionalType, DictType, AnyType, DeviceType, DtypeType, type_of)
from .frontend_exits import transform, UNINITIALIZED
from .lowering import lower
from . import language

INT_MAX = 9223372036854775807


class NotSupportedError(Exception):
    """A Python construct TorchScript does not compile (torch.jit.frontend.NotSupportedError)."""


NotSupportedError.__module__ = "lantern.jit.frontend"


class _Ctx:
    """Where a function's source came from, to point at the failing line in errors."""

    def __init__(self, filename, lines, line_offset):
        self.filename, self.lines, self.line_offset = filename, lines, line_offset

    def describe(self, node):
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return ""
        text = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        col = getattr(node, "col_offset", 0) or 0
        end = getattr(node, "end_col_offset", None)
        width = max(1, (end - col) if end is not None and getattr(node, "end_lineno", lineno) == lineno else 1)
        return (f'  File "{self.filename}", line {lineno + self.line_offset}\n{text}\n'
                f"{' ' * col}{'~' * width} <--- HERE\n")


class _CompileError(Exception):
    """Raised inside the emitter; converted at the top to RuntimeError / NotSupportedError with the source line."""

    def __init__(self, message, node=None, cls=RuntimeError):
        super().__init__(message)
        self.message, self.node, self.cls = message, node, cls


def error(message, node=None):
    return _CompileError(message, node)


def not_supported(message, node=None):
    return _CompileError(message, node, NotSupportedError)


# ---------------------------------------------------------------------------------------------- sugared values

class Sugared:
    """A compile-time value that is not (yet) an IR Value."""


class PyObj(Sugared):
    """A Python object reached through globals: a module (lantern, F, math), a function, a class, a constant."""

    def __init__(self, obj, qualname):
        self.obj, self.qualname = obj, qualname


class ModuleValue(Sugared):
    """A module in script code: `self` or a submodule, with its IR value (the GetAttr result) and Python object."""

    def __init__(self, value, module, compiler):
        self.value, self.module, self.compiler = value, module, compiler


class BoundMethod(Sugared):
    """`value.name` before the call: a Tensor or list method."""

    def __init__(self, value, name):
        self.value, self.name = value, name


class ModuleMethod(Sugared):
    def __init__(self, owner, name):
        self.owner, self.name = owner, name


class ConstTuple(Sugared):
    """A tuple of sugared values (a ModuleList's children, unrolled)."""

    def __init__(self, items):
        self.items = items


# ------------------------------------------------------------------------------------------ annotation parsing

def _parse_annotation(ann, resolve, node=None):
    """A TorchScript Type from a Python annotation object (typing.List[int], int, lantern.Tensor, 'str')."""
    if ann is inspect.Parameter.empty:
        return TensorType.get()
    if isinstance(ann, str):
        try:
            ann = resolve(ann)
        except Exception:
            raise error(f"Unknown type annotation: '{ann}'", node) from None
    if ann is None or ann is type(None):
        return NoneType.get()
    simple = {int: IntType.get(), float: FloatType.get(), bool: BoolType.get(), str: StrType.get()}
    if ann in simple:
        return simple[ann]
    if isinstance(ann, type) and issubclass(ann, Tensor):
        return TensorType.get()
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin in (list, typing.List):
        return ListType(_parse_annotation(args[0], resolve, node))
    if origin in (tuple, typing.Tuple):
        return TupleType([_parse_annotation(a, resolve, node) for a in args])
    if origin in (dict, typing.Dict):
        return DictType(_parse_annotation(args[0], resolve, node), _parse_annotation(args[1], resolve, node))
    if origin is typing.Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return OptionalType(_parse_annotation(rest[0], resolve, node))
    if getattr(ann, "__name__", None) == "Final" or origin is getattr(typing, "Final", None):
        return _parse_annotation(args[0], resolve, node) if args else AnyType.get()
    if ann is typing.Any:
        return AnyType.get()
    raise error(f"Unknown type annotation: '{ann}'", node)


def _is_tensor(t):
    return isinstance(t, TensorType)


def _is_number(t):
    return isinstance(t, (IntType, FloatType, BoolType))


def unify_types(a, b):
    """The type both a and b fit, or None (int and float do not unify, as in TorchScript)."""
    if a == b:
        return a
    if _is_tensor(a) and _is_tensor(b):
        return TensorType.get()
    if isinstance(a, NoneType) and not isinstance(b, NoneType):
        return b if isinstance(b, OptionalType) else OptionalType(b)
    if isinstance(b, NoneType):
        return unify_types(b, a)
    if isinstance(a, OptionalType) and b.is_subtype_of(a.getElementType()):
        return a
    if isinstance(b, OptionalType) and a.is_subtype_of(b.getElementType()):
        return b
    if isinstance(a, AnyType):
        return b
    if isinstance(b, AnyType):
        return a
    return None


# ----------------------------------------------------------------------------------------------- the emitter

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
           ast.Mod: "remainder", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "__and__",
           ast.BitOr: "__or__", ast.BitXor: "__xor__"}
_TENSOR_BINOPS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "floordiv": "floor_divide",
                  "remainder": "remainder", "pow": "pow", "__and__": "bitwise_and", "__or__": "bitwise_or",
                  "__xor__": "bitwise_xor"}
_REFLECTED = {"sub": "__rsub__", "div": "__rtruediv__", "floordiv": "__rfloordiv__", "remainder": "__rmod__",
              "pow": "__rpow__", "matmul": "__rmatmul__"}
_FOLD = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
         "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
         "ne": operator.ne}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def registry_op(fn):
    """The registry Operator behind a generated lantern binding (lantern.add, Tensor.add), else None."""
    return getattr(fn, "lantern_op", None)


class FunctionEmitter:
    """Emits one function (or method) body into `graph`."""

    def __init__(self, compiler, graph, ctx, fn_globals, closure):
        self.compiler, self.graph, self.ctx = compiler, graph, ctx
        self.globals, self.closure = fn_globals, closure
        self._consts = {}
        self._last_const = None
        self.loop_depth = 0

    # -- helpers -------------------------------------------------------------------------------------------
    def const(self, value, type_=None):
        """A pooled prim::Constant hoisted to the top of the graph (torch's constant pooling)."""
        key = None
        if value is None or isinstance(value, (bool, int, float, str)):
            key = (type(value), value, str(type_) if type_ is not None else None)
            if key in self._consts:
                return self._consts[key]
        node = self.graph.create("prim::Constant", [], 1)
        if value is not None:
            node.attrs["value"] = value
        out = node.output()
        out.setType(type_ if type_ is not None else _const_type(value))
        top = self.graph.block()
        if self._last_const is None:
            top.prependNode(node)
        else:
            node.insertAfter(self._last_const)
        self._last_const = node
        if key is not None:
            self._consts[key] = out
        return out

    def emit_node(self, kind, inputs, out_types, attrs=None, src=None):
        node = self.graph.create(kind, list(inputs), len(out_types))
        for k, v in (attrs or {}).items():
            node.attrs[k] = v
        for o, t in zip(node.outputs(), out_types):
            o.setType(t)
        if kind.startswith("aten::") and "op" not in (attrs or {}):
            node.attrs.pop("op", None)
        if src is not None and self.ctx is not None:
            node.setSourceRange(self._range(src))
        self.graph.insertNode(node)
        return node

    def _range(self, src):
        return f"{self.ctx.filename}:{getattr(src, 'lineno', 0) + self.ctx.line_offset}:" \
               f"{getattr(src, 'col_offset', 0)}"

    def node1(self, kind, inputs, out_type, attrs=None, src=None):
        return self.emit_node(kind, inputs, [out_type], attrs, src).output()

    def as_value(self, v, src=None):
        if isinstance(v, Sugared):
            if isinstance(v, ModuleValue):
                return v.value
            if isinstance(v, PyObj):
                obj = v.obj
                if obj is None or isinstance(obj, (bool, int, float, str)):
                    return self.const(obj)
                if isinstance(obj, _dt.dtype):
                    return self.const(obj, DtypeType.get())
            if isinstance(v, ConstTuple):
                vals = [self.as_value(i, src) for i in v.items]
                return self.node1("prim::TupleConstruct", vals, TupleType([x.type() for x in vals]))
            raise error(f"cannot use {getattr(v, 'qualname', type(v).__name__)} as a value in TorchScript", src)
        return v

    def as_bool(self, v, src=None):
        v = self.as_value(v, src)
        t = v.type()
        if isinstance(t, BoolType):
            return v
        if _is_tensor(t) or _is_number(t):
            return self.node1("aten::Bool", [v], BoolType.get(), src=src)
        if isinstance(t, (ListType, StrType, DictType)):
            n = self.node1("aten::len", [v], IntType.get(), src=src)
            return self.node1("aten::ne", [n, self.const(0)], BoolType.get(), src=src)
        if isinstance(t, OptionalType):
            return self.node1("aten::__isnot__", [v, self.const(None)], BoolType.get(), src=src)
        raise error(f"Could not cast value of type {t} to bool", src)

    @staticmethod
    def const_value(v):
        """The Python value of a prim::Constant output (or a constant PyObj), else raise KeyError."""
        if isinstance(v, PyObj) and (v.obj is None or isinstance(v.obj, (bool, int, float, str))):
            return v.obj
        if not isinstance(v, Sugared) and v.node().kind() == "prim::Constant" and "value" in v.node().attrs:
            return v.node().attrs["value"]
        raise KeyError

    def is_const(self, v):
        try:
            self.const_value(v)
            return True
        except KeyError:
            return False

    # -- function ------------------------------------------------------------------------------------------
    def emit_function(self, fndef, arg_types, return_type, sugared=None):
        env = {}
        for (name, t), value in zip(arg_types, self.graph.inputs()):
            env[name] = value
        env.update(sugared or {})
        body = transform(fndef.body)
        self.emit_stmts(body, env)
        if env.get("$raised"):
            ret = self.node1("prim::Uninitialized", [], return_type or NoneType.get())
        else:
            ret = env.get("$ret")
            if ret is None:
                ret = self.const(None)
        if return_type is not None:
            ret = self.coerce(ret, return_type, fndef, "Return value was annotated as having type {want} but is "
                                                       "actually of type {got}")
        self.graph.registerOutput(ret)

    def coerce(self, v, want, src, message):
        got = v.type()
        if got.is_subtype_of(want) or isinstance(want, AnyType):
            return v
        if isinstance(want, OptionalType) and got.is_subtype_of(want.getElementType()):
            return v
        if _is_tensor(got) and _is_tensor(want):
            return v
        raise error(message.format(want=want, got=got), src)

    # -- statements ----------------------------------------------------------------------------------------
    def emit_stmts(self, stmts, env):
        for s in stmts:
            if env.get("$raised"):
                return
            self.emit_stmt(s, env)

    def emit_stmt(self, s, env):
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise not_supported(f"{_describe_stmt(s)} aren't supported", s)
        method(s, env)

    def stmt_Expr(self, s, env):
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # docstring
        self.emit_expr(s.value, env)

    def stmt_Pass(self, s, env):
        pass

    def stmt_Return(self, s, env):
        env["$ret"] = self.as_value(self.emit_expr(s.value, env), s) if s.value is not None else self.const(None)

    def stmt_Break(self, s, env):
        if not self.loop_depth:
            raise error("SyntaxError: 'break' outside loop", s)
        env["$cont"] = self.const(False)

    def stmt_Continue(self, s, env):
        if not self.loop_depth:
            raise error("SyntaxError: 'continue' outside loop", s)

    def stmt_Raise(self, s, env):
        msg = None
        exc = s.exc
        if isinstance(exc, ast.Call) and exc.args:
            msg = self.as_value(self.emit_expr(exc.args[0], env), s)
        name = ast.unparse(exc.func if isinstance(exc, ast.Call) else exc) if exc is not None else "Exception"
        inputs = [msg] if msg is not None else []
        self.emit_node("prim::RaiseException", inputs, [], {"exception": name}, s)
        env["$raised"] = True

    def stmt_Assert(self, s, env):
        cond = self.as_bool(self.emit_expr(s.test, env), s)
        node = self.emit_node("prim::If", [cond], [], src=s)
        node.addBlock()
        fail = node.addBlock()
        with self.graph.insert_point_guard(fail):
            msg = self.as_value(self.emit_expr(s.msg, env), s) if s.msg is not None else self.const(
                "AssertionError: ")
            self.emit_node("prim::RaiseException", [msg], [], {"exception": "AssertionError"}, s)

    def stmt_Assign(self, s, env):
        value = self.emit_expr(s.value, env)
        for target in s.targets:
            self.assign(target, value, env, s)

    def stmt_AnnAssign(self, s, env):
        want = _parse_annotation(self.eval_annotation(s.annotation), self.resolve_annotation, s)
        if s.value is None:
            raise not_supported("annotated declarations without a value aren't supported", s)
        if isinstance(s.value, (ast.List, ast.Dict)) and not (s.value.elts if isinstance(s.value, ast.List)
                                                                else s.value.keys):
            value = self.empty_container(want, s)
        else:
            value = self.coerce(self.as_value(self.emit_expr(s.value, env), s), want, s,
                                "Variable was annotated as having type {want} but is actually of type {got}")
        self.assign(s.target, value, env, s)

    def empty_container(self, want, s):
        if isinstance(want, ListType):
            return self.node1("prim::ListConstruct", [], want, src=s)
        if isinstance(want, DictType):
            return self.node1("prim::DictConstruct", [], want, src=s)
        raise error(f"Cannot annotate an empty container as {want}", s)

    def stmt_AugAssign(self, s, env):
        op = _BINOPS.get(type(s.op))
        if op is None:
            raise not_supported("this augmented assignment isn't supported", s)
        if not isinstance(s.target, ast.Name):
            raise not_supported("augmented assignment to anything but a variable isn't supported", s)
        lhs = self.as_value(self.lookup(s.target.id, env, s.target), s)
        rhs = self.as_value(self.emit_expr(s.value, env), s)
        if _is_tensor(lhs.type()) and op in _TENSOR_BINOPS:
            result = self.call_op(self.registry(_TENSOR_BINOPS[op] + "_"), [lhs, rhs], {}, s)
        elif isinstance(lhs.type(), ListType) and op == "add":
            result = self.node1("aten::add_", [lhs, rhs], lhs.type(), src=s)
        else:
            result = self.binop(op, lhs, rhs, s)
        env[s.target.id] = result

    def assign(self, target, value, env, src):
        if isinstance(value, ConstTuple) and isinstance(target, (ast.Tuple, ast.List)):
            if len(value.items) != len(target.elts):
                raise error(f"too many values to unpack: need {len(target.elts)} but found {len(value.items)}", src)
            for sub, v in zip(target.elts, value.items):
                self.assign(sub, v, env, src)
            return
        if isinstance(target, ast.Name):
            if (not isinstance(value, Sugared) and not value.hasDebugName() and not target.id.startswith("__")
                    and value.node().kind() != "prim::Constant"):
                value.setDebugName(target.id)
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            value = self.as_value(value, src)
            t = value.type()
            n = len(target.elts)
            if isinstance(t, TupleType):
                if len(t.elements()) != n:
                    raise error(f"too many values to unpack: need {n} but found {len(t.elements())}", src)
                outs = self.tuple_items(value, src)
            elif isinstance(t, ListType):
                outs = self.emit_node("prim::ListUnpack", [value], [t.getElementType()] * n, src=src).outputs()
            else:
                raise error(f"cannot unpack a value of type {t}", src)
            for sub, v in zip(target.elts, outs):
                self.assign(sub, v, env, src)
        elif isinstance(target, ast.Subscript):
            self.assign_subscript(target, self.as_value(value, src), env, src)
        elif isinstance(target, ast.Attribute):
            base = self.emit_expr(target.value, env)
            if not isinstance(base, ModuleValue):
                raise not_supported("attribute assignment is only supported on modules", src)
            self.emit_node("prim::SetAttr", [base.value, self.as_value(value, src)], [], {"name": target.attr},
                           src)
        else:
            raise not_supported("this assignment target isn't supported", src)

    def assign_subscript(self, target, value, env, src):
        base = self.as_value(self.emit_expr(target.value, env), src)
        t = base.type()
        if isinstance(t, (ListType, DictType)):
            key = self.as_value(self.emit_expr(target.slice, env), src)
            self.emit_node("aten::_set_item", [base, key, value], [], src=src)
        elif _is_tensor(t):
            view = self.index_tensor(base, target.slice, env, src)
            if _is_tensor(value.type()):
                self.call_op(self.registry("copy_"), [view, value], {}, src)
            else:
                self.call_op(self.registry("fill_"), [view, value], {}, src)
        else:
            raise error(f"'{t}' object does not support item assignment", src)

    def stmt_If(self, s, env):
        test = self.emit_expr(s.test, env)
        if self.is_const(test) and isinstance(self.const_value(test), bool):
            self.emit_stmts(s.body if self.const_value(test) else s.orelse, env)  # static if (is_scripting...)
            return
        cond = self.as_bool(test, s)
        refine = self.refinements(s.test, env)
        self.emit_if(cond, lambda e: self.emit_stmts(s.body, e), lambda e: self.emit_stmts(s.orelse, e), env, s,
                     refine)

    def refinements(self, test, env):
        """`x is not None` / `x is None` on an Optional variable: its element type inside the matching branch."""
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
                and isinstance(test.ops[0], (ast.Is, ast.IsNot))):
            v = env.get(test.left.id)
            if v is not None and not isinstance(v, Sugared) and isinstance(v.type(), OptionalType):
                return (test.left.id, v, isinstance(test.ops[0], ast.IsNot))
        return None

    def emit_if(self, cond, then_fn, else_fn, env, src, refine=None):
        node = self.emit_node("prim::If", [cond], [], src=src)
        envs = []
        for i, fn in enumerate((then_fn, else_fn)):
            block = node.addBlock()
            e = dict(env)
            with self.graph.insert_point_guard(block):
                cast = None
                if refine is not None and refine[2] == (i == 0):
                    name, v, _ = refine
                    cast = e[name] = self.node1("prim::unchecked_cast", [v], v.type().getElementType())
                fn(e)
                if cast is not None and e.get(name) is cast:
                    e[name] = v  # the refinement ends with the branch
            envs.append((block, e))
        self.merge_if(node, envs, env, src)

    def merge_if(self, node, envs, env, src):
        (b0, e0), (b1, e1) = envs
        raised0, raised1 = e0.get("$raised"), e1.get("$raised")
        if raised0 and raised1:
            env["$raised"] = True
            return
        names = []
        for name in list(e0) + [n for n in e1 if n not in e0]:
            if name == "$raised":
                continue
            in0, in1 = name in e0, name in e1
            if raised0 or raised1:
                live = e1 if raised0 else e0
                if name not in live or live[name] is env.get(name):
                    continue
            elif not (in0 and in1) and name not in ("$cont", "$ret"):
                continue
            elif in0 and in1 and e0[name] is env.get(name) and e1[name] is env.get(name):
                continue
            names.append(name)
        for name in names:
            vals = []
            for block, e, raised in ((b0, e0, raised0), (b1, e1, raised1)):
                with self.graph.insert_point_guard(block):
                    v = e.get(name)
                    if raised:
                        v = None
                    elif v is None:
                        v = self.const(name != "$ret") if name == "$cont" else self.const(None)
                    vals.append(v)
            known = [v for v in vals if v is not None]
            if any(isinstance(v, Sugared) for v in known):
                if all(v is known[0] for v in known):
                    env[name] = known[0]
                    continue
                raise error(f"{name} is a compile-time value that differs between the branches", src)
            t = known[0].type()
            for v in known[1:]:
                u = unify_types(t, v.type())
                if u is None:
                    raise error(f"Type mismatch: {name} is set to type {vals[0].type()} in the true branch and "
                                f"type {vals[1].type()} in the false branch", src)
                t = u
            for i, (block, e, raised) in enumerate(((b0, e0, raised0), (b1, e1, raised1))):
                if vals[i] is None:
                    with self.graph.insert_point_guard(block):
                        vals[i] = self.node1("prim::Uninitialized", [], t)
                self.fix_uninitialized(vals[i], t)
                block.registerOutput(vals[i])
            out = node.addOutput()
            out.setType(t)
            if not name.startswith(("$", "__")):
                out.setDebugName(name)
            env[name] = out
        if raised0 or raised1:
            live = e1 if raised0 else e0
            for name in live:
                if name not in names and not name.startswith("$"):
                    env[name] = live[name]

    @staticmethod
    def fix_uninitialized(v, t):
        if v.node().kind() == "prim::Uninitialized" and isinstance(v.type(), AnyType):
            v.setType(t)

    # -- loops ---------------------------------------------------------------------------------------------
    def stmt_For(self, s, env):
        if s.orelse:
            raise not_supported("else branches of for loops aren't supported", s)
        it = s.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" \
                and "range" not in env:
            args = [self.as_value(self.emit_expr(a, env), s) for a in it.args]
            for a in args:
                if not isinstance(a.type(), IntType):
                    raise error(f"range(): expected int arguments, found {a.type()}", s)
            if len(args) == 1:
                self.emit_loop(args[0], self.const(True), s, env, lambda i, e: self.assign(s.target, i, e, s))
                return
            start, end = args[0], args[1]
            step = args[2] if len(args) > 2 else self.const(1)
            trips = self.node1("aten::__range_length", [start, end, step], IntType.get(), src=s)

            def bind(i, e):
                idx = self.node1("aten::__derive_index", [i, start, step], IntType.get(), src=s)
                self.assign(s.target, idx, e, s)
            self.emit_loop(trips, self.const(True), s, env, bind)
            return
        counted = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate"
                   and "enumerate" not in env and len(it.args) == 1 and not it.keywords)
        seq = self.emit_expr(it.args[0] if counted else it, env)
        if isinstance(seq, (ModuleValue, ConstTuple)):
            items = seq.items if isinstance(seq, ConstTuple) else self.module_children(seq, s)
            for i, item in enumerate(items):  # a ModuleList/Sequential: unrolled at compile time, as torch does
                self.assign(s.target, ConstTuple([self.const(i), item]) if counted else item, env, s)
                self.emit_stmts(s.body, env)
            return
        seq = self.as_value(seq, s)
        t = seq.type()
        if isinstance(t, ListType):
            def element(i):
                return self.node1("aten::__getitem__", [seq, i], t.getElementType(), src=s)
        elif _is_tensor(t):
            def element(i):
                return self.call_op(self.registry("select"), [seq, self.const(0), i], {}, s)
        else:
            raise not_supported(f"iterating over a value of type {t} isn't supported", s)

        def bind(i, e):
            item = element(i)
            self.assign(s.target, ConstTuple([i, item]) if counted else item, e, s)
        self.emit_loop(self.node1("aten::len", [seq], IntType.get(), src=s), self.const(True), s, env, bind)

    def stmt_While(self, s, env):
        if s.orelse:
            raise not_supported("else branches of while loops aren't supported", s)
        cond = self.as_bool(self.emit_expr(s.test, env), s)
        self.emit_loop(self.const(INT_MAX), cond, s, env, None, while_test=s.test)

    def emit_loop(self, trips, cond, s, env, bind, while_test=None):
        carried = [n for n in _assigned_names(s.body) if n in env and not isinstance(env[n], Sugared)]
        node = self.emit_node("prim::Loop", [trips, cond] + [env[n] for n in carried], [], src=s)
        block = node.addBlock()
        i = block.addInput()
        i.setType(IntType.get())
        body_env = dict(env)
        body_env.pop("$cont", None)
        inputs = []
        for n in carried:
            v = block.addInput()
            v.setType(env[n].type())
            if not n.startswith("__"):
                v.setDebugName(n)
            body_env[n] = v
            inputs.append(v)
        self.loop_depth += 1
        with self.graph.insert_point_guard(block):
            if bind is not None:
                bind(i, body_env)
            self.emit_stmts(s.body, body_env)
            raised = body_env.get("$raised")
            cont = body_env.get("$cont")
            if raised:
                cont = self.const(False)
            elif while_test is not None:
                if cont is None:
                    cont = self.as_bool(self.emit_expr(while_test, body_env), s)
                else:
                    sub = self.emit_node("prim::If", [cont], [BoolType.get()], src=s)
                    t_block, f_block = sub.addBlock(), sub.addBlock()
                    with self.graph.insert_point_guard(t_block):
                        t_block.registerOutput(self.as_bool(self.emit_expr(while_test, body_env), s))
                    f_block.registerOutput(self.const(False))
                    cont = sub.output()
            elif cont is None:
                cont = self.const(True)
        self.loop_depth -= 1
        block.registerOutput(cont)
        for n, v_in in zip(carried, inputs):
            v = body_env.get(n, v_in) if not raised else v_in
            if isinstance(v, Sugared):
                raise error(f"{n} cannot be reassigned to a compile-time value inside a loop", s)
            want = v_in.type()
            if v.type() != want:
                u = unify_types(want, v.type())
                initial = env[n]
                if isinstance(want, AnyType) or (initial.node().kind() == "prim::Uninitialized"):
                    u = v.type()
                    initial.setType(u)
                    v_in.setType(u)
                elif u is None or u != want and not (_is_tensor(u) and _is_tensor(want)):
                    raise error(f"Loop-carried variable {n} has type {want}, but is set to type {v.type()} in "
                                "the loop", s)
            block.registerOutput(v)
        for n, v_in in zip(carried, inputs):
            out = node.addOutput()
            out.setType(v_in.type())
            if not n.startswith("__"):
                out.setDebugName(n)
            env[n] = out

    # -- expressions ---------------------------------------------------------------------------------------
    def emit_expr(self, e, env):
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise not_supported(f"{type(e).__name__} expressions aren't supported", e)
        return method(e, env)

    def expr_Constant(self, e, env):
        v = e.value
        if v is Ellipsis or isinstance(v, (bytes, complex)):
            raise not_supported(f"{type(v).__name__} literals aren't supported", e)
        return self.const(v)

    def expr_JoinedStr(self, e, env):
        fmt, args = "", []
        for part in e.values:
            if isinstance(part, ast.Constant):
                fmt += str(part.value).replace("{", "{{").replace("}", "}}")
            else:
                fmt += "{}"
                args.append(self.as_value(self.emit_expr(part.value, env), e))
        return self.node1("aten::format", [self.const(fmt)] + args, StrType.get(), src=e)

    def lookup(self, name, env, src):
        if name in env:
            return env[name]
        if name in self.closure:
            return self.py_value(self.closure[name], name)
        if name in self.globals:
            return self.py_value(self.globals[name], name)
        if hasattr(builtins, name):
            return PyObj(getattr(builtins, name), name)
        raise error(f"undefined value {name}", src)

    def py_value(self, obj, name):
        module = getattr(obj, "__module__", None)
        return PyObj(obj, f"{module}.{getattr(obj, '__name__', name)}" if module else name)

    def expr_Name(self, e, env):
        return self.lookup(e.id, env, e)

    def expr_Attribute(self, e, env):
        base = self.emit_expr(e.value, env)
        name = e.attr
        if isinstance(base, PyObj):
            if not hasattr(base.obj, name):
                raise error(f"object has no attribute {name}", e)
            obj = getattr(base.obj, name)
            qual = f"{base.obj.__name__}.{name}" if inspect.ismodule(base.obj) else f"{base.qualname}.{name}"
            return PyObj(obj, qual)
        if isinstance(base, ModuleValue):
            return base.compiler.module_attribute(self, base, name, e)
        v = self.as_value(base, e)
        t = v.type()
        if _is_tensor(t):
            if name == "shape":
                return self.node1("aten::size", [v], ListType(IntType.get()), src=e)
            if name == "dtype":
                return self.node1("prim::dtype", [v], IntType.get(), src=e)
            if name == "device":
                return self.node1("prim::device", [v], DeviceType.get(), src=e)
            if name in ("T", "mT", "real", "imag", "data", "grad", "is_cuda", "requires_grad", "ndim"):
                return self.python_call(f"Tensor.{name}", [v], {}, _TENSOR_PROPS.get(name, TensorType.get()), e,
                                        attr=True)
        return BoundMethod(v, name)

    def expr_Tuple(self, e, env):
        vals = [self.emit_expr(x, env) for x in e.elts]
        if any(isinstance(v, ModuleValue) or isinstance(v, PyObj) and callable(v.obj) for v in vals):
            return ConstTuple(vals)  # modules or functions, chosen from by a constant index
        vals = [self.as_value(v, e) for v in vals]
        return self.node1("prim::TupleConstruct", vals, TupleType([v.type() for v in vals]), src=e)

    def expr_List(self, e, env):
        vals = [self.as_value(self.emit_expr(x, env), e) for x in e.elts]
        if not vals:
            return self.node1("prim::ListConstruct", [], ListType(TensorType.get()), src=e)
        t = vals[0].type()
        for v in vals[1:]:
            u = unify_types(t, v.type())
            if u is None:
                raise error(f"Lists must contain only a single type, expected: {t} but found {v.type()} instead",
                            e)
            t = u
        if _is_tensor(t):
            t = TensorType.get()
        return self.node1("prim::ListConstruct", vals, ListType(t), src=e)

    def expr_Dict(self, e, env):
        if not e.keys:
            return self.node1("prim::DictConstruct", [], DictType(StrType.get(), TensorType.get()), src=e)
        flat = []
        for k, v in zip(e.keys, e.values):
            if k is None:
                raise not_supported("dict unpacking isn't supported", e)
            flat += [self.as_value(self.emit_expr(k, env), e), self.as_value(self.emit_expr(v, env), e)]
        vt = flat[1].type()
        return self.node1("prim::DictConstruct", flat, DictType(flat[0].type(), TensorType.get() if _is_tensor(vt)
                                                                 else vt), src=e)

    def expr_IfExp(self, e, env):
        test = self.emit_expr(e.test, env)
        if self.is_const(test) and isinstance(self.const_value(test), bool):
            return self.emit_expr(e.body if self.const_value(test) else e.orelse, env)
        cond = self.as_bool(test, e)
        scratch = dict(env)
        self.emit_if(cond, lambda en: en.__setitem__("$value", self.as_value(self.emit_expr(e.body, en), e)),
                     lambda en: en.__setitem__("$value", self.as_value(self.emit_expr(e.orelse, en), e)),
                     scratch, e)
        return scratch.pop("$value")

    def expr_BoolOp(self, e, env):
        result = self.as_bool(self.emit_expr(e.values[0], env), e)
        for operand in e.values[1:]:
            if self.is_const(result) and isinstance(self.const_value(result), bool):  # decided at compile time:
                if self.const_value(result) == isinstance(e.op, ast.Or):            # the rest is not compiled
                    return result
                result = self.as_bool(self.emit_expr(operand, env), e)
                continue
            scratch = dict(env)
            right = lambda en, operand=operand: en.__setitem__("$value", self.as_bool(self.emit_expr(operand, en),
                                                                                       e))
            if isinstance(e.op, ast.And):
                self.emit_if(result, right, lambda en: en.__setitem__("$value", self.const(False)), scratch, e)
            else:
                self.emit_if(result, lambda en: en.__setitem__("$value", self.const(True)), right, scratch, e)
            result = scratch.pop("$value")
        return result

    def expr_UnaryOp(self, e, env):
        v = self.as_value(self.emit_expr(e.operand, env), e)
        t = v.type()
        if isinstance(e.op, ast.Not):
            if self.is_const(v) and isinstance(self.const_value(v), bool):  # `not is_scripting()` stays static
                return self.const(not self.const_value(v))
            return self.node1("aten::__not__", [self.as_bool(v, e)], BoolType.get(), src=e)
        if isinstance(e.op, ast.UAdd):
            return v
        if isinstance(e.op, ast.USub):
            if _is_tensor(t):
                return self.call_op(self.registry("neg"), [v], {}, e)
            if self.is_const(v):
                return self.const(-self.const_value(v))
            return self.node1("aten::neg", [v], t, src=e)
        if isinstance(e.op, ast.Invert) and _is_tensor(t):
            return self.call_op(self.registry("bitwise_not"), [v], {}, e)
        raise not_supported("this unary operator isn't supported", e)

    def expr_BinOp(self, e, env):
        op = _BINOPS.get(type(e.op))
        if op is None:
            raise not_supported("this binary operator isn't supported", e)
        lhs = self.as_value(self.emit_expr(e.left, env), e)
        rhs = self.as_value(self.emit_expr(e.right, env), e)
        return self.binop(op, lhs, rhs, e)

    def binop(self, op, lhs, rhs, src):
        lt, rt = lhs.type(), rhs.type()
        if _is_tensor(lt) or _is_tensor(rt):
            if op == "matmul":
                return self.python_call("lantern.matmul", [lhs, rhs], {}, TensorType.get(), src, kind="matmul")
            if _is_tensor(lt):
                return self.call_op(self.registry(_TENSOR_BINOPS[op]), [lhs, rhs], {}, src)
            if op in ("add", "mul", "__and__", "__or__", "__xor__"):
                return self.call_op(self.registry(_TENSOR_BINOPS[op]), [rhs, lhs], {}, src)
            if op == "sub":
                return self.call_op(self.registry("rsub"), [rhs, lhs], {}, src)
            return self.python_call(f"Tensor.{_REFLECTED[op]}", [rhs, lhs], {}, TensorType.get(), src,
                                    kind=_REFLECTED[op])
        if _is_number(lt) and _is_number(rt):
            if op == "div":
                out = FloatType.get()
            elif op == "pow" and isinstance(lt, IntType) and isinstance(rt, IntType):
                out = FloatType.get()
            elif op in ("__and__", "__or__", "__xor__") and isinstance(lt, BoolType) and isinstance(rt, BoolType):
                out = BoolType.get()
            elif isinstance(lt, FloatType) or isinstance(rt, FloatType):
                out = FloatType.get()
            else:
                out = IntType.get()
            if self.is_const(lhs) and self.is_const(rhs) and op in _FOLD and not (
                    op == "div" and not self.const_value(rhs)):  # e.g. an unrolled ModuleList index
                value = _FOLD[op](self.const_value(lhs), self.const_value(rhs))
                return self.const({"int": int, "float": float, "bool": bool}[str(out)](value))
            return self.node1(f"aten::{op}", [lhs, rhs], out, src=src)
        if op == "add" and lt == rt and isinstance(lt, (StrType, ListType)):
            return self.node1("aten::add", [lhs, rhs], lt, src=src)
        if op == "mul" and isinstance(lt, (StrType, ListType)) and isinstance(rt, IntType):
            return self.node1("aten::mul", [lhs, rhs], lt, src=src)
        raise error(f"Arguments for call are not valid: unsupported operand types for {op}: '{lt}' and '{rt}'",
                    src)

    def expr_Compare(self, e, env):
        left = self.as_value(self.emit_expr(e.left, env), e)
        result = None
        for op, comp in zip(e.ops, e.comparators):
            right = self.as_value(self.emit_expr(comp, env), e)
            value = self.compare(op, left, right, e)
            if result is None:
                result = value
            else:
                result = self.node1("aten::__and__", [self.as_bool(result, e), self.as_bool(value, e)],
                                    BoolType.get(), src=e)
            left = right
        return result

    def compare(self, op, lhs, rhs, src):
        lt, rt = lhs.type(), rhs.type()
        if isinstance(op, (ast.Is, ast.IsNot)):
            kind = "aten::__is__" if isinstance(op, ast.Is) else "aten::__isnot__"
            if isinstance(lt, NoneType) and isinstance(rt, NoneType):
                return self.const(isinstance(op, ast.Is))
            if isinstance(rt, NoneType) and not isinstance(lt, (OptionalType, NoneType, AnyType)):
                return self.const(isinstance(op, ast.IsNot))
            return self.node1(kind, [lhs, rhs], BoolType.get(), src=src)
        if isinstance(op, (ast.In, ast.NotIn)):
            out = self.node1("aten::__contains__", [rhs, lhs], BoolType.get(), src=src)
            if isinstance(op, ast.NotIn):
                out = self.node1("aten::__not__", [out], BoolType.get(), src=src)
            return out
        name = _CMPOPS[type(op)]
        if _is_tensor(lt):
            return self.call_op(self.registry(name), [lhs, rhs], {}, src)
        if _is_tensor(rt):
            return self.call_op(self.registry(_FLIPPED[name]), [rhs, lhs], {}, src)
        if (_is_number(lt) and _is_number(rt)) or lt == rt:
            if self.is_const(lhs) and self.is_const(rhs):
                return self.const(bool(_FOLD[name](self.const_value(lhs), self.const_value(rhs))))
            return self.node1(f"aten::{name}", [lhs, rhs], BoolType.get(), src=src)
        raise error(f"Arguments for call are not valid: cannot compare '{lt}' and '{rt}'", src)

    def expr_Subscript(self, e, env):
        base = self.emit_expr(e.value, env)
        if isinstance(base, PyObj):
            raise not_supported("subscripting a Python object isn't supported", e)
        if isinstance(base, ConstTuple):
            idx = self.const_value(self.emit_expr(e.slice, env))
            return base.items[idx]
        if isinstance(base, ModuleValue):
            children = self.module_children(base, e)
            idx = self.const_value(self.emit_expr(e.slice, env))
            return children[idx]
        v = self.as_value(base, e)
        t = v.type()
        if _is_tensor(t):
            return self.index_tensor(v, e.slice, env, e)
        if isinstance(t, TupleType):
            idx = self.emit_expr(e.slice, env)
            if not self.is_const(idx):
                raise error("tuple indices must be integer constants", e)
            return self.tuple_items(v, e)[self.const_value(idx)]
        if isinstance(e.slice, ast.Slice):
            raise not_supported("slicing lists isn't supported", e)
        key = self.as_value(self.emit_expr(e.slice, env), e)
        if isinstance(t, ListType):
            return self.node1("aten::__getitem__", [v, key], t.getElementType(), src=e)
        if isinstance(t, DictType):
            return self.node1("aten::__getitem__", [v, key], t.getValueType(), src=e)
        if isinstance(t, StrType):
            return self.node1("aten::__getitem__", [v, key], StrType.get(), src=e)
        raise error(f"'{t}' object is not subscriptable", e)

    def tuple_items(self, value, src):
        """A tuple's items: a TupleConstruct's inputs directly (torch's LowerSimpleTuples), else a TupleUnpack."""
        if value.node().kind() == "prim::TupleConstruct":
            return list(value.node().inputs())
        return list(self.emit_node("prim::TupleUnpack", [value], value.type().elements(), src=src).outputs())

    def index_tensor(self, v, index, env, src):
        """x[i], x[a:b], x[:, i], x[None], x[mask]: select / slice / unsqueeze / index ops, as torch emits."""
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        dim = 0
        out = v
        for item in items:
            if isinstance(item, ast.Slice):
                start = self.as_value(self.emit_expr(item.lower, env), src) if item.lower else self.const(None)
                end = self.as_value(self.emit_expr(item.upper, env), src) if item.upper else self.const(None)
                step = self.as_value(self.emit_expr(item.step, env), src) if item.step else self.const(1)
                if not (item.lower or item.upper or item.step):
                    dim += 1
                    continue
                out = self.call_op(self.registry("slice"), [out, self.const(dim), start, end, step], {}, src)
                dim += 1
                continue
            if isinstance(item, ast.Constant) and item.value is None:
                out = self.call_op(self.registry("unsqueeze"), [out, self.const(dim)], {}, src)
                dim += 1
                continue
            if isinstance(item, ast.Constant) and item.value is Ellipsis:
                raise not_supported("Ellipsis in tensor indexing isn't supported", src)
            idx = self.as_value(self.emit_expr(item, env), src)
            if isinstance(idx.type(), IntType):
                out = self.call_op(self.registry("select"), [out, self.const(dim), idx], {}, src)
            elif _is_tensor(idx.type()) and len(items) == 1:
                lst = self.node1("prim::ListConstruct", [idx], ListType(OptionalType(TensorType.get())), src=src)
                out = self.call_op(self.registry("index.Tensor"), [out, lst], {}, src)
            else:
                raise not_supported(f"indexing a tensor with a value of type {idx.type()} isn't supported", src)
        return out

    def expr_ListComp(self, e, env):
        """[elt for target in iter]: an empty list filled by a prim::Loop (typed by its first append)."""
        if len(e.generators) != 1 or e.generators[0].is_async:
            raise not_supported("Only a single generator is currently supported", e)
        gen = e.generators[0]
        if gen.ifs:
            raise not_supported("Comprehension ifs are not supported yet", e)
        result = self.node1("prim::ListConstruct", [], ListType(AnyType.get()), src=e)
        name = f"__comprehension{len(env)}"
        body = [ast.Expr(ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "append", ast.Load()), [e.elt], []))]
        loop = ast.For(gen.target, gen.iter, body, [])
        ast.copy_location(loop, e)
        ast.fix_missing_locations(loop)
        scratch = dict(env)
        scratch[name] = result
        self.stmt_For(loop, scratch)
        if isinstance(result.type().getElementType(), AnyType):
            result.setType(ListType(TensorType.get()))
        return result

    def expr_Lambda(self, e, env):
        raise not_supported("Lambda aren't supported", e)

    # -- calls ---------------------------------------------------------------------------------------------
    def expr_Call(self, e, env):
        if isinstance(e.func, ast.Name) and e.func.id == UNINITIALIZED:
            return self.node1("prim::Uninitialized", [], AnyType.get(), src=e)
        func = self.emit_expr(e.func, env)
        if any(isinstance(a, ast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            raise not_supported("starred arguments aren't supported", e)
        if isinstance(func, PyObj) and (func.obj is isinstance or func.obj is language.isinstance):
            return self.call_isinstance(e, env)
        if isinstance(func, PyObj) and func.obj is language.annotate:
            return self.call_annotate(e, env)
        args = [self.emit_expr(a, env) for a in e.args]
        kwargs = {k.arg: self.emit_expr(k.value, env) for k in e.keywords}
        return self.call(func, args, kwargs, e)

    def call_isinstance(self, e, env):
        v = self.as_value(self.emit_expr(e.args[0], env), e)
        cls = self.eval_annotation(e.args[1])
        classes = cls if isinstance(cls, tuple) else (cls,)
        result = any(v.type().is_subtype_of(_parse_annotation(c, self.resolve_annotation, e)) for c in classes)
        return self.const(bool(result))

    def call_annotate(self, e, env):
        """annotate(T, value): the value as a T (an empty list or dict literal becomes an empty container of T)."""
        if len(e.args) != 2 or e.keywords:
            raise error("annotate() takes a type and a value", e)
        want = _parse_annotation(self.eval_annotation(e.args[0]), self.resolve_annotation, e)
        value = e.args[1]
        if isinstance(value, (ast.List, ast.Dict)) and not (value.elts if isinstance(value, ast.List) else value.keys):
            return self.empty_container(want, e)
        return self.coerce(self.as_value(self.emit_expr(value, env), e), want, e,
                           "Value was annotated as having type {want} but is actually of type {got}")

    def call(self, func, args, kwargs, src):
        if isinstance(func, BoundMethod):
            return self.call_method(func, args, kwargs, src)
        if isinstance(func, ModuleMethod):
            return func.owner.compiler.call_module_method(self, func.owner, func.name, args, kwargs, src)
        if isinstance(func, ModuleValue):
            return func.compiler.call_module_method(self, func, "forward", args, kwargs, src)
        if not isinstance(func, PyObj):
            raise error("this value is not callable", src)
        obj = func.obj
        special = getattr(self, "builtin_" + getattr(obj, "__name__", ""), None)
        if special is not None and obj is getattr(builtins, obj.__name__, None):
            return special(args, kwargs, src)
        lowered = lower(self, obj, args, kwargs, src)
        if lowered is not None:
            return lowered
        op = registry_op(obj)
        if op is not None:
            return self.call_op(op, [self.as_value(a, src) for a in args],
                                {k: self.as_value(v, src) for k, v in kwargs.items()}, src)
        if (getattr(obj, "__module__", None) or "").startswith("lantern") and args:
            vals = [self.as_value(a, src) for a in args]
            if _is_tensor(vals[0].type()):
                out = self.try_overloads(getattr(obj, "__name__", ""), vals,
                                         {k: self.as_value(v, src) for k, v in kwargs.items()}, src)
                if out is not None:
                    return out
        return self.compiler.call_python(self, obj, func.qualname, args, kwargs, src)

    def call_method(self, m, args, kwargs, src):
        v, name = m.value, m.name
        t = v.type()
        args = [self.as_value(a, src) for a in args]
        kwargs = {k: self.as_value(a, src) for k, a in kwargs.items()}
        if _is_tensor(t):
            fn = getattr(Tensor, name, None)
            if fn is None:
                raise error(f"Tensor has no method {name}", src)
            op = registry_op(fn)
            if op is not None:
                return self.call_op(op, [v] + args, kwargs, src)
            out = self.try_overloads(name, [v] + args, kwargs, src)
            if out is not None:
                return out
            if name == "size":
                if args:
                    return self.node1("aten::size", [v, args[0]], IntType.get(), src=src)
                return self.node1("aten::size", [v], ListType(IntType.get()), src=src)
            if name == "dim":
                return self.node1("aten::dim", [v], IntType.get(), src=src)
            ret = _TENSOR_METHOD_RETURNS.get(name, TensorType.get())
            return self.python_call(f"Tensor.{name}", [v] + args, kwargs, ret, src, kind=name)
        if isinstance(t, ListType):
            if name == "append":
                want = t.getElementType()
                if isinstance(want, AnyType):  # a comprehension's list: typed by its first element
                    want = TensorType.get() if _is_tensor(args[0].type()) else args[0].type()
                    t = ListType(want)
                    v.setType(t)
                a = self.coerce(args[0], want, src, "Expected a value of type {want} for argument 'el' but "
                                                    "instead found type {got}")
                self.emit_node("aten::append", [v, a], [t], src=src)
                return self.const(None)
            if name == "pop" and not args:
                return self.node1("aten::pop", [v], t.getElementType(), src=src)
        if isinstance(t, DictType) and name in ("keys", "values", "items"):
            rt = {"keys": ListType(t.getKeyType()), "values": ListType(t.getValueType()),
                  "items": ListType(TupleType([t.getKeyType(), t.getValueType()]))}[name]
            return self.node1(f"aten::{name}", [v], rt, src=src)
        if isinstance(t, StrType) and name == "format":
            return self.node1("aten::format", [v] + args, StrType.get(), src=src)
        raise error(f"Unknown method {name} on a value of type {t}", src)

    def python_call(self, qualname, args, kwargs, ret, src, kind=None, attr=False):
        """A call of a Python-level lantern function: aten::<name> with attribute python=qualname."""
        kind = kind or qualname.rpartition(".")[2]
        inputs = list(args) + list(kwargs.values())
        attrs = {"python": qualname}
        if kwargs:
            attrs["kwnames"] = tuple(kwargs)
        if attr:
            attrs["getattr"] = True
        if kwargs or attr or not _runs_by_name(qualname, kind):
            # the interpreter's by-name fallback would not find it: call the Python function itself
            attrs = {"fn": _PythonRef(qualname, attrs.get("kwnames", ()), attr)}
            node = self.emit_node("prim::CallFunction", inputs, [ret], attrs, src)
            return node.output()
        node = self.emit_node(f"aten::{kind}", inputs, [ret] if not isinstance(ret, list) else ret, attrs, src)
        return node.output() if not isinstance(ret, list) else node.outputs()

    def try_overloads(self, name, args, kwargs, src):
        """A hand-written lantern function or method over registry ops (view, max, transpose): the first
        overload `name` / `name.<overload>` whose schema accepts the arguments, as torch's overload matching."""
        for op in _overloads(name):
            try:
                return self.call_op(op, list(args), dict(kwargs), src)
            except _CompileError:
                continue
        return None

    def registry(self, name):
        return REGISTRY[name]

    def call_op(self, op, args, kwargs, src):
        """An aten::<op> node: arguments bound to the schema, defaults materialised as constants."""
        schema = op.schema
        params = schema.args
        positional = [p for p in params if not p.kwarg_only]
        if len(args) > len(positional):
            last = positional[-1] if positional else None
            if last is not None and last.is_list and last.type == "int" and len(args) >= len(positional):
                k = len(positional) - 1
                packed = self.node1("prim::ListConstruct", args[k:], ListType(IntType.get()), src=src)
                args = args[:k] + [packed]
            else:
                raise error(f"{schema.name}() expected at most {len(positional)} argument(s) but received "
                            f"{len(args)} argument(s). Declaration: {schema.text}", src)
        bound = []
        for i, p in enumerate(params):
            if i < len(args) and not p.kwarg_only:
                v = args[i]
            elif p.name in kwargs or (p.name == "self" and "input" in kwargs):
                v = kwargs.pop(p.name if p.name in kwargs else "input")
            elif not p.required:
                d = p.default
                v = self.const(list(d) if isinstance(d, tuple) else d)
            else:
                raise error(f"{schema.name}() is missing value for argument '{p.name}'. Declaration: "
                            f"{schema.text}", src)
            if p.is_list and p.type == "int" and isinstance(v.type(), IntType):
                v = self.node1("prim::ListConstruct", [v], ListType(IntType.get()), src=src)
            self.check_op_arg(schema, p, v, src)
            bound.append(v)
        if kwargs:
            name = next(iter(kwargs))
            raise error(f"{schema.name}() got an unexpected keyword argument '{name}'", src)
        out_types = [_schema_type(r) for r in schema.returns]
        node = self.emit_node(f"aten::{schema.name}", bound, out_types, {"op": op.name}, src)
        if len(out_types) == 1:
            return node.output()
        return self.node1("prim::TupleConstruct", list(node.outputs()), TupleType(out_types), src=src)

    def check_op_arg(self, schema, p, v, src):
        t = v.type()
        if p.type == "Tensor" and not p.is_list:
            ok = _is_tensor(t) or _is_number(t) or (p.optional and isinstance(t, (NoneType, OptionalType)))
            want = "Tensor"
        elif p.type in ("int", "float", "Scalar", "bool") and not p.is_list:
            ok = _is_number(t) or (p.optional and isinstance(t, (NoneType, OptionalType))) or (
                p.type == "Scalar" and _is_tensor(t))
            want = {"Scalar": "number"}.get(p.type, p.type)
        elif p.type == "str":
            ok = isinstance(t, StrType) or (p.optional and isinstance(t, NoneType))
            want = "str"
        else:
            return
        if not ok:
            raise error(f"Arguments for call are not valid.\n  {schema.text}:\n  Expected a value of type '{want}' "
                        f"for argument '{p.name}' but instead found type '{t}'.\n\nThe original call is", src)

    # -- builtins ------------------------------------------------------------------------------------------
    def builtin_len(self, args, kwargs, src):
        return self.node1("aten::len", [self.as_value(args[0], src)], IntType.get(), src=src)

    def _convert(self, kind, t, args, src):
        v = self.as_value(args[0], src)
        if v.type() == t:
            return v
        return self.node1(kind, [v], t, src=src)

    def builtin_int(self, args, kwargs, src):
        return self._convert("aten::Int", IntType.get(), args, src)

    def builtin_float(self, args, kwargs, src):
        return self._convert("aten::Float", FloatType.get(), args, src)

    def builtin_bool(self, args, kwargs, src):
        return self.as_bool(args[0], src)

    def builtin_str(self, args, kwargs, src):
        return self._convert("aten::str", StrType.get(), args, src)

    def _minmax(self, name, args, src):
        vals = [self.as_value(a, src) for a in args]
        if len(vals) == 2 and all(_is_number(v.type()) for v in vals):
            t = FloatType.get() if any(isinstance(v.type(), FloatType) for v in vals) else vals[0].type()
            return self.node1(f"prim::{name}", vals, t, src=src)
        if len(vals) == 1 and isinstance(vals[0].type(), ListType):
            return self.node1(f"prim::{name}", vals, vals[0].type().getElementType(), src=src)
        raise not_supported(f"{name}() on these arguments isn't supported", src)

    def builtin_min(self, args, kwargs, src):
        return self._minmax("min", args, src)

    def builtin_max(self, args, kwargs, src):
        return self._minmax("max", args, src)

    def builtin_abs(self, args, kwargs, src):
        v = self.as_value(args[0], src)
        if _is_tensor(v.type()):
            return self.call_op(self.registry("abs"), [v], {}, src)
        return self.node1("prim::abs", [v], v.type(), src=src)

    def builtin_print(self, args, kwargs, src):
        self.emit_node("prim::Print", [self.as_value(a, src) for a in args], [], src=src)
        return self.const(None)

    def builtin_range(self, args, kwargs, src):
        raise not_supported("range() is only supported as the iterable of a for loop", src)

    # -- annotations ---------------------------------------------------------------------------------------
    def resolve_annotation(self, text):
        namespace = dict(vars(typing))
        namespace.update(self.globals)
        namespace.update(self.closure)
        namespace.setdefault("Tensor", _tensor.Tensor)
        return eval(text, namespace)

    def eval_annotation(self, node):
        return self.resolve_annotation(ast.unparse(node))

    def module_children(self, mv, src):
        return mv.compiler.module_children(self, mv, src)


_resolved = {}


def resolve_python(qualname):
    """The callable named by a node's `python` attribute ('lantern.ops.nn_misc.linear', 'Tensor.view')."""
    fn = _resolved.get(qualname)
    if fn is None:
        if qualname.startswith("Tensor."):
            fn = getattr(Tensor, qualname[len("Tensor."):])
        else:
            module, _, name = qualname.rpartition(".")
            fn = getattr(importlib.import_module(module), name)
        _resolved[qualname] = fn
    return fn


_OVERLOADS = {}


def _overloads(name):
    """The functional registry ops spelled `name` or `name.<overload>`, the plain one first."""
    ops = _OVERLOADS.get(name)
    if ops is None:
        ops = [op for key, op in REGISTRY.items() if (key == name or key.startswith(name + "."))
               and op.kind not in (OpKind.STRUCTURED_INPLACE, OpKind.STRUCTURED_OUT) and op.schema.alias is not AliasKind.OUT
               and op.schema.args and op.schema.args[0].is_tensor]
        ops.sort(key=lambda op: op.name != name)
        _OVERLOADS[name] = ops
    return ops


def _runs_by_name(qualname, kind):
    """Whether `aten::<kind>` reaches `qualname` through the interpreter's by-name fallback (lantern.<kind>, else
    the first argument's method <kind>)."""
    target = getattr(lantern, kind, None)
    if qualname.startswith("Tensor."):
        return True
    return target is not None and target is resolve_python(qualname)


class _PythonRef(str):
    """A Python-level lantern callable in a node attribute: prints as its qualified name, calls it."""

    def __new__(cls, qualname, kwnames=(), attr=False):
        self = super().__new__(cls, qualname)
        self.kwnames, self.attr = tuple(kwnames), attr
        return self

    def __call__(self, *args):
        if self.attr:
            return getattr(args[0], self.rpartition(".")[2])
        fn = resolve_python(str(self))
        split = len(args) - len(self.kwnames)
        return fn(*args[:split], **dict(zip(self.kwnames, args[split:])))


_TENSOR_PROPS = {"is_cuda": BoolType.get(), "requires_grad": BoolType.get(), "ndim": IntType.get()}
_TENSOR_METHOD_RETURNS = {"item": FloatType.get(), "numel": IntType.get(), "tolist": AnyType.get(),
                          "is_contiguous": BoolType.get(), "element_size": IntType.get(),
                          "is_floating_point": BoolType.get(), "nelement": IntType.get(),
                          "stride": ListType(IntType.get()), "storage_offset": IntType.get()}


def _schema_type(arg):
    base = {"Tensor": TensorType.get(), "int": IntType.get(), "float": FloatType.get(), "bool": BoolType.get(),
            "str": StrType.get(), "Scalar": FloatType.get(), "ScalarType": IntType.get()}.get(arg.type, AnyType.get())
    if arg.is_list:
        base = ListType(base)
    return OptionalType(base) if arg.optional else base


def _const_type(value):
    if isinstance(value, (list, tuple)) and not value:
        return ListType(IntType.get())
    try:
        return type_of(value)
    except RuntimeError:
        return AnyType.get()


def _describe_stmt(s):
    names = {"With": "with statements", "Try": "try blocks", "Delete": "del statements", "Global": "global variables",
             "Nonlocal": "nonlocal variables", "ClassDef": "class definitions", "FunctionDef": "function definitions",
             "Import": "import statements", "ImportFrom": "import statements", "AsyncFunctionDef": "async functions"}
    return names.get(type(s).__name__, f"{type(s).__name__} statements")


def _assigned_names(stmts):
    """Variables a statement list may assign (its loop-carried candidates), in first-assignment order."""
    out = []
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in out:
                out.append(n.id)
    return out
