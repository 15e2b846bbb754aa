"""From a traced graph to ONNX nodes: each aten node through its symbolic, with mutation made functional.

The converter walks the graph once, running every op on the traced example at the same time (so each value has
a concrete shape and dtype for the symbolics). Tensors alias as in PyTorch: a view is recorded as its base plus
the view steps and is materialised from the base's current ONNX value when read; an in-place or out= op computes
the functional result and writes it back into the base through the steps (`UNVIEWS`), so later reads of the base
or of any of its views see the write. ONNX values stay immutable.

>>> import warnings, lantern
>>> from lantern.onnx.builder import GraphBuilder
>>> def f(x):
...     y = x.clone()
...     y[0].mul_(2)          # select view, in-place mul: written back into y
...     return y
>>> x = lantern.ones(2, 3)
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", DeprecationWarning)
...     graph = lantern.jit.trace(f, x, check_trace=False).graph
>>> g = GraphBuilder(17)
>>> bound = [(graph.inputs()[0], x, g.add_input("x", x.dtype, x.shape))]
>>> conv, outs = convert_graph(g, graph, bound, 17, params={}, export_params=True, symbols={})
>>> [n.op_type for n in g.nodes if n.op_type != "Constant"]
['Gather', 'Mul', 'Unsqueeze', 'Slice', 'Concat']
>>> outs[0][2]
tensor([[2., 2., 2.],
        [1., 1., 1.]])
"""
from ..autograd import grad_mode
from ..core.tensor_impl import TensorImpl
from ..jit.types import ListType, with_memory_formats
from ..ops import dispatcher, registry
from ..ops.op_kinds import AliasKind, OpKind
from .builder import Sym, Var, numpy_of
from .errors import OnnxExporterError, SymbolicValueError, UnsupportedOperatorError
from .symbolic import MIN_OPSET, SYMBOLICS, UNVIEWS

__all__ = ["convert_graph", "symbolic_constants"]


class _Root:
    """A tensor's storage during export: the ONNX value holding its current contents."""

    __slots__ = ("name", "version", "shape", "dtype")

    def __init__(self, name, example):
        self.name, self.version = name, 0
        self.shape, self.dtype = tuple(example.shape), example.dtype


class _Ref:
    """A tensor value: its root and the view steps (op name, args, input shape, output shape) from the root."""

    __slots__ = ("root", "steps")

    def __init__(self, root, steps=()):
        self.root, self.steps = root, steps


class _Missing:
    """An output the symbolic could not give; reading it is an error."""

    def __init__(self, kind, index, opset):
        self.kind, self.index, self.opset = kind, index, opset


