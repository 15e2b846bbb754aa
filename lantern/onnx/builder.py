"""The ONNX graph under construction: nodes, constants, initializers and the names that join them.

Symbolic functions (symbolic.py) see `Var`s (an ONNX value name with the traced example's shape and dtype) and
emit nodes through `GraphBuilder.op`. A `Sym` is an int that varies with a dynamic axis: it prints as its traced
value, and `GraphBuilder.shape_tensor` turns lists holding some into a runtime-computed shape.

>>> import lantern
>>> g = GraphBuilder(17)
>>> x = g.add_input("x", lantern.float32, (2, 3))
>>> y = g.op("Relu", x)
>>> g.nodes[-1].op_type, g.nodes[-1].input, g.nodes[-1].output
('Relu', ['x'], ['/Relu_output_0'])
"""
import ml_dtypes
import numpy as np
from onnx import OperatorSetIdProto, TensorProto, helper, numpy_helper

from .errors import OnnxExporterError

__all__ = ["GraphBuilder", "Var", "Sym", "onnx_dtype", "numpy_of"]

_DTYPES = {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16, "int64": TensorProto.INT64, "int32": TensorProto.INT32,
    "int16": TensorProto.INT16, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL,
}


def onnx_dtype(dtype):
    """The TensorProto element type of a lantern dtype."""
    try:
        return _DTYPES[dtype.name]
    except KeyError:
        raise OnnxExporterError(f"ONNX export does not support tensors of dtype {dtype}") from None


def numpy_of(tensor):
    """A tensor's data as a NumPy array (bfloat16 widened by ml_dtypes as NumPy holds it)."""
    return np.ascontiguousarray(tensor.detach().cpu().numpy())


class Sym(int):
    """An int of the traced graph that follows a dynamic axis: value = dim(input, axis) * mul // div."""

    def __new__(cls, value, source, mul=1, div=1):
        self = super().__new__(cls, value)
        self.source, self.mul, self.div = source, mul, div
        return self


class Var:
    """A tensor during export: its ONNX value name, and the traced example's shape and dtype."""

    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype

    @property
    def rank(self):
        return len(self.shape)

    def __repr__(self):
        return f"Var({self.name!r}, {self.shape}, {self.dtype})"


