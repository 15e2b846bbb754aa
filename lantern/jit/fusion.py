"""Fused elementwise kernels: a `prim::FusionGroup` runs as one generated loop, forward and backward.

`run_fusion_group(node, inputs)` reads the group's 'Subgraph' (a Graph of elementwise aten ops and constants),
reduces it to a `Program` (fusion_codegen.py), and runs one generated kernel over the inputs' NumPy arrays. The
kernel is compiled once per (subgraph structure, input dtypes and ranks, which inputs are scalars, threaded or
not) and cached. `fuse(fn)` does the same for a Python function of elementwise tensor operations.

The compiler is numba, chosen over numexpr by measuring both on the benchmark chain (GELU-tanh on 1M float32,
forward and backward kernels, one thread): numexpr 80 ms, numba 51 ms with libm's tanhf and 14.5 ms with the
vectorisable float32 tanh of fusion_numba.py (PyTorch eager: 43-60 ms on the same loaded 2-core machine).
numexpr evaluates one expression per output, so the backward needs one pass per gradient, each recomputing the
forward; it has no erf, no integer/bool control of result types, and it upcasts float32 arrays against Python
float constants. numba compiles any scalar code we generate, so the forward and the whole backward are each one
loop. Its costs: ~0.5 s to import (deferred to the first fused call) and 0.1-0.5 s to compile a kernel, paid once
per specialisation and cached on disk across processes (fusion_numba.py). Large inputs (>= 128K elements) run
in ranges on lantern's intra-op pool when lantern.get_num_threads() is more than one (numba's own threads are
never started: docs/internals/intra-op-threads.md).

Autograd: when grad mode is on and an input requires grad, the group is one node (`FusedGroupBackward`) whose
backward is a second generated kernel: per element it recomputes the cheap arithmetic of the forward, reads the
results of transcendental nodes (tanh, exp, ...) that the forward saved (measured faster than recomputing them:
5.3 against 7.3 ms on the GELU chain), applies each op's symbolic derivative (fusion_ops.py) in reverse, and
sums the gradient of a broadcast input down to its shape.
Double backward (create_graph=True) re-runs the group op by op through the dispatcher so that its gradient is an
ordinary recorded graph.

Without numba, with a dtype or op the generator does not handle (float16, complex, a tensor exponent...), or on a
non-CPU device, the group runs op by op through the dispatcher, with the same results and autograd.

>>> import lantern
>>> gelu = fuse(lambda x: x * 0.5 * (1 + (0.79788456 * (x + 0.044715 * x ** 3)).tanh()))
>>> x = lantern.tensor([-1.0, 0.0, 2.0], requires_grad=True)
>>> y = gelu(x)
>>> y.sum().backward()
>>> [round(v, 4) for v in y.tolist()], [round(v, 4) for v in x.grad.tolist()]
([-0.1588, 0.0, 1.9546], [-0.083, 0.5, 1.0861])
"""
import weakref

import numpy as np

import lantern
from ..core.dtype import is_differentiable
from ..core.reference import mode, specialisation
from ..core.state import tls
from ..core.tensor_impl import TensorImpl, contiguous_strides
from ..ops import dispatcher, registry
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad
from . import fusion_codegen as codegen
from .fusion_codegen import Program
from .fusion_ops import RULES, Unsupported
from .interpreter import Interpreter

__all__ = ["run_fusion_group", "fuse", "FusedFunction", "program_from_graph"]

_KERNELS = {}      # (program key, input kinds, input ranks, threaded) -> _KernelInfo, or None when unsupported
_PROGRAMS = weakref.WeakKeyDictionary()      # subgraph -> its Program, or None when not elementwise
_COMPILER = []     # [the fusion_numba module, or None without numba], filled on first use
_REPEATS = weakref.WeakKeyDictionary()       # Program -> the _Repeat of its last laid-out call


def compiler_available():
    """Whether numba imports (tried on first use, so `import lantern` stays fast)."""
    return _backend() is not None


def _backend():
    if not _COMPILER:
        try:
            from . import fusion_numba  # optional: numba
        except ImportError:
            fusion_numba = None
        _COMPILER.append(fusion_numba)
    return _COMPILER[0]


def run_fusion_group(node, inputs):
    """Run a prim::FusionGroup node (or its 'Subgraph' Graph) on `inputs`; returns the list of outputs."""
    graph = node.g("Subgraph") if hasattr(node, "kind") else node
    program = _program_for(graph)
    if program is None:
        return _interpret(graph, inputs)
    return run_program(program, inputs)