class _Converter:
    def __init__(self, g, opset, params, export_params, symbols):
        self.g = g
        self.opset = opset
        self.params = params            # id(tensor) -> state_dict name
        self.export_params = export_params
        self.symbols = symbols          # Value -> constant value with Syms for its dynamic ints
        self.env = {}                   # Value -> _Ref | python value | list of Values
        self.example = {}               # Value -> the traced example's value
        self.param_inputs = {}          # name -> Var for parameters that are graph inputs
        self._views = {}                # (id(ref), version) -> name materialised

    # -- reading values --

    def var(self, value):
        ref = self.env[value]
        if isinstance(ref, _Missing):
            raise OnnxExporterError(f"output {ref.index} of {ref.kind} is not supported by ONNX export at opset "
                                    f"{ref.opset}, but the traced graph uses it")
        example = self.example[value]
        return Var(self._materialise(ref), example.shape, example.dtype)

    def _materialise(self, ref):
        if not ref.steps:
            return ref.root.name
        key = (id(ref), ref.root.version)
        if key not in self._views:
            self._views[key] = self._apply(ref.root.name, ref.root.dtype, ref.steps)[-1]
        return self._views[key]

    def _apply(self, name, dtype, steps):
        """The names along a view chain from `name`: [base, after step 1, ..., after the last step]."""
        names = [name]
        for op, args, in_shape, out_shape in steps:
            self.g.meta = [(out_shape, dtype)]
            self.g.current_op = op
            names.append(SYMBOLICS[op](self.g, Var(names[-1], in_shape, dtype), *args))
        return names

    def write(self, value, new_name):
        """Store `new_name` as the contents of tensor `value` (a root or a view into one)."""
        ref = self.env[value]
        root = ref.root
        example = self.example[value]
        if example.dtype != root.dtype:
            raise OnnxExporterError("ONNX export: an in-place op changed a view's dtype")
        parents = self._apply(root.name, root.dtype, ref.steps[:-1]) if ref.steps else []
        new = new_name
        for (op, args, in_shape, _), parent in zip(reversed(ref.steps), reversed(parents)):
            unview = UNVIEWS.get(op)
            if unview is None:
                raise OnnxExporterError(f"ONNX export cannot write in place through a view made by aten::{op}")
            new = unview(self.g, Var(parent, in_shape, root.dtype), new, *args)
        root.name = new
        root.version += 1

    def arg(self, value):
        """A node argument as a symbolic sees it: Var, list, or Python value."""
        entry = self.env[value]
        if isinstance(entry, (_Ref, _Missing)):
            return self.var(value)
        if isinstance(entry, _ListOf):
            return [self.arg(v) for v in entry.values]
        return entry

    # -- nodes --

    def run_block(self, nodes):
        for node in nodes:
            kind = node.kind()
            if kind.startswith("aten::") and "op" in node.attrs:
                self.aten(node)
            else:
                handler = _PRIM.get(kind)
                if handler is None:
                    raise UnsupportedOperatorError(kind, self.opset, None)
                handler(self, node)

    def new_tensor(self, value, name, example):
        self.env[value] = _Ref(_Root(name, example))
        self.example[value] = example

    def aten(self, node):
        op = registry.get(node.attrs["op"])
        functional = op.functional
        inputs = node.inputs()
        examples = with_memory_formats(op.schema, [self.example[v] for v in inputs])
        with grad_mode.no_grad():
            result = dispatcher.call(op, examples)
        outputs = node.outputs()
        listed = len(outputs) == 1 and isinstance(outputs[0].type(), ListType)   # split, unbind: one Tensor[]
        results = tuple(result) if listed or isinstance(result, tuple) else (result,)
        for out, r in zip(outputs, (result,) if listed else results):
            self.example[out] = r
        if op.kind is OpKind.VIEW and op.schema.alias is AliasKind.VIEW:
            self._view(node, functional.name, inputs, outputs[0])
            return
        alias = op.schema.alias
        fn = SYMBOLICS.get(functional.name)
        mutates = alias in (AliasKind.INPLACE, AliasKind.OUT)
        if fn is None:
            if not mutates and all(not o.uses() for o in outputs):
                return   # dead code (e.g. a check whose result only Python looked at)
            raise UnsupportedOperatorError(node.kind(), self.opset, None)
        needed = MIN_OPSET.get(functional.name)
        if needed is not None and self.opset < needed:
            raise UnsupportedOperatorError(node.kind(), self.opset, needed)
        n_args = len(functional.schema.args)
        args = [self.arg(v) for v in inputs[:n_args]]
        self.g.current_op = functional.name
        self.g.meta = [(tuple(r.shape), r.dtype) if isinstance(r, TensorImpl) else None for r in results]
        names = fn(self.g, *args)
        names = names if isinstance(names, tuple) else (names,)
        if alias is AliasKind.INPLACE:
            targets = [inputs[0]]
        elif alias is AliasKind.OUT:
            targets = list(inputs[n_args:])
        else:
            targets = None
        if targets is not None:
            for target, name, out in zip(targets, names, outputs):
                self.write(target, name)
                self.env[out] = self.env[target]
        elif listed:
            self._new_tensor_list(outputs[0], names, results)
        else:
            self._new_outputs(node, outputs, names, results)

    def _new_tensor_list(self, out, names, tensors):
        """A Tensor[] output (split, unbind): one entry per element, which prim::ListUnpack hands on."""
        elements = [_Element() for _ in names]
        for element, name, t in zip(elements, names, tensors):
            self.new_tensor(element, name, t)
        self.env[out] = _ListOf(elements)

    def _new_outputs(self, node, outputs, names, results):
        for i, (out, name, r) in enumerate(zip(outputs, names, results)):
            if name is None:
                self.env[out] = _Missing(node.kind(), i, self.opset)
                self.example[out] = r
            elif isinstance(r, TensorImpl):
                self.new_tensor(out, name, r)
            else:
                raise OnnxExporterError(f"ONNX export: {node.kind()} returned a non-tensor value")

    def _view(self, node, name, inputs, out):
        if name not in SYMBOLICS:
            if not out.uses():
                return
            raise UnsupportedOperatorError(node.kind(), self.opset, None)
        base = self.env[inputs[0]]
        if isinstance(base, _Missing):
            self.var(inputs[0])
        args = tuple(self.arg(v) for v in inputs[1:])
        step = (name, args, tuple(self.example[inputs[0]].shape), tuple(self.example[out].shape))
        self.env[out] = _Ref(base.root, base.steps + (step,))


class _Element:
    """A key in the converter's tables for one element of a Tensor[] output, which has no Value of its own."""
    __slots__ = ()


class _ListOf:
    __slots__ = ("values",)

    def __init__(self, values):
        self.values = list(values)


# ---- prim nodes ----

