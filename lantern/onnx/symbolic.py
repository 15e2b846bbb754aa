"""One symbolic function per aten op: the op's functional form, as ONNX nodes.

A symbolic is called as `fn(g, *args)` with the op's schema arguments in schema order: tensors as `Var`s, Python
scalars, lists and None as they were traced (ints that follow a dynamic axis are `Sym`s). `g` is the
`GraphBuilder`; `g.out_dtype(i)` gives the traced outputs' dtypes. It returns the output
names (a tuple for several outputs; None for an output ONNX cannot give, which is an error only if used).
In-place and out= variants reuse their functional op's symbolic; the converter writes the result back.

>>> sorted(name for name in SYMBOLICS if name.startswith("add"))
['add', 'addcdiv', 'addcmul', 'addmm']
"""
import math

import numpy as np

import lantern
from .builder import Sym, Var, numpy_dtype, onnx_dtype
from .errors import OnnxExporterError

__all__ = ["SYMBOLICS", "UNVIEWS", "symbolic", "MIN_OPSET"]

SYMBOLICS = {}   # registry functional name -> symbolic function
UNVIEWS = {}     # view op name -> fn(g, parent: Var, new_child_name, *view_args) -> new parent name
MIN_OPSET = {}   # ops whose ONNX form needs a newer opset than 13


def symbolic(*names, opset=None):
    def register(fn):
        for name in names:
            SYMBOLICS[name] = fn
            if opset is not None:
                MIN_OPSET[name] = opset
        return fn
    return register


# ---- helpers ----

def _is_float(dtype):
    return dtype.is_floating_point


def _as(g, x, dtype):
    """`x` (a Var or a Python scalar) as an ONNX value of `dtype`."""
    if isinstance(x, Var):
        return x.name if x.dtype == dtype else g.op("Cast", x.name, to=onnx_dtype(dtype))
    return g.const(np.asarray(x, dtype=numpy_dtype(dtype)))


def _compute_dtype(args):
    """The dtype two operands meet in (PyTorch's promotion, as the traced example shows it)."""
    vars_ = [a for a in args if isinstance(a, Var)]
    floats = [v.dtype for v in vars_ if _is_float(v.dtype)]
    if floats:
        return max(floats, key=lambda d: d.itemsize)
    if any(isinstance(a, float) for a in args):
        return lantern.get_default_dtype()
    return max((v.dtype for v in vars_), key=lambda d: d.itemsize)


def _dim(d, rank):
    return d + rank if d < 0 else d


def _ints(xs):
    return [int(x) for x in xs]


def _axes(g, dims):
    return g.int64s(dims)


def _pair(x, n=2):
    x = list(x) if isinstance(x, (list, tuple)) else [x]
    return x * n if len(x) == 1 else x


# ---- pointwise ----

def _unary(onnx_op):
    def fn(g, x, *rest):
        return g.op(onnx_op, _as(g, x, g.out_dtype()))
    return fn


for _name, _op in [("relu", "Relu"), ("sigmoid", "Sigmoid"), ("tanh", "Tanh"), ("exp", "Exp"), ("log", "Log"),
                   ("sqrt", "Sqrt"), ("neg", "Neg"), ("abs", "Abs"), ("erf", "Erf"), ("reciprocal", "Reciprocal"),
                   ("floor", "Floor"), ("ceil", "Ceil"), ("sign", "Sign"), ("sin", "Sin"), ("cos", "Cos"),
                   ("round", "Round"), ("logical_not", "Not")]:
    SYMBOLICS[_name] = _unary(_op)


def _binary(onnx_op):
    def fn(g, a, b):
        dtype = g.out_dtype()
        return g.op(onnx_op, _as(g, a, dtype), _as(g, b, dtype))
    return fn


SYMBOLICS["mul"] = _binary("Mul")
SYMBOLICS["pow"] = _binary("Pow")
SYMBOLICS["minimum"] = _binary("Min")
SYMBOLICS["maximum"] = _binary("Max")


def _compare(onnx_op, negate=False):
    def fn(g, a, b):
        dtype = _compute_dtype((a, b))
        out = g.op(onnx_op, _as(g, a, dtype), _as(g, b, dtype))
        return g.op("Not", out) if negate else out
    return fn