def program_from_graph(graph):
    """The Program of an elementwise subgraph; raises Unsupported for a node that is not an aten op or constant."""
    refs = {}
    for k, value in enumerate(graph.inputs()):
        refs[value] = ("in", k)
    nodes = []
    for n in graph.nodes():
        kind = n.kind()
        if kind == "prim::Constant":
            refs[n.output()] = ("const", n.attrs.get("value"))
            continue
        if not kind.startswith("aten::") or len(n.outputs()) != 1:
            raise Unsupported(f"node {kind}")
        op = n.attrs.get("op", kind[len("aten::"):])
        registry.get(op)        # KeyError for an op the registry lacks (scripted scalar arithmetic...)
        nodes.append((op, tuple(refs[v] for v in n.inputs())))
        refs[n.output()] = ("node", len(nodes) - 1)
    return Program(len(graph.inputs()), nodes, [refs[v] for v in graph.outputs()])


def _program_for(graph):
    if graph not in _PROGRAMS:
        try:
            _PROGRAMS[graph] = program_from_graph(graph)
        except (Unsupported, KeyError):
            _PROGRAMS[graph] = None
    return _PROGRAMS[graph]


def _interpret(graph, inputs):
    """A subgraph that is not a plain elementwise program: the interpreter runs it node by node."""
    return list(Interpreter(graph).run(list(inputs)))


def run_program(program, inputs):
    """Run a Program on `inputs` (tensors and Python scalars): fused when possible, op by op otherwise."""
    inputs = list(inputs)
    repeat = _REPEATS.get(program) if mode.fast else None
    if repeat is not None:
        outputs = run_like_last_call(repeat, inputs)
        if outputs is not None:
            return outputs
    plan = _forward_plan(program, inputs)
    if plan is None:
        return run_eager(program, inputs)
    if tls.grad_enabled and any(isinstance(t, TensorImpl) and t.requires_grad for t in inputs):
        return list(FusedGroup.apply(program, plan, *inputs))
    _REPEATS[program] = _Repeat.of(plan, inputs)
    return _run_forward(plan)[0]


class _Repeat:
    """What a call needs to run again without being laid out: the kernel, the backend of its tensors, and each input
    as the last call had it (a row-major tensor's dtype, a Python scalar's type, or None). `expects` is None when
    the call is not one to repeat (an input broadcast or read as a scalar, a strided one copied)."""

    __slots__ = ("expects", "backend", "shape", "strides", "numel", "kernel", "parallel", "out_dtypes")

    @staticmethod
    def of(plan, inputs):
        repeat = _Repeat()
        repeat.shape, repeat.strides = tuple(plan.shape), contiguous_strides(tuple(plan.shape))
        repeat.numel, repeat.kernel = int(np.prod(plan.shape)), plan.info.forward
        repeat.out_dtypes = [getattr(lantern, name) for name in plan.info.out_dtypes]
        repeat.backend = next((v._backend for v in inputs if isinstance(v, TensorImpl)), None)
        repeat.expects = [_expected(v, repeat) for v in inputs]
        repeat.parallel = plan.info.parallel
        # (one element: the general layout reads every input as a scalar)
        if repeat.numel == 1 or repeat.backend is None or any(e is _ANY for e in repeat.expects):
            repeat.expects = None
        return repeat


_ANY = object()   # in _Repeat.expects: an input the repeated call cannot take as it comes


def _expected(v, repeat):
    if isinstance(v, TensorImpl):
        fits = v._size == repeat.shape and v._stride == repeat.strides and v._backend is repeat.backend
        return v.dtype if fits and v._backend.xp is np else _ANY
    return None if v is None else type(v) if isinstance(v, (bool, int, float)) else _ANY


@specialisation(replaces="run_program's general call: _forward_plan lays out the inputs (broadcast shape, flat "
                         "contiguous arrays, kinds) and looks the kernel up by them",
                when="fast paths on, the program's last call was laid out without broadcasting or copies, "
                     "and this call's tensors have its shape, dtypes, backend and row-major strides and "
                     "need no gradient, its Python scalars the same types, and the same thread count applies",
                parity_test="tests/test_jit_fusion.py::test_a_repeated_call_gives_the_general_calls_results")
