"""Derivatives, declared beside each op as derivatives.yaml does: one Python expression per differentiable input.

    derivative("mul", self="grad * conj(other)", other="grad * conj(self)")

A formula may use `grad` (the gradient of the output; `grads` for every output), `result` (the output, or the
named outputs of a multi-output op), any of the op's arguments by schema name, `<arg>_meta` for a tensor
argument's geometry alone (size, stride, offset, dtype, device: saving it keeps no tensor alive and is immune to
later in-place writes; a list of them for a list argument, as cat saves), and the helpers in
lantern.ops.derivative_helpers. Formulas are written with lantern ops, so they are differentiable themselves (double
backward). The names a formula uses decide what the graph node
saves: `mul` saves `other` and `self`, `exp` (formula `grad * conj(result)`) saves only its output. Of a
multi-output op, a formula reads one output by its name (`indices` of max.dim) or, when the outputs are unnamed,
as PyTorch's derivatives.yaml does, by `result0`, `result1`, ...: only the outputs read are saved, each under that
name (native_layer_norm saves `result1` and `result2`, its mean and rstd, never its output 0, which the user may
then modify in place); `result` saves them all.

>>> d = get("mul").derivative
>>> d.node_name((None, None)), [name for name, _, _ in d.save_plan]
('MulBackward0', ['other', 'self'])
"""
import ast
import functools

from . import generated
from .forward_derivative import Forward
from .registry import get

_HELPERS = {}


def _names(expr):
    """The names an expression reads, in the order they appear."""
    nodes = [n for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(n.id for n in sorted(nodes, key=lambda n: n.col_offset)))


class Derivative:
    """The backward of one op: a generated function applying its formulas, and the plan of what to save.

    A tensor is saved only when a formula that reads it will run (mul saves `other` only if `self` needs a
    gradient), so an unsaved name unpacks as None.

    `source` holds the generated backward, e.g. for mul:

        def backward_of_mul(node, grads):
            grad = grads[0]
            saved = node.saved
            other = unpack(saved.get('other'), node)
            self = unpack(saved.get('self'), node)
            needs = node.needs
            return (
                (grad * conj(other)) if needs[0] else None,
                (grad * conj(self)) if needs[1] else None,
            )
    """

    specialised = None  # a faster variant of these formulas (ops/derivative_specialisation.py), or None
    forward = None      # the forward derivative (ops/forward_derivative.py): a result formula, linear or derived

    def __init__(self, op, formulas, name=None, nondifferentiable=False, scalar_inputs=(), helpers=None):
        from . import derivative_helpers
        if not _HELPERS:
            _HELPERS.update({k: v for k, v in vars(derivative_helpers).items() if not k.startswith("__")})
        self.op = op
        self.nondifferentiable = nondifferentiable
        args = op.schema.args
        arg_names = [a.name for a in args]
        # <arg>_meta: the argument's geometry; for a list of tensors (cat's), a list of geometries
        meta_names = {a.name + "_meta": (i, "metas" if a.is_list else "meta") for i, a in enumerate(args)
                      if a.is_tensor}
        returns = op.schema.returns
        # the names that read one output of a multi-output op: its name, or result<k> when unnamed
        output_names = {} if len(returns) < 2 else {
            (r.name if r.name not in ("_", "") else f"result{k}"): k for k, r in enumerate(returns)}
        for arg in formulas:
            if arg not in arg_names:
                raise ValueError(f"derivative for {op.name}: {arg!r} is not an argument of {op.schema.text}")
        # (argument index, argument name, formula text), in schema order: the order of the node's edges
        self.formulas = sorted((arg_names.index(arg), arg, text) for arg, text in formulas.items())
        self.arg_indices = tuple(index for index, _, _ in self.formulas)
        # PyTorch's Scalar overloads: `x ** 2` is pow.Tensor_Scalar, whose node has one edge, while `x * 2` wraps
        # the 2 and keeps an edge for it. A group of arguments (clamp's min and max) is no input when all of its
        # arguments are numbers or None: formula index -> argument indices of its group
        groups = [(g,) if isinstance(g, str) else tuple(g) for g in scalar_inputs]
        self.scalar_groups = {k: tuple(arg_names.index(a) for a in group)
                              for group in groups for k, (_, arg, _) in enumerate(self.formulas) if arg in group}
        order = list(dict.fromkeys(n for _, _, text in self.formulas for n in _names(text)))
        uses = [set(_names(text)) for _, _, text in self.formulas]
        used = set(order)
        # what the kernel may save at forward time, in order of first use as PyTorch saves (mul: other, self):
        # (name, argument index, kind)
        index_of = {n: i for i, n in enumerate(arg_names)}
        self.save_plan = [(n, index_of[n], "tensor" if args[index_of[n]].is_tensor else "value")
                          for n in order if n in index_of]
        self.save_plan += [(n, *meta_names[n]) for n in order if n in meta_names]
        # the outputs to save, (name, output index or None for the whole result), in order of first use
        self.output_plan = [(n, output_names.get(n)) for n in order if n == "result" or n in output_names]
        # a saved tensor is kept only if a formula that will run needs it (PyTorch saves `self` for mul only
        # when `other` requires grad): for each tensor name, the formulas that read it
        self._readers = {n: tuple(k for k, u in enumerate(uses) if n in u) for n, _, kind in self.save_plan
                         if kind == "tensor"}
        self._readers.update({n: tuple(k for k, u in enumerate(uses) if n in u) for n, _ in self.output_plan})
        self._plans = {}
        self.tensor_names = tuple(self._readers)
        self.node_cls = None  # filled by the autograd layer when the node name does not depend on the call
        self.node_classes = {}  # ... and when it does: {name: class}
        base = op.functional.schema.name
        self._name = name or "".join(part.capitalize() for part in base.strip("_").split("_")) + "Backward0"
        self.function_name = f"backward_of_{generated.identifier(op.name)}"
        self.source = self._generate(used)
        self.helpers = helpers or {}  # an op module's own backward helpers

    @property
    def namespace(self):
        """What the formulas may read: lantern.ops.derivative_helpers, then the op module's own helpers."""
        return {**_HELPERS, **self.helpers}

    @functools.cached_property
    def backward(self):
        """The function applying the formulas, made on first use: from lantern/_generated/backward.py (which imports
        helpers from the op modules, so it is read once they have all loaded), or compiled. (A cached property, not
        a __getattr__: that would send every attribute read of a derivative through the slow generic path.)"""
        return generated.define("backward", self.function_name, self.source, self.namespace)

    def global_names(self):
        """{name: object} of the helpers and ops `backward` reads (the imports of lantern/_generated/backward.py)."""
        code, namespace = compile(self.source, "<formulas>", "exec"), self.namespace
        return {n: namespace[n] for n in sorted(generated.global_names(code)) if n in namespace}

    def plan(self, needs):
        """(what to save of the arguments, which outputs to save) when the formulas flagged in `needs` will run."""
        plan = self._plans.get(needs)
        if plan is None:
            def read(name):
                return any(needs[k] for k in self._readers[name])
            entries = tuple(e for e in self.save_plan if e[2] != "tensor" or read(e[0]))
            outputs = tuple(e for e in self.output_plan if read(e[0]))
            plan = self._plans[needs] = (entries, outputs)
        return plan

    def _generate(self, used):
        lines = [f"def {self.function_name}(node, grads):"]
        if "grad" in used:
            lines.append("    grad = grads[0]")
        lines.append("    saved = node.saved")
        for name, _, kind in self.save_plan:
            lines.append(f"    {name} = unpack(saved.get('{name}'), node)" if kind == "tensor" else
                         f"    {name} = saved['{name}']")
        for name, _ in self.output_plan:
            lines.append(f"    {name} = unpack(saved.get('{name}'), node)")
        lines.append("    needs = node.needs")
        lines.append("    return (")
        for k, (_, _, text) in enumerate(self.formulas):
            lines.append(f"        ({text}) if needs[{k}] else None,")
        lines.append("    )")
        return "\n".join(lines) + "\n"

    def node_name(self, args):
        return self._name(args) if callable(self._name) else self._name