class GraphBuilder:
    """Collects ONNX nodes, initializers and graph inputs/outputs for one export."""

    def __init__(self, opset):
        self.opset = opset
        self.nodes = []
        self.initializers = {}   # name -> TensorProto
        self.inputs = []         # ValueInfoProto
        self._producers = {}     # value name -> NodeProto
        self._counts = {}
        self._constants = {}     # (dtype, shape, bytes) -> name, so repeated constants are shared
        self._dims = {}          # (source, mul, div) -> name of its 1-element int64 tensor
        self.current_op = None   # the registry name of the op being converted
        self.meta = []           # its traced outputs' (shape, dtype), None for non-tensors

    def out_dtype(self, i=0):
        return self.meta[i][1]

    # -- names and values --

    def fresh(self, op_type):
        n = self._counts.get(op_type, 0)
        self._counts[op_type] = n + 1
        return f"/{op_type}_output_{n}"

    def add_input(self, name, dtype, shape):
        self.inputs.append(helper.make_tensor_value_info(name, onnx_dtype(dtype), list(shape)))
        return Var(name, shape, dtype)

    def add_initializer(self, name, array):
        self.initializers[name] = numpy_helper.from_array(np.asarray(array), name)
        return name

    def producer(self, name):
        """The node that makes `name`, or None for graph inputs, initializers and constants of the caller."""
        return self._producers.get(name)

    def op(self, op_type, *inputs, outputs=1, **attrs):
        """Append one node; returns its output name (or a tuple of `outputs` names). None inputs are omitted
        optional inputs; None attributes are left out."""
        base = self.fresh(op_type)
        names = [base] if outputs == 1 else [f"{base}_{i}" for i in range(outputs)]
        ins = ["" if i is None else (i.name if isinstance(i, Var) else i) for i in inputs]
        while ins and ins[-1] == "":
            ins.pop()
        node = helper.make_node(op_type, ins, names, **{k: v for k, v in attrs.items() if v is not None})
        self.nodes.append(node)
        for n in names:
            self._producers[n] = node
        return names[0] if outputs == 1 else tuple(names)

    def const(self, value, dtype=None):
        """A Constant node holding `value` (a NumPy array or Python number/list); NumPy dtype `dtype`."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        name = self._constants.get(key)
        if name is None:
            name = self.op("Constant", value=numpy_helper.from_array(array))
            self._constants[key] = name
        return name

    def int64s(self, values):
        return self.const(np.asarray([int(v) for v in values], dtype=np.int64))

    def scalar_like(self, value, var):
        """A 0-dim constant of `var`'s dtype (for Python scalars meeting a tensor)."""
        return self.const(np.asarray(value, dtype=numpy_dtype(var.dtype)))

    # -- shapes that follow dynamic axes --

    def sym_dim(self, sym):
        """A 1-element int64 tensor computing the Sym `sym` from its graph input's runtime shape."""
        key = (sym.source, sym.mul, sym.div)
        name = self._dims.get(key)
        if name is None:
            input_name, axis = sym.source
            dim = self.op("Slice", self.op("Shape", input_name), self.int64s([axis]), self.int64s([axis + 1]))
            if sym.mul != 1:
                dim = self.op("Mul", dim, self.int64s([sym.mul]))
            if sym.div != 1:
                dim = self.op("Div", dim, self.int64s([sym.div]))
            name = self._dims[key] = dim
        return name

    def shape_tensor(self, sizes):
        """A 1-D int64 tensor holding `sizes`: a constant, or a Concat when some entries are Syms."""
        if not any(isinstance(s, Sym) for s in sizes):
            return self.int64s(sizes)
        parts, run = [], []
        for s in sizes:
            if isinstance(s, Sym):
                if run:
                    parts.append(self.int64s(run))
                    run = []
                parts.append(self.sym_dim(s))
            else:
                run.append(s)
        if run:
            parts.append(self.int64s(run))
        return parts[0] if len(parts) == 1 else self.op("Concat", *parts, axis=0)

    # -- the model --

    def prune(self, outputs):
        """Drop nodes whose outputs nothing needs (the graph's outputs are `outputs`)."""
        needed = set(outputs)
        kept = []
        for node in reversed(self.nodes):
            if any(o in needed for o in node.output):
                kept.append(node)
                needed.update(i for i in node.input if i)
        self.nodes = kept[::-1]
        self.initializers = {k: v for k, v in self.initializers.items() if k in needed}
        return needed

    def rename(self, old, new):
        """Rename the value `old` everywhere (graph inputs, nodes, initializers)."""
        for node in self.nodes:
            for seq in (node.input, node.output):
                for i, n in enumerate(seq):
                    if n == old:
                        seq[i] = new
        for vi in self.inputs:
            if vi.name == old:
                vi.name = new
        if old in self.initializers:
            init = self.initializers.pop(old)
            init.name = new
            self.initializers[new] = init

    def model(self, outputs, producer_version, graph_name="main_graph", extra_inputs=()):
        graph = helper.make_graph(self.nodes, graph_name, list(self.inputs) + list(extra_inputs), outputs,
                                  initializer=list(self.initializers.values()))
        model = helper.make_model(graph, opset_imports=[OperatorSetIdProto(version=self.opset)],
                                  producer_name="lantern", producer_version=producer_version)
        model.ir_version = min(model.ir_version, 9 if self.opset <= 20 else 10)
        return model


_NUMPY = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int64": np.int64,
          "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


def numpy_dtype(dtype):
    """The NumPy dtype matching a lantern dtype (for constants)."""
    if dtype.name == "bfloat16":
        return ml_dtypes.bfloat16
    return _NUMPY[dtype.name]