SYMBOLICS.update(eq=_compare("Equal"), ne=_compare("Equal", True), lt=_compare("Less"), gt=_compare("Greater"),
                 le=_compare("LessOrEqual"), ge=_compare("GreaterOrEqual"))


def _scaled(g, other, alpha, dtype):
    other = _as(g, other, dtype)
    return other if alpha == 1 else g.op("Mul", other, g.const(np.asarray(alpha, dtype=numpy_dtype(dtype))))


@symbolic("add")
def add(g, self, other, alpha=1):
    dtype = g.out_dtype()
    return g.op("Add", _as(g, self, dtype), _scaled(g, other, alpha, dtype))


@symbolic("sub")
def sub(g, self, other, alpha=1):
    dtype = g.out_dtype()
    return g.op("Sub", _as(g, self, dtype), _scaled(g, other, alpha, dtype))


@symbolic("div")
def div(g, self, other, rounding_mode=None):
    dtype = g.out_dtype()
    compute = dtype if rounding_mode is None else _compute_dtype((self, other))
    out = g.op("Div", _as(g, self, compute), _as(g, other, compute))
    if rounding_mode == "floor" and _is_float(compute):
        out = g.op("Floor", out)
    elif rounding_mode == "trunc" and _is_float(compute):
        out = g.op("Mul", g.op("Floor", g.op("Abs", out)), g.op("Sign", out))
    return _as(g, Var(out, (), compute), dtype)


@symbolic("rsqrt")
def rsqrt(g, self):
    return g.op("Reciprocal", g.op("Sqrt", _as(g, self, g.out_dtype())))


@symbolic("silu")
def silu(g, self):
    return g.op("Mul", self.name, g.op("Sigmoid", self.name))


@symbolic("gelu")
def gelu(g, self, approximate="none"):
    if g.opset >= 20:
        return g.op("Gelu", self.name, approximate=approximate)
    half, one = g.scalar_like(0.5, self), g.scalar_like(1.0, self)
    if approximate == "tanh":
        inner = g.op("Mul", g.scalar_like(math.sqrt(2 / math.pi), self),
                     g.op("Add", self.name, g.op("Mul", g.scalar_like(0.044715, self),
                                                 g.op("Pow", self.name, g.scalar_like(3.0, self)))))
        return g.op("Mul", g.op("Mul", half, self.name), g.op("Add", one, g.op("Tanh", inner)))
    erf = g.op("Erf", g.op("Div", self.name, g.scalar_like(math.sqrt(2.0), self)))
    return g.op("Mul", g.op("Mul", half, self.name), g.op("Add", one, erf))


@symbolic("leaky_relu")
def leaky_relu(g, self, negative_slope=0.01):
    return g.op("LeakyRelu", self.name, alpha=float(negative_slope))


@symbolic("elu")
def elu(g, self, alpha=1, scale=1, input_scale=1):
    if scale == 1 and input_scale == 1:
        return g.op("Elu", self.name, alpha=float(alpha))
    x = self.name
    scaled_in = g.op("Mul", x, g.scalar_like(input_scale, self))
    neg = g.op("Mul", g.op("Sub", g.op("Exp", scaled_in), g.scalar_like(1, self)), g.scalar_like(alpha * scale, self))
    pos = g.op("Mul", x, g.scalar_like(scale, self))
    return g.op("Where", g.op("Greater", x, g.scalar_like(0, self)), pos, neg)


@symbolic("hardtanh")
def hardtanh(g, self, min_val=-1, max_val=1):
    return g.op("Clip", self.name, g.scalar_like(min_val, self), g.scalar_like(max_val, self))


@symbolic("clamp")
def clamp(g, self, min=None, max=None):
    dtype = g.out_dtype()
    x = _as(g, self, dtype)
    if min is not None:
        x = g.op("Max", x, _as(g, min, dtype))
    if max is not None:
        x = g.op("Min", x, _as(g, max, dtype))
    return x


@symbolic("softplus")
def softplus(g, self, beta=1, threshold=20):
    scaled = self.name if beta == 1 else g.op("Mul", self.name, g.scalar_like(beta, self))
    soft = g.op("Softplus", scaled)
    if beta != 1:
        soft = g.op("Div", soft, g.scalar_like(beta, self))
    return g.op("Where", g.op("Greater", scaled, g.scalar_like(threshold, self)), self.name, soft)


