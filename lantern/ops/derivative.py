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
    """The backward of one op: compiled formulas per differentiable input, and what must be saved for them."""

    def __init__(self, op, formulas, name=None, nondifferentiable=False):
        from . import derivative_helpers
        if not _HELPERS:
            _HELPERS.update({k: v for k, v in vars(derivative_helpers).items() if not k.startswith("__")})
        self.op = op
        self.nondifferentiable = nondifferentiable
        arg_names = [a.name for a in op.schema.args]
        meta_names = [a.name + "_meta" for a in op.schema.args if a.is_tensor and not a.is_list]
        out_names = [r.name for r in op.schema.returns if r.name not in ("_", "")]
        params = ["grad", "grads", "result"] + out_names + arg_names + meta_names
        self.params = params
        self.formulas = []          # (argument index, argument name, compiled function, source text)
        self.saved_args = set()
        self.saves_result = False
        for arg, text in formulas.items():
            if arg not in arg_names:
                raise ValueError(f"derivative for {op.name}: {arg!r} is not an argument of {op.schema.text}")
            fn = eval(f"lambda {', '.join(params)}: ({text})", dict(_HELPERS))
            used = _names(text)
            self.saved_args |= used & set(arg_names + meta_names)
            self.saves_result = self.saves_result or bool(used & ({"result"} | set(out_names)))
            self.formulas.append((arg_names.index(arg), arg, fn, text))
        self.out_names = out_names
        base = op.functional.schema.name
        self._name = name or "".join(part.capitalize() for part in base.strip("_").split("_")) + "Backward0"

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
