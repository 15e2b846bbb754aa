"""Forward derivatives: how an op's output tangent follows from its inputs' tangents (forward-mode AD).

Each op with a backward declares one of four kinds of forward derivative, kept on its record as
`op.derivative.forward`:

- a formula, PyTorch's `result:` line of derivatives.yaml, written with lantern ops over the arguments (their
  primal values), each differentiable argument's tangent `<arg>_t` (zeros where the input has none) and the output
  `result` (`result0`, ... or the outputs' names for several):
  `derivative("mul", self=..., other=..., result="self_t * other + self * other_t")`;
- linear: the op is linear in its differentiable inputs, so the tangent is the op itself applied to the tangents
  (add, cat, sum, every view: the tangent of a view is the same view of the tangent);
- derived: computed from the backward formulas by the "double vjp" trick. The vjp u -> Jᵀu is linear in u, so
  J t is the gradient of <Jᵀu, t> with respect to u; the backward formulas are differentiable, so autograd can
  take it;
- unsupported: the op raises PyTorch's NotImplementedError under forward AD.

>>> from lantern.ops.registry import get
>>> get("mul").derivative.forward
Forward(formula: self_t * other + self * other_t)
>>> get("add").derivative.forward, get("transpose").derivative.forward
(Forward(linear), Forward(linear))
"""
import ast

from .registry import get


class Forward:
    """One op's forward derivative: its kind ('formula', 'linear', 'derived' or 'unsupported') and formula text."""

    __slots__ = ("kind", "text", "code", "names", "helpers")

    def __init__(self, kind, text=None, helpers=None):
        self.kind, self.text, self.helpers = kind, text, helpers or {}
        self.code = None if text is None else compile(text, f"<forward derivative: {text}>", "eval")
        self.names = set() if text is None else {n.id for n in ast.walk(ast.parse(text, mode="eval"))
                                                 if isinstance(n, ast.Name)}

    @classmethod
    def formula(cls, text, helpers=None):
        return cls("formula", text, helpers)

    def __repr__(self):
        return f"Forward({self.kind}{': ' + self.text if self.text else ''})"


def _declare(op_name, forward):
    d = get(op_name).derivative
    if d is None or d.nondifferentiable:
        raise ValueError(f"forward derivative for {op_name}: the op has no backward to go beside")
    d.forward = forward


def forward_formula(op_name, result, helpers=None):
    """The output tangent of `op_name` as a formula (for ops whose derivative(...) call does not give `result=`);
    `helpers`: functions it calls beyond the backward formulas' ({name: function})."""
    _declare(op_name, Forward.formula(result, helpers))


def linear(*op_names):
    """Ops linear in their differentiable inputs: the tangent is the op applied to the tangents."""
    for name in op_names:
        _declare(name, Forward("linear"))


def derived(*op_names):
    """Ops whose forward derivative is derived from their backward formulas (the double-vjp trick)."""
    for name in op_names:
        _declare(name, Forward("derived"))


def unsupported(*op_names):
    """Ops that refuse forward AD with PyTorch's error."""
    for name in op_names:
        _declare(name, Forward("unsupported"))