@symbolic("hardsigmoid")
def hardsigmoid(g, self):
    return g.op("HardSigmoid", self.name, alpha=1 / 6, beta=0.5)


@symbolic("hardswish")
def hardswish(g, self):
    return g.op("HardSwish", self.name)


@symbolic("mish")
def mish(g, self):
    return g.op("Mul", self.name, g.op("Tanh", g.op("Softplus", self.name)))


@symbolic("where")
def where(g, condition, self, other):
    dtype = g.out_dtype()
    return g.op("Where", _as(g, condition, _bool()), _as(g, self, dtype), _as(g, other, dtype))


@symbolic("masked_fill.Scalar", "masked_fill.Tensor")
def masked_fill(g, self, mask, value):
    return g.op("Where", _as(g, mask, _bool()), _as(g, value, self.dtype), self.name)


@symbolic("addcmul")
def addcmul(g, self, tensor1, tensor2, value=1):
    dtype = g.out_dtype()
    prod = g.op("Mul", _as(g, tensor1, dtype), _as(g, tensor2, dtype))
    return g.op("Add", _as(g, self, dtype), _scaled(g, Var(prod, (), dtype), value, dtype))


@symbolic("addcdiv")
def addcdiv(g, self, tensor1, tensor2, value=1):
    dtype = g.out_dtype()
    quot = g.op("Div", _as(g, tensor1, dtype), _as(g, tensor2, dtype))
    return g.op("Add", _as(g, self, dtype), _scaled(g, Var(quot, (), dtype), value, dtype))


@symbolic("lerp")
def lerp(g, self, end, weight):
    dtype = g.out_dtype()
    a = _as(g, self, dtype)
    return g.op("Add", a, g.op("Mul", _as(g, weight, dtype), g.op("Sub", _as(g, end, dtype), a)))


def _bool():
    return lantern.bool


# ---- linear algebra ----

def _untransposed(g, var):
    """(name, transposed?) for a 2-D operand: a Transpose's input, so that Gemm can take transB instead."""
    node = g.producer(var.name)
    if node is not None and node.op_type == "Transpose" and list(node.attribute[0].ints) == [1, 0]:
        return node.input[0], 1
    return var.name, 0


@symbolic("addmm")
def addmm(g, self, mat1, mat2, beta=1, alpha=1):
    b, trans_b = _untransposed(g, mat2)
    return g.op("Gemm", mat1.name, b, _as(g, self, g.out_dtype()), alpha=float(alpha), beta=float(beta),
                transB=trans_b or None)


@symbolic("mm", "bmm")
def matmul(g, self, other):
    return g.op("MatMul", self.name, other.name)


@symbolic("mv", "dot")
def mv(g, self, other):
    return g.op("MatMul", self.name, other.name)


@symbolic("baddbmm")
def baddbmm(g, self, batch1, batch2, beta=1, alpha=1):
    dtype = g.out_dtype()
    prod = g.op("MatMul", batch1.name, batch2.name)
    prod = _scaled(g, Var(prod, (), dtype), alpha, dtype)
    return g.op("Add", _scaled(g, self, beta, dtype), prod)


# ---- neural-network layers ----

@symbolic("convolution")
def convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    n = input.rank - 2
    pads = _pair(padding, n)
    attrs = dict(kernel_shape=list(weight.shape[2:]), strides=_ints(_pair(stride, n)), pads=_ints(pads + pads),
                 dilations=_ints(_pair(dilation, n)), group=int(groups))
    if transposed:
        attrs["output_padding"] = _ints(_pair(output_padding, n))
        return g.op("ConvTranspose", input.name, weight.name, bias, **attrs)
    return g.op("Conv", input.name, weight.name, bias, **attrs)


def _pool_attrs(n, kernel_size, stride, padding):
    kernel = _ints(_pair(kernel_size, n))
    strides = _ints(_pair(stride, n)) if stride else kernel
    pads = _ints(_pair(padding, n))
    return kernel, strides, pads + pads