def run_like_last_call(repeat, inputs):
    """The outputs of `inputs` through the last call's kernel, or None when they do not look like its inputs."""
    expects = repeat.expects
    if expects is None or len(inputs) != len(expects) or _backend().use_threads(repeat.numel) != repeat.parallel:
        return None
    args = []
    for v, expect in zip(inputs, expects):
        if isinstance(v, TensorImpl):
            if (v.dtype is not expect or v._size != repeat.shape or v._stride != repeat.strides
                    or v._backend is not repeat.backend or (v._requires_grad and tls.grad_enabled)):
                return None
            args.append(repeat.backend.array(v).reshape(-1))
        elif type(v) is not expect:
            return None
        else:
            args.append(0 if v is None else v)
    outputs = [repeat.backend.empty(repeat.shape, dtype) for dtype in repeat.out_dtypes]
    repeat.kernel(repeat.numel, *args, *[repeat.backend.array(o).reshape(-1) for o in outputs])
    return outputs


def run_eager(program, inputs):
    """Op by op through the dispatcher (autograd records each op as usual)."""
    values = []

    def value(ref):
        kind, x = ref
        return inputs[x] if kind == "in" else values[x] if kind == "node" else x

    for op, args in program.nodes:
        values.append(dispatcher.call(registry.get(op), tuple(value(a) for a in args)))
    return [value(ref) for ref in program.outputs]


# ---------------------------------------------------------------------------------------------------------------
# Laying out the arrays: each input is an array over the broadcast shape (flattened) or a scalar.

def _array(t):
    return t.detach().numpy() if t.requires_grad else t.numpy()


def _is_scalar_like(arr):
    return arr.size == 1 or all(s == 0 or n == 1 for s, n in zip(arr.strides, arr.shape))


def _layout(values):
    """(kinds, flat arguments, broadcast shape) for tensors and Python scalars; None if not on the CPU."""
    arrays = []
    for v in values:
        if isinstance(v, TensorImpl):
            if v.device.type != "cpu":
                return None
            arrays.append(_array(v))
        elif v is None:
            arrays.append(None)
        else:
            arrays.append(v)
    try:
        shape = np.broadcast_shapes(*[a.shape for a in arrays if isinstance(a, np.ndarray)])
    except ValueError:
        return None           # the op-by-op run raises PyTorch's error
    kinds, args = [], []
    for a in arrays:
        if a is None:
            kinds.append(None)
            args.append(0)
        elif not isinstance(a, np.ndarray):
            kinds.append(("scalar", type(a).__name__))
            args.append(a)
        elif a.size and _is_scalar_like(a):
            kinds.append(("scalar", a.dtype.name))
            args.append(a.reshape(-1)[0])
        else:
            kinds.append(("array", a.dtype.name))
            args.append(np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1))
    return kinds, args, shape


class _Plan:
    """A call's compiled kernels (`info`), kernel arguments and broadcast shape (the backward reuses them)."""

    __slots__ = ("info", "args", "shape")

    def __init__(self, info, args, shape):
        self.info, self.args, self.shape = info, args, shape


def _forward_plan(program, inputs):
    if not compiler_available() or len(inputs) != program.n_inputs:
        return None
    laid = _layout(inputs)
    if laid is None:
        return None
    kinds, args, shape = laid
    parallel = _backend().use_threads(int(np.prod(shape)))
    key = (program.key, tuple(kinds), tuple(t.ndim if isinstance(t, TensorImpl) else -1 for t in inputs), parallel)
    info = _KERNELS.get(key, ())
    if info == ():
        info = _KERNELS[key] = _build(program, inputs, kinds, parallel)
    if info is None:
        return None
    if any(isinstance(t, TensorImpl) and t.shape != shape for t in inputs):
        for deps in program.depends:
            if np.broadcast_shapes(*[inputs[k].shape for k in deps if isinstance(inputs[k], TensorImpl)]) != shape:
                return None       # an output narrower than the group's broadcast shape
    return _Plan(info, args, shape)