class TensorMeta:
    """The geometry of a tensor, saved for formulas that need only its shape/strides/dtype/device."""

    __slots__ = ("size", "stride", "offset", "dtype", "device")

    def __init__(self, t):
        self.size, self.stride, self.offset = t._size, t._stride, t._offset
        self.dtype, self.device = t.dtype, t._backend.device

    def numel(self):
        n = 1
        for s in self.size:
            n *= s
        return n

    def __repr__(self):
        return f"[{', '.join(map(str, self.size))}] {str(self.dtype).rpartition('.')[2]}"


def derivative(op_name, name=None, scalar_inputs=(), helpers=None, result=None, **formulas):
    """Attach formulas to `op_name` (and its in-place form, which shares them). `name`: the node's class name, or
    a function of the call's arguments; `scalar_inputs`: arguments that are no input when given a number;
    `helpers`: extra functions the formulas call (an op module's own backward helpers, {name: function});
    `result`: the forward derivative, the output's tangent from the inputs' `<arg>_t` (derivatives.yaml's
    `result:` line; see lantern/ops/forward_derivative.py)."""
    op = get(op_name)
    d = Derivative(op, formulas, name, scalar_inputs=scalar_inputs, helpers=helpers)
    if result is not None:
        d.forward = Forward.formula(result)
    op.derivative = d
    if op.inplace is not None:
        op.inplace.derivative = d
    return d


def nondifferentiable(*op_names):
    """Ops whose outputs never require grad (comparisons, argmax, ...): autograd records nothing for them."""
    for op_name in op_names:
        op = get(op_name)
        op.derivative = Derivative(op, {}, nondifferentiable=True)
        if op.inplace is not None:
            op.inplace.derivative = op.derivative


def zero_gradient_inplace(*op_names):
    """Comparisons: the bool result never requires grad, but the in-place form on a floating tensor (x.eq_(y))
    replaces its history with a zero gradient, as PyTorch's EqBackward0/EqBackward1 do."""
    for op_name in op_names:
        op = get(op_name)
        formulas = {a.name: "zeros_like(grad)" for a in op.schema.args if a.is_tensor and not a.is_list}
        node = op_name.capitalize() + "Backward"
        op.derivative = Derivative(op, {}, nondifferentiable=True)
        op.inplace.derivative = Derivative(op.inplace, formulas, scalar_inputs=("other",),
                                           name=lambda args, node=node: node + ("1" if hasattr(args[1], "dim")
                                                                               else "0"))
