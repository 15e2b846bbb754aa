"""Derivatives, declared beside each op as derivatives.yaml does: one Python expression per differentiable input.

    derivative("mul", self="grad * other", other="grad * self")

A formula may use `grad` (the gradient of the output; `grads` for every output), `result` (the output, or the
named outputs of a multi-output op), any of the op's arguments by schema name, `<arg>_meta` for a tensor
argument's geometry alone (size, stride, offset, dtype, device: saving it keeps no tensor alive and is immune to
later in-place writes), and the helpers in lantern.ops.derivative_helpers. Formulas are written with lantern ops, so they are differentiable themselves
(double backward). The names a formula uses decide what the graph node saves: `mul` saves `self` and `other`,
`exp` (formula `grad * result`) saves only its output.

>>> d = get("mul").derivative
>>> d.node_name((None, None)), sorted(d.saved_args)
('MulBackward0', ['other', 'self'])
"""
import ast

from .registry import get

_HELPERS = {}


def _names(expr):
    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}


class Derivative:
    """The backward of one op: a generated function applying its formulas, and the plan of what to save.

    `source` holds the generated backward, e.g. for mul:

        def backward_of_mul(node, grads):
            grad = grads[0]
            saved = node.saved
            other = unpack(saved['other'], node)
            self = unpack(saved['self'], node)
            needs = node.needs
            return (
                (grad * other) if needs[0] else None,
                (grad * self) if needs[1] else None,
            )
    """

    def __init__(self, op, formulas, name=None, nondifferentiable=False):
        from . import derivative_helpers
        if not _HELPERS:
            _HELPERS.update({k: v for k, v in vars(derivative_helpers).items() if not k.startswith("__")})
        self.op = op
        self.nondifferentiable = nondifferentiable
        args = op.schema.args
        arg_names = [a.name for a in args]
        meta_names = {a.name + "_meta": i for i, a in enumerate(args) if a.is_tensor and not a.is_list}
        self.out_names = [r.name for r in op.schema.returns if r.name not in ("_", "")]
        for arg in formulas:
            if arg not in arg_names:
                raise ValueError(f"derivative for {op.name}: {arg!r} is not an argument of {op.schema.text}")
        # (argument index, argument name, formula text), in schema order: the order of the node's edges
        self.formulas = sorted((arg_names.index(arg), arg, text) for arg, text in formulas.items())
        used = set()
        for _, _, text in self.formulas:
            used |= _names(text)
        # what the kernel saves at forward time: (name, argument index, kind)
        self.save_plan = [(n, i, "tensor" if args[i].is_tensor else "value")
                          for i, n in enumerate(arg_names) if n in used]
        self.save_plan += [(n, i, "meta") for n, i in meta_names.items() if n in used]
        self.saves_result = bool(used & ({"result"} | set(self.out_names)))
        self.uses_self = "self" in used
        self.node_cls = None  # filled by the autograd layer when the node name does not depend on the call
        base = op.functional.schema.name
        self._name = name or "".join(part.capitalize() for part in base.strip("_").split("_")) + "Backward0"
        self.source = self._generate(base, used)
        namespace = dict(_HELPERS)
        exec(compile(self.source, f"<lantern derivative {op.name}>", "exec"), namespace)
        self.backward = namespace[f"backward_of_{base}"]

    def _generate(self, base, used):
        lines = [f"def backward_of_{base}(node, grads):"]
        if "grad" in used:
            lines.append("    grad = grads[0]")
        lines.append("    saved = node.saved")
        for name, _, kind in self.save_plan:
            lines.append(f"    {name} = unpack(saved['{name}'], node)" if kind == "tensor" else
                         f"    {name} = saved['{name}']")
        if self.saves_result:
            lines.append("    result = unpack(saved['result'], node)")
            if self.out_names:
                lines.append(f"    {', '.join(self.out_names)}, = result")
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
        self.dtype, self.device = t.dtype, t.device

    def numel(self):
        n = 1
        for s in self.size:
            n *= s
        return n


def derivative(op_name, name=None, **formulas):
    """Attach formulas to `op_name` (and its in-place form, which shares them)."""
    op = get(op_name)
    d = Derivative(op, formulas, name)
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