class _KernelInfo:
    """One specialisation: dtypes of every node, the forward kernel, and backward kernels built on demand."""

    def __init__(self, program, in_kinds, result_dtypes, compute_dtypes, parallel):
        self.in_kinds = [(kind, _scalar_dtype(dt)) for kind, dt in in_kinds]
        self.result_dtypes, self.compute_dtypes, self.parallel = result_dtypes, compute_dtypes, parallel
        self.out_dtypes = [self._dtype_of(ref) for ref in program.outputs]
        self._source = codegen.kernel_source(program, self.in_kinds, result_dtypes, compute_dtypes)
        self._forward = None
        self.backwards, self.saving = {}, {}

    @property
    def forward(self):
        """The plain forward kernel, compiled on first use (a recorded call only needs the saving variant)."""
        if self._forward is None:
            self._forward = _backend().compile_kernel(self._source, self.parallel)
        return self._forward

    def _dtype_of(self, ref):
        return self.in_kinds[ref[1]][1] if ref[0] == "in" else self.result_dtypes[ref[1]]

    def saving_forward(self, program, wanted):
        """(forward kernel that also writes the nodes the backward reads, those nodes) for these wanted inputs."""
        key = tuple(wanted)
        if key not in self.saving:
            saved = codegen.nodes_to_save(program, self.in_kinds, self.result_dtypes, self.compute_dtypes, wanted)
            source = codegen.kernel_source(program, self.in_kinds, self.result_dtypes, self.compute_dtypes, saved)
            self.saving[key] = (_backend().compile_kernel(source, self.parallel) if saved else self.forward, saved)
        return self.saving[key]

    def backward(self, program, grad_kinds, wanted):
        """The backward kernel for these gradient kinds and wanted inputs (compiled on first use)."""
        key = (tuple(grad_kinds), tuple(wanted))
        if key not in self.backwards:
            saved = self.saving_forward(program, wanted)[1]
            source = codegen.backward_source(program, self.in_kinds, self.result_dtypes, self.compute_dtypes,
                                             grad_kinds, wanted, saved)
            self.backwards[key] = _backend().compile_kernel(source, self.parallel)
        return self.backwards[key]


def _scalar_dtype(name):
    return {"float": "float64", "int": "int64", "bool": "bool"}.get(name, name)


def _build(program, inputs, kinds, parallel):
    """Infer every node's dtype by running the group eagerly on one-element examples, then compile (None when
    the group cannot be generated, or the eager run raises: op by op, it raises PyTorch's error to the user)."""
    if any(op not in RULES for op, _ in program.nodes):
        return None
    examples = [lantern.ones((1,) * t.ndim, dtype=t.dtype) if isinstance(t, TensorImpl) else t for t in inputs]
    try:
        with lantern.no_grad():
            values = []
            compute = []
            for op, refs in program.nodes:
                vals = tuple(examples[r[1]] if r[0] == "in" else values[r[1]] if r[0] == "node" else r[1]
                             for r in refs)
                values.append(dispatcher.call(registry.get(op), vals))
                if RULES[op].compare:
                    compute.append(lantern.result_type(vals[0], vals[1]).name)
                else:
                    compute.append(values[-1].dtype.name)
        return _KernelInfo(program, kinds, [v.dtype.name for v in values], compute, parallel)
    except Exception:
        return None


def _empty(shape, dtype_name):
    """A new tensor from lantern's allocator (which reuses freed blocks) and its flat array."""
    t = lantern.empty(shape, dtype=getattr(lantern, dtype_name))
    return t, t.numpy().reshape(-1)


def _run_forward(plan, kernel=None, saved=()):
    """Run the forward kernel; returns the output tensors and the buffers of the `saved` nodes' results."""
    outs = [_empty(plan.shape, dt) for dt in plan.info.out_dtypes]
    buffers = [_empty(plan.shape, plan.info.result_dtypes[j]) for j in saved]
    (kernel or plan.info.forward)(int(np.prod(plan.shape)), *plan.args, *[flat for _, flat in outs + buffers])
    return [t for t, _ in outs], buffers


def _sum_to(arr, shape):
    """Sum a gradient over the broadcast shape down to an input's shape."""
    lead = arr.ndim - len(shape)
    if lead:
        arr = arr.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and arr.shape[i] != 1)
    return arr.sum(axis=axes, keepdims=True) if axes else arr