def _tensor_constant(conv, out, value):
    """A parameter or buffer (by identity: an initializer under its state_dict name) or another constant tensor.
    The converter's example is a copy, so in-place ops replayed on it leave the model untouched."""
    name = conv.params.get(id(value))
    if name is None:
        name = conv.g.const(numpy_of(value))
    else:
        _use_param(conv, name, value)
    conv.new_tensor(out, name, value.detach().clone())


def _constant(conv, node):
    out = node.output()
    value = node.attrs.get("value")
    if isinstance(value, TensorImpl):
        _tensor_constant(conv, out, value)
        return
    conv.example[out] = value
    conv.env[out] = conv.symbols.get(out, value)


def _use_param(conv, name, tensor):
    if conv.export_params:
        if name not in conv.g.initializers:
            conv.g.add_initializer(name, numpy_of(tensor))
    elif name not in conv.param_inputs:
        conv.param_inputs[name] = Var(name, tensor.shape, tensor.dtype)


def _get_attr(conv, node):
    out = node.output()
    owner = conv.example[node.input(0)]
    attr = node.attrs.get("name")
    value = getattr(owner, attr)
    if isinstance(value, TensorImpl):
        _tensor_constant(conv, out, value)
    else:
        conv.example[out] = value
        conv.env[out] = value


def _list_construct(conv, node):
    out = node.output()
    conv.env[out] = _ListOf(node.inputs())
    conv.example[out] = [conv.example[v] for v in node.inputs()]


def _unpack(conv, node):
    entry = conv.env[node.input(0)]
    if not isinstance(entry, _ListOf):
        raise OnnxExporterError(f"ONNX export: {node.kind()} of a value that is not a list or tuple")
    for out, v in zip(node.outputs(), entry.values):
        conv.env[out] = conv.env[v]
        conv.example[out] = conv.example[v]


_PRIM = {"prim::Constant": _constant, "prim::GetAttr": _get_attr, "prim::ListConstruct": _list_construct,
         "prim::TupleConstruct": _list_construct, "prim::TupleUnpack": _unpack, "prim::ListUnpack": _unpack}


def convert_graph(g, graph, inputs, opset, params, export_params, symbols):
    """Convert `graph` (bound to `inputs`: (Value, example, Var or None) per graph input) into `g`.
    Returns (the converter, the flat list of output (Var, example))."""
    conv = _Converter(g, opset, params, export_params, symbols)
    for value, example, var in inputs:
        if var is None:
            conv.example[value] = conv.env[value] = example
        else:
            conv.new_tensor(value, var.name, example.detach().clone())
    conv.run_block(graph.nodes())
    flat = []

    def collect(value):
        entry = conv.env[value]
        if isinstance(entry, _ListOf):
            for v in entry.values:
                collect(v)
        elif isinstance(entry, (_Ref, _Missing)):
            flat.append((value, conv.var(value), conv.example[value]))
        else:
            raise OnnxExporterError(f"ONNX export: the model returns a non-tensor value ({entry!r})")

    for value in graph.outputs():
        collect(value)
    return conv, flat


# ---- dynamic axes: which traced ints follow them ----

def symbolic_constants(graph1, graph2, sources):
    """Constants of `graph1` whose ints change in `graph2` (traced with the dynamic axes resized), as values with
    `Sym`s. `sources` lists (input name, axis, size in graph1's trace, size in graph2's)."""
    nodes1, nodes2 = list(graph1.nodes()), list(graph2.nodes())
    if len(nodes1) != len(nodes2) or any(a.kind() != b.kind() for a, b in zip(nodes1, nodes2)):
        raise OnnxExporterError("ONNX export with dynamic_axes: the model traces to a different graph when the "
                                "dynamic axes change size, so one graph cannot serve every size")
    symbols = {}
    for a, b in zip(nodes1, nodes2):
        if a.kind() != "prim::Constant":
            continue
        va, vb = a.attrs.get("value"), b.attrs.get("value")
        if isinstance(va, TensorImpl) or _same(va, vb):
            continue
        symbols[a.output()] = _symify(va, vb, sources, a.output())
    return symbols


def _same(a, b):
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _symify(a, b, sources, value):
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return type(a)(_symify(x, y, sources, value) for x, y in zip(a, b))
    if a == b and type(a) is type(b):
        return a
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        for name, axis, d1, d2 in sources:
            if a * d2 != b * d1:
                continue
            if a % d1 == 0:
                return Sym(a, (name, axis), mul=a // d1)
            if d1 % a == 0 and d2 % b == 0 and d1 // a == d2 // b:
                return Sym(a, (name, axis), div=d1 // a)
    raise SymbolicValueError(f"ONNX export with dynamic_axes: the traced constant {a!r} changes with the dynamic "
                             f"axes (to {b!r}) in a way the exporter cannot compute from the inputs' shapes", value)