@symbolic("max_pool2d_with_indices")
def max_pool2d_with_indices(g, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    kernel, strides, pads = _pool_attrs(2, kernel_size, stride, padding)
    out = g.op("MaxPool", self.name, kernel_shape=kernel, strides=strides, pads=pads,
               dilations=_ints(_pair(dilation)), ceil_mode=int(bool(ceil_mode)))
    return out, None   # torch's flat indices are not MaxPool's: exported only if unused


@symbolic("avg_pool2d")
def avg_pool2d(g, self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    if divisor_override is not None:
        _unsupported_args("avg_pool2d", "divisor_override")
    kernel, strides, pads = _pool_attrs(2, kernel_size, stride, padding)
    return g.op("AveragePool", self.name, kernel_shape=kernel, strides=strides, pads=pads,
                ceil_mode=int(bool(ceil_mode)), count_include_pad=int(bool(count_include_pad)))


@symbolic("_adaptive_avg_pool2d")
def adaptive_avg_pool2d(g, self, output_size):
    sizes = _pair(output_size)
    if all(s == 1 for s in sizes):
        return g.op("GlobalAveragePool", self.name)
    spatial = self.shape[2:]
    if any(i % s for i, s in zip(spatial, sizes)):
        _unsupported_args("adaptive_avg_pool2d", "output sizes that do not divide the input")
    kernel = [i // s for i, s in zip(spatial, sizes)]
    return g.op("AveragePool", self.name, kernel_shape=kernel, strides=kernel)


@symbolic("native_batch_norm")
def native_batch_norm(g, input, weight, bias, running_mean, running_var, training, momentum, eps):
    if training or running_mean is None:
        _unsupported_args("native_batch_norm", "training mode (export with the model in eval mode)")
    c = input.shape[1]
    dtype = input.dtype
    w = weight.name if weight is not None else g.const(np.ones(c, numpy_dtype(dtype)))
    b = bias.name if bias is not None else g.const(np.zeros(c, numpy_dtype(dtype)))
    out = g.op("BatchNormalization", input.name, w, b, running_mean.name, running_var.name, epsilon=float(eps),
               momentum=1 - float(momentum))
    return (out, None, None)


@symbolic("native_layer_norm", opset=17)
def native_layer_norm(g, input, normalized_shape, weight, bias, eps):
    axis = -len(normalized_shape)
    dtype = input.dtype
    shape = list(normalized_shape)
    w = weight.name if weight is not None else g.const(np.ones(shape, numpy_dtype(dtype)))
    out = g.op("LayerNormalization", input.name, w, bias.name if bias is not None else None, axis=axis,
               epsilon=float(eps))
    return (out, None, None)


@symbolic("softmax")
def softmax(g, self, dim, dtype=None):
    x = _as(g, self, g.out_dtype())
    return g.op("Softmax", x, axis=int(dim))


@symbolic("log_softmax")
def log_softmax(g, self, dim, dtype=None):
    x = _as(g, self, g.out_dtype())
    return g.op("LogSoftmax", x, axis=int(dim))


@symbolic("embedding")
def embedding(g, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return g.op("Gather", weight.name, indices.name, axis=0)


@symbolic("_mha_unpack")
def mha_unpack(g, packed):
    parts = g.op("Split", packed.name, g.int64s([1, 1, 1]), axis=0, outputs=3)
    return tuple(g.op("Squeeze", p, _axes(g, [0])) for p in parts)


# ---- reductions ----

def _reduce_op(g, onnx_op, x, dims, keepdim):
    """An ONNX reduction over `dims` (None: all); axes are an input from opset 18 (13 for ReduceSum)."""
    keep = int(bool(keepdim))
    if dims is None:
        return g.op(onnx_op, x, keepdims=keep)
    if onnx_op == "ReduceSum" or g.opset >= 18:
        return g.op(onnx_op, x, _axes(g, dims), keepdims=keep)
    return g.op(onnx_op, x, axes=_ints(dims), keepdims=keep)


def _reduce(onnx_op):
    def fn(g, self, dim=None, keepdim=False, dtype=None):
        x = _as(g, self, g.out_dtype()) if onnx_op not in ("ReduceMax", "ReduceMin") else self.name
        if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
            return _reduce_op(g, onnx_op, x, None, keepdim)
        return _reduce_op(g, onnx_op, x, [dim] if isinstance(dim, int) else list(dim), keepdim)
    return fn


SYMBOLICS["sum"] = _reduce("ReduceSum")
SYMBOLICS["mean"] = _reduce("ReduceMean")
SYMBOLICS["amax"] = _reduce("ReduceMax")
SYMBOLICS["amin"] = _reduce("ReduceMin")


@symbolic("all", "any")
def all_any(g, self, dim=None, keepdim=False):
    as_int = g.op("Cast", self.name, to=onnx_dtype(_int32()))
    op = "ReduceMin" if g.current_op.startswith("all") else "ReduceMax"
    out = _reduce(op)(g, Var(as_int, self.shape, _int32()), dim, keepdim)
    return g.op("Cast", out, to=onnx_dtype(_bool()))


def _int32():
    return lantern.int32


@symbolic("max.dim", "min.dim")
def max_dim(g, self, dim, keepdim=False):
    big = g.current_op.startswith("max")
    values = _reduce_op(g, "ReduceMax" if big else "ReduceMin", self.name, [dim], keepdim)
    indices = g.op("ArgMax" if big else "ArgMin", self.name, axis=int(dim), keepdims=int(bool(keepdim)))
    return values, indices


@symbolic("argmax", "argmin")
def argmax(g, self, dim=None, keepdim=False):
    op = "ArgMax" if g.current_op == "argmax" else "ArgMin"
    if dim is None:
        return g.op(op, g.op("Reshape", self.name, g.int64s([-1])), axis=0, keepdims=0)
    return g.op(op, self.name, axis=int(dim), keepdims=int(bool(keepdim)))


@symbolic("var.correction", "std.correction")
def var(g, self, dim=None, correction=None, keepdim=False):
    dims = list(range(self.rank)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    count = int(np.prod([self.shape[d] for d in dims]))
    ddof = 1 if correction is None else correction
    mean = _reduce_op(g, "ReduceMean", self.name, dims, True)
    diff = g.op("Sub", self.name, mean)
    sq = _reduce_op(g, "ReduceSum", g.op("Mul", diff, diff), dims, keepdim)
    out = g.op("Div", sq, g.scalar_like(max(count - ddof, 0), self))
    return g.op("Sqrt", out) if g.current_op.startswith("std") else out


@symbolic("cumsum")
def cumsum(g, self, dim, dtype=None):
    return g.op("CumSum", _as(g, self, g.out_dtype()), g.const(np.asarray(dim, np.int64)))


# ---- shapes, views and copies ----

@symbolic("clone", "alias")
def clone(g, self, *rest):
    return self.name


@symbolic("_to_copy")
def to_copy(g, self, dtype=None, *rest):
    return _as(g, self, g.out_dtype())


def _reshape_target(sizes):
    """Reshape's shape list: a single dynamic entry becomes -1 so the shape stays a constant."""
    syms = [i for i, s in enumerate(sizes) if isinstance(s, Sym)]
    if len(syms) == 1 and -1 not in sizes:
        sizes = list(sizes)
        sizes[syms[0]] = -1
    return sizes


@symbolic("view", "_unsafe_view")
def view(g, self, size, *rest):
    return g.op("Reshape", self.name, g.shape_tensor(_reshape_target(list(size))))


@symbolic("unsqueeze")
def unsqueeze(g, self, dim):
    return g.op("Unsqueeze", self.name, _axes(g, [_dim(dim, self.rank + 1)]))


@symbolic("squeeze")
def squeeze(g, self, dim=None):
    if dim is None:
        dims = [i for i, s in enumerate(self.shape) if s == 1]
    else:
        dims = [_dim(d, self.rank) for d in ([dim] if isinstance(dim, int) else dim) if self.shape[d] == 1]
    return g.op("Squeeze", self.name, _axes(g, dims)) if dims else self.name


@symbolic("t")
def t(g, self):
    return g.op("Transpose", self.name, perm=[1, 0]) if self.rank == 2 else self.name


@symbolic("transpose")
def transpose(g, self, dim0, dim1):
    perm = list(range(self.rank))
    a, b = _dim(dim0, self.rank), _dim(dim1, self.rank)
    perm[a], perm[b] = perm[b], perm[a]
    return g.op("Transpose", self.name, perm=perm)


@symbolic("permute")
def permute(g, self, dims):
    return g.op("Transpose", self.name, perm=[_dim(d, self.rank) for d in dims])


@symbolic("expand")
def expand(g, self, size, implicit=False):
    lead = len(size) - self.rank
    target = []
    for i, s in enumerate(size):
        own = self.shape[i - lead] if i >= lead else None
        # a size the input already has (or -1) broadcasts from the input itself, dynamic or not
        target.append(1 if s == -1 or (own is not None and own == s and not isinstance(s, Sym)) else s)
    return g.op("Expand", self.name, g.shape_tensor(target))


@symbolic("select")
def select(g, self, dim, index):
    return g.op("Gather", self.name, g.const(np.asarray(index, np.int64)), axis=_dim(dim, self.rank))


def _slice(g, name, dim, start, end, step=1):
    return g.op("Slice", name, g.int64s([start]), g.int64s([end]), g.int64s([dim]),
                g.int64s([step]) if step != 1 else None)


_BIG = 2 ** 63 - 1


@symbolic("narrow")
def narrow(g, self, dim, start, length):
    d = _dim(dim, self.rank)
    start = start + self.shape[d] if start < 0 else start
    return _slice(g, self.name, d, start, start + length)


@symbolic("slice")
def slice_(g, self, dim=0, start=None, end=None, step=1):
    d = _dim(dim, self.rank)
    return _slice(g, self.name, d, 0 if start is None else start, _BIG if end is None else min(end, _BIG), step)


def _split_parts(g, self, d, sizes):
    """ONNX Split of `self` along axis `d` into parts of the traced `sizes` (fixed, as in torch's exporter)."""
    parts = g.op("Split", self.name, g.int64s(sizes), axis=d, outputs=len(sizes))
    return (parts,) if len(sizes) == 1 else parts


@symbolic("split.Tensor", "split_with_sizes")
def split(g, self, split_size, dim=0):
    d = _dim(dim, self.rank)
    return _split_parts(g, self, d, [shape[d] for shape, _ in g.meta])


@symbolic("unbind.int")
def unbind(g, self, dim=0):
    d = _dim(dim, self.rank)
    parts = _split_parts(g, self, d, [1] * len(g.meta))
    return tuple(g.op("Squeeze", part, _axes(g, [d])) for part in parts)


@symbolic("cat")
def cat(g, tensors, dim=0):
    dtype = g.out_dtype()
    parts = [_as(g, t, dtype) for t in tensors if not (t.rank == 1 and t.shape[0] == 0)]
    rank = max(t.rank for t in tensors)
    return g.op("Concat", *parts, axis=_dim(dim, rank)) if len(parts) > 1 else parts[0]


@symbolic("stack")
def stack(g, tensors, dim=0):
    d = _dim(dim, tensors[0].rank + 1)
    dtype = g.out_dtype()
    parts = [g.op("Unsqueeze", _as(g, t, dtype), _axes(g, [d])) for t in tensors]
    return g.op("Concat", *parts, axis=d) if len(parts) > 1 else parts[0]


@symbolic("index_select")
def index_select(g, self, dim, index):
    return g.op("Gather", self.name, index.name, axis=_dim(dim, self.rank))


@symbolic("gather")
def gather(g, self, dim, index, sparse_grad=False):
    return g.op("GatherElements", self.name, index.name, axis=_dim(dim, self.rank))


@symbolic("repeat")
def repeat(g, self, repeats):
    x = self.name
    lead = len(repeats) - self.rank
    if lead:
        x = g.op("Unsqueeze", x, _axes(g, list(range(lead))))
    return g.op("Tile", x, g.int64s(repeats))


@symbolic("constant_pad_nd")
def constant_pad_nd(g, self, pad, value=0):
    begins, ends = [0] * self.rank, [0] * self.rank
    for i in range(len(pad) // 2):
        d = self.rank - 1 - i
        begins[d], ends[d] = pad[2 * i], pad[2 * i + 1]
    return g.op("Pad", self.name, g.int64s(begins + ends), g.scalar_like(value, self), mode="constant")


@symbolic("triu", "tril", opset=14)
def triu(g, self, diagonal=0):
    return g.op("Trilu", self.name, g.const(np.asarray(diagonal, np.int64)), upper=int(g.current_op == "triu"))


# ---- factories ----

def _filled(g, size, value):
    dtype = g.out_dtype()
    fill = np.asarray([value], dtype=numpy_dtype(dtype))
    from onnx import numpy_helper
    return g.op("ConstantOfShape", g.shape_tensor(list(size)), value=numpy_helper.from_array(fill))


@symbolic("zeros", "empty")
def zeros(g, size, *rest):
    return _filled(g, size, 0)


@symbolic("ones")
def ones(g, size, *rest):
    return _filled(g, size, 1)


@symbolic("full")
def full(g, size, fill_value, *rest):
    return _filled(g, size, fill_value)


def _unsupported_args(op, what):
    raise OnnxExporterError(f"ONNX export of aten::{op} does not support {what}")


# ---- writing into views (in-place ops on a view write back into its base) ----

def _put_slab(g, parent, new, dim, start, stop):
    """`parent` with [start, stop) along `dim` replaced by `new`."""
    size = parent.shape[dim]
    parts = []
    if start > 0:
        parts.append(_slice(g, parent.name, dim, 0, start))
    parts.append(new)
    if stop < size:
        parts.append(_slice(g, parent.name, dim, stop, _BIG))
    return g.op("Concat", *parts, axis=dim) if len(parts) > 1 else new


def _unview_select(g, parent, new, dim, index):
    d = _dim(dim, parent.rank)
    i = index + parent.shape[d] if index < 0 else index
    return _put_slab(g, parent, g.op("Unsqueeze", new, _axes(g, [d])), d, i, i + 1)


def _unview_narrow(g, parent, new, dim, start, length):
    d = _dim(dim, parent.rank)
    start = start + parent.shape[d] if start < 0 else start
    return _put_slab(g, parent, new, d, start, start + length)


def _unview_slice(g, parent, new, dim=0, start=None, end=None, step=1):
    if step != 1:
        _unsupported_args("slice", "writing into a strided slice")
    d = _dim(dim, parent.rank)
    size = parent.shape[d]
    start = 0 if start is None else (start + size if start < 0 else min(start, size))
    end = size if end is None else (end + size if end < 0 else min(end, size))
    return _put_slab(g, parent, new, d, start, end)


def _unview_reshape(g, parent, new, *args):
    return g.op("Reshape", new, g.op("Shape", parent.name))


def _unview_transpose(g, parent, new, dim0, dim1):
    return transpose(g, Var(new, parent.shape, parent.dtype), dim0, dim1) if parent.rank > 1 else new


def _unview_t(g, parent, new):
    return g.op("Transpose", new, perm=[1, 0]) if parent.rank == 2 else new


def _unview_permute(g, parent, new, dims):
    dims = [_dim(d, parent.rank) for d in dims]
    return g.op("Transpose", new, perm=[dims.index(i) for i in range(parent.rank)])


def _unview_identity(g, parent, new, *args):
    return new


UNVIEWS.update({"select": _unview_select, "narrow": _unview_narrow, "slice": _unview_slice,
                "view": _unview_reshape, "unsqueeze": _unview_reshape,
                "squeeze": _unview_reshape, "transpose": _unview_transpose,
                "t": _unview_t, "permute": _unview_permute, "alias": _unview_identity})


# ---- in-place-only ops (their functional form is the in-place op itself) ----

@symbolic("copy_")
def copy_(g, self, src, non_blocking=False):
    """The contents self gets: src in self's dtype, broadcast to self's shape."""
    value = _as(g, src, self.dtype)
    if isinstance(src, Var) and src.shape == self.shape:
        return value
    return g.op("Expand", value, g.op("Shape", self.name))


@symbolic("zero_")
def zero_(g, self):
    from onnx import numpy_helper
    zero = numpy_helper.from_array(np.zeros(1, numpy_dtype(self.dtype)))
    return g.op("ConstantOfShape", g.op("Shape", self.name), value=zero)


@symbolic("fill_")
def fill_(g, self, value):
    return g.op("Expand", _as(g, value, self.dtype), g.op("Shape", self.name))