class FusedGroup(Function):
    """A fused group as one autograd node; its backward is a second generated kernel."""

    @staticmethod
    def forward(ctx, program, plan, *inputs):
        ctx.set_materialize_grads(False)
        wanted = [k for k, need in enumerate(ctx.needs_input_grad[2:]) if need]
        kernel, saved = plan.info.saving_forward(program, wanted)
        outputs, ctx.buffers = _run_forward(plan, kernel, saved)
        ctx.program, ctx.plan = program, plan
        ctx.scalars = [None if isinstance(t, TensorImpl) else t for t in inputs]
        ctx.save_for_backward(*[t for t in inputs if isinstance(t, TensorImpl)])
        ctx.mark_non_differentiable(*[o for o in outputs if not is_differentiable(o.dtype)])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        saved = iter(ctx.saved_tensors)
        inputs = [next(saved) if s is None else s for s in ctx.scalars]
        wanted = [k for k, need in enumerate(ctx.needs_input_grad[2:]) if need]
        if tls.grad_enabled:
            return (None, None) + _eager_backward(ctx.program, inputs, grads, wanted)
        plan = ctx.plan
        laid = _layout(list(grads))
        grad_kinds, grad_args, _ = laid
        kernel = plan.info.backward(ctx.program, [k and k[0] for k in grad_kinds], wanted)
        outs = [_empty(plan.shape, inputs[k].dtype.name) for k in wanted]
        kernel(int(np.prod(plan.shape)), *plan.args, *[flat for _, flat in ctx.buffers], *grad_args,
               *[flat for _, flat in outs])
        result = [None] * len(inputs)
        for k, (full, flat) in zip(wanted, outs):
            shape = tuple(inputs[k].shape)
            if shape != tuple(plan.shape):
                full = lantern.from_numpy(np.asarray(_sum_to(flat.reshape(plan.shape), shape)).reshape(shape))
            result[k] = full
        return (None, None) + tuple(result)


def _eager_backward(program, inputs, grads, wanted):
    """Double backward: the gradient as an op-by-op recorded graph (create_graph=True)."""
    with enable_grad():
        outputs = run_eager(program, inputs)
    pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o.requires_grad]
    found = lantern.autograd.grad([o for o, _ in pairs], [inputs[k] for k in wanted], [g for _, g in pairs],
                                  create_graph=True, allow_unused=True)
    result = [None] * len(inputs)
    for k, g in zip(wanted, found):
        result[k] = g if g is not None else lantern.zeros_like(inputs[k])
    return tuple(result)


# ---------------------------------------------------------------------------------------------------------------
# fuse(fn): a Python function of elementwise tensor operations, recorded once with symbolic stand-ins.

class _Sym:
    """A stand-in for a tensor while `fuse` records a function: each operation appends a node."""

    __array_priority__ = 1000

    def __init__(self, nodes, ref):
        self._nodes, self._ref = nodes, ref

    def _op(self, op, *args):
        schema = registry.get(op).schema.args
        args = args + tuple(a.default for a in schema[len(args):] if not a.required)
        refs = tuple(a._ref if isinstance(a, _Sym) else ("const", a) for a in args)
        self._nodes.append((op, refs))
        return _Sym(self._nodes, ("node", len(self._nodes) - 1))

    def __add__(self, other): return self._op("add", self, other)
    def __radd__(self, other): return self._op("add", self, other)
    def __sub__(self, other): return self._op("sub", self, other)
    def __rsub__(self, other): return self._op("rsub", self, other)
    def __mul__(self, other): return self._op("mul", self, other)
    def __rmul__(self, other): return self._op("mul", self, other)
    def __truediv__(self, other): return self._op("div", self, other)
    def __rtruediv__(self, other): return self._op("reciprocal", self) * other
    def __pow__(self, exponent): return self._op("pow", self, exponent)
    def __neg__(self): return self._op("neg", self)
    def __gt__(self, other): return self._op("gt", self, other)
    def __lt__(self, other): return self._op("lt", self, other)
    def __ge__(self, other): return self._op("ge", self, other)
    def __le__(self, other): return self._op("le", self, other)

    def clamp(self, min=None, max=None): return self._op("clamp", self, min, max)
    def pow(self, exponent): return self._op("pow", self, exponent)

    def __getattr__(self, name):
        if name in RULES and not name.startswith("_"):
            return lambda *args: self._op(name, self, *args)
        raise AttributeError(f"fuse: {name!r} is not an elementwise operation the fuser knows")


class FusedFunction:
    """`fn` recorded as a Program on first call (per number of arguments) and run through the fused kernels."""

    def __init__(self, fn):
        self.fn, self._programs = fn, {}

    def program(self, n_args):
        if n_args not in self._programs:
            nodes = []
            out = self.fn(*[_Sym(nodes, ("in", k)) for k in range(n_args)])
            single = not isinstance(out, (tuple, list))
            outs = [out] if single else list(out)
            refs = [o._ref if isinstance(o, _Sym) else ("const", o) for o in outs]
            self._programs[n_args] = (Program(n_args, nodes, refs), single)
        return self._programs[n_args]

    def __call__(self, *args):
        program, single = self.program(len(args))
        outputs = run_program(program, args)
        return outputs[0] if single else tuple(outputs)


def fuse(fn):
    """Wrap a function of elementwise tensor operations (operators and methods such as `.tanh()`) so that each
    call runs as one fused kernel (and one fused backward)."""
    return FusedFunction(fn)
