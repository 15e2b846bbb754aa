"""Specialised derivatives: a faster formula beside an op's readable one, chosen on each backward call.

An op's derivative (ops/derivative.py) is written in lantern ops, so that double backward can differentiate it. When
a backward pass runs without create_graph, nothing records those ops, and a few array calls can do the same arithmetic
without each op's dispatch. Such a shortcut is a named specialisation (core/reference.py): a function declared with
`@specialisation(...)` beside the formula it replaces, with a guard saying which tensors it serves, and a parity test
holding it to the readable formula.

    derivative("mul", self="grad * conj(other)", other="grad * conj(self)")
    specialise_derivative("mul", {
        "grad * conj(other)": ("mul_backward_on_arrays(grad, other)", "row_major_floats(grad, other)"),
        ...}, helpers={...})

The op keeps its readable Derivative: `op.derivative.source` is the formula as written. `specialise_derivative`
builds a second one, `op.derivative.specialised`, whose formulas have each readable expression E replaced by
`(fast if guard else E)`; the graph node (autograd/node.py) runs it in place of the readable one when
`runs_specialised()`: fast paths are on (not reference mode), grad mode is off (backward without create_graph) and
nothing watches the dispatcher (tracer, dispatch trace, profiler). Otherwise, and for tensors the guard refuses,
the readable formula runs.

>>> from lantern.ops.registry import get
>>> print(get("mul").derivative.specialised.source.splitlines()[-3].strip()[:70])
((mul_backward_on_arrays(grad, other) if row_major_floats(grad, other)
"""
from ..core import dtype as dt
from ..core.reference import mode
from ..core.state import tls
from .derivative import Derivative
from .registry import get

FLOAT_ARRAY_DTYPES = (dt.float32, dt.float64)  # what a specialisation may compute on directly


def runs_specialised():
    """True when a backward formula may run a specialisation: fast paths on, no create_graph, nothing observing."""
    return mode.fast and not tls.grad_enabled and not tls.observed


def on_float_arrays(*tensors):
    """True when the tensors are float32/float64 of one dtype on one array backend (NumPy or CuPy): the tensors whose
    arrays a specialisation may compute on directly. Half precision keeps PyTorch's roundings in the ops."""
    first = tensors[0]
    backend, dtype = first._backend, first.dtype
    if backend.xp is None or dtype not in FLOAT_ARRAY_DTYPES:
        return False
    for t in tensors:
        if t._backend is not backend or t.dtype is not dtype:
            return False
    return True


def _saved_names(derivative):
    return {entry[0] for entry in derivative.save_plan + derivative.output_plan}


def specialise_derivative(op_name, replacements, helpers):
    """Give op `op_name`'s derivative a specialised variant: in each formula, every readable expression of
    `replacements` ({readable: (fast, guard)}) becomes `(fast if guard else readable)`. `helpers` are the functions
    the variant's formulas call (the readable ones' helpers, the fast functions and their guards)."""
    op = get(op_name)
    readable = op.derivative
    formulas = {}
    for _, arg, text in readable.formulas:
        for expression, (fast, guard) in replacements.items():
            text = text.replace(expression, f"({fast} if {guard} else {expression})")
        formulas[arg] = text
    unused = [e for e in replacements if not any(e in text for _, _, text in readable.formulas)]
    if unused:
        raise ValueError(f"specialise_derivative({op_name!r}): no formula contains {unused}")
    specialised = Derivative(op, formulas, helpers=helpers)
    unsaved = _saved_names(specialised) - _saved_names(readable)
    if unsaved:
        raise ValueError(f"specialise_derivative({op_name!r}): the readable formulas save no {sorted(unsaved)}")
    readable.specialised = specialised
