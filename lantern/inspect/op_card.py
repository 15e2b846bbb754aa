"""`op_card("mul")`: one operator's whole story on one card, read from the live registry.

The schema and its alias kind, the meta function, the kernel each backend runs, the derivative formulas and what
the graph node saves, the code generated for the op (binding, dispatcher entry, backward: file and line in
lantern/_generated), and the fast paths declared for it (lantern.core.reference) with when they fire. Every
location is `path:line` from the repository root; `print(card)` shows it all, the fields hold the parts.

>>> card = op_card("mul")
>>> card.schema, card.alias
('mul(Tensor self, Tensor other) -> Tensor', <AliasKind.NEW: 'new'>)
>>> card.variants
['mul_ (in place)', 'mul.out (out=)']
>>> card.generated["binding lantern.mul"].startswith("lantern/_generated/functions.py:")
True
"""
import inspect
import os
from dataclasses import dataclass, field

from ..core import reference
from ..ops import binding, dispatcher, registry
from ..ops.op_kinds import AliasKind, OpKind

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ALIAS_KINDS = {AliasKind.NEW: "returns a new tensor",
               AliasKind.VIEW: "returns a view of an input, sharing its storage",
               AliasKind.INPLACE: "writes into self and returns it",
               AliasKind.OUT: "writes into out= and returns it"}
COMPOSITE = "composite"  # the card's kind for a composite: a Python function, not an Operator, so no OpKind
KINDS = {OpKind.STRUCTURED: "meta gives shape and dtype, then the kernel fills a new output",
         OpKind.STRUCTURED_INPLACE: "meta checks, then the kernel writes into self",
         OpKind.STRUCTURED_OUT: "meta checks, out is resized, then the kernel writes into it",
         OpKind.VIEW: "meta gives sizes, strides and offset over the input's storage; no data moves",
         OpKind.CUSTOM: "the kernel builds its own outputs",
         COMPOSITE: "a Python function over registered ops: no kernel, no derivative of its own"}


def where(fn):
    """`path:line` of a function's code (path from the repository root), or its in-memory file name."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return "(built in)"
    path = code.co_filename
    if os.path.isabs(path):
        path = os.path.relpath(path, _ROOT)
    return f"{path}:{code.co_firstlineno}"


def describe(fn):
    """A function's name and where it is: '_binary_meta.<locals>.meta  lantern/ops/pointwise_common.py:208' (a generated
    function by its own name: 'run_2_args_t0_t1  lantern/_generated/runners.py:96')."""
    plain = getattr(fn, "__func__", fn)
    name = getattr(plain, "__qualname__", repr(plain))
    if name.startswith("make_") and ".<locals>." in name:
        name = plain.__name__
    return f"{name}  {where(fn)}"


@dataclass
class OpCard:
    """Everything lantern knows about one operator; str() lays it out."""
    name: str
    schema: str
    alias: str
    kind: str
    variants: list
    meta: str
    kernels: dict            # backend key name -> runner (and the op's impl under it)
    derivative: str          # the graph node's name
    formulas: list           # (input, formula text)
    saves: list              # names the node may save
    generated: dict          # what -> path:line
    fast_paths: list = field(default_factory=list)   # Specialisation records

    def __str__(self):
        rows = [("schema", [self.schema]), ("alias kind", [f"{self.alias} ({ALIAS_KINDS[self.alias]})"]),
                ("kind", [f"{self.kind} ({KINDS[self.kind]})"]), ("variants", [", ".join(self.variants) or "none"]),
                ("meta", [self.meta]), ("kernels", self._kernel_lines()),
                ("derivative", self._derivative_lines()), ("saves", [", ".join(self.saves) or "nothing"]),
                ("code", [f"{what:<22}{loc}" for what, loc in self.generated.items()]),
                ("fast paths", self._fast_path_lines())]
        lines = [f"op {self.name}"]
        for title, values in rows:
            parts = [part for value in values for part in value.split("\n")]
            lines += [f"  {title if i == 0 else '':<12}{part}" for i, part in enumerate(parts)]
        return "\n".join(lines)

    __repr__ = __str__

    def _kernel_lines(self):
        if not self.kernels:
            return ["none (the ops it calls have theirs)"]
        width = max(len(key) for key in self.kernels) + 2
        return [f"{key:<{width}}{text}".replace("\n", "\n" + " " * width) for key, text in self.kernels.items()]

    def _derivative_lines(self):
        if not self.formulas:
            return [self.derivative]
        width = max(len(arg) for arg, _ in self.formulas) + 2
        return [self.derivative] + [f"  {arg + ':':<{width}}{text}" for arg, text in self.formulas]

    def _fast_path_lines(self):
        if not self.fast_paths:
            return ["none declared (the readable code above is what runs)"]
        lines = []
        for s in self.fast_paths:
            lines += [f"{s.name}  {where(s.function)}", f"  replaces {s.replaces}", f"  fires when {s.when}",
                      f"  parity test {s.parity_test}"]
        return lines


def op_card(name):
    """The card of the operator registered as `name` ('mul', 'add.out', ...) or of a composite ('conv2d')."""
    if name not in registry.REGISTRY and name in registry.COMPOSITES:
        return _composite_card(name)
    op = registry.get(name)
    return OpCard(
        name=op.name, schema=op.schema.text, alias=op.schema.alias, kind=op.kind, variants=_variants(op),
        meta=_meta_line(op), kernels=_kernels(op),
        derivative=_node_name(op), formulas=[(arg, text) for _, arg, text in _formulas(op)],
        saves=_saves(op), generated=_generated(op),
        fast_paths=_fast_paths({op.name, op.functional.name}) + _generated_code_paths(op))


def _meta_line(op):
    """The op's meta function, or a custom op's kernel for the meta device."""
    if op.meta is not None:
        return describe(op.meta)
    return f"meta-device kernel {describe(op.meta_kernel)}" if op.meta_kernel is not None else "none"


def _composite_card(name):
    wrapper = registry.COMPOSITES[name]
    fn = inspect.unwrap(wrapper)
    return OpCard(
        name=name, schema=f"{name}{inspect.signature(fn)}", alias=AliasKind.NEW, kind=COMPOSITE, variants=[],
        meta="none (the ops it calls check their arguments)", kernels={},
        derivative="none: autograd differentiates the ops it runs", formulas=[], saves=[],
        generated={"function": describe(fn), "wrapper (watchers)": where(wrapper)}, fast_paths=_fast_paths({name}))


def _variants(op):
    out = []
    if op.inplace is not None:
        out.append(f"{op.inplace.name} (in place)")
    if op.out is not None:
        out.append(f"{op.out.name} (out=)")
    if op.functional is not op:
        out.append(f"{op.functional.name} (functional)")
    return out


def _kernels(op):
    """{backend key: its runner, and the op's kernel when that runner calls it}, highest key first."""
    kernels = {}
    for key, runner in sorted(op.kernels.items(), key=lambda item: -item[0]):
        kernels[key.name] = describe(runner)
        backend = getattr(runner, "__self__", None)
        if getattr(backend, "xp", True) is None:
            kernels[key.name] += "  (shapes only: no kernel runs)"
        elif op.impl is not None and op.kind is not OpKind.VIEW and (backend is not None or "make_run_" in runner.__qualname__):
            kernels[key.name] += f"\nruns {describe(op.impl)}"
        if hasattr(runner, "sparse_kernel"):   # a sparse layout's kernel (lantern.backends.sparse.register_kernel)
            kernels[key.name] += f"\nruns {describe(runner.sparse_kernel)}"
    return kernels


def _formulas(op):
    d = op.derivative
    return [] if d is None or d.nondifferentiable else d.formulas


def _node_name(op):
    d = op.derivative
    if d is None:
        return "none declared"
    if d.nondifferentiable:
        return "not differentiable (autograd records nothing)"
    name = d._name
    return f"{name.__qualname__} (the node's name depends on the call)" if callable(name) else name


def _saves(op):
    d = op.derivative
    if d is None or d.nondifferentiable:
        return []
    return [name for name, _, _ in d.save_plan] + [name for name, _ in d.output_plan]


def _generated(op):
    found = {}
    function, method = binding.made_binding(op.name), binding.made_binding(op.schema.name, method=True)
    if getattr(function, "lantern_op", None) is op:
        found[f"binding lantern.{op.name}"] = where(function)
    if getattr(method, "lantern_op", None) is op:
        found[f"method Tensor.{op.schema.name}"] = where(method)
    shape = dispatcher.entry_shape(op)
    sharing = sum(dispatcher.entry_shape(other) == shape for other in registry.REGISTRY.values())
    found["dispatch entry"] = f"{where(dispatcher.entry(op))}  (one of {sharing} ops of shape {shape})"
    if _formulas(op):
        found["backward"] = where(op.derivative.backward)
    return found


def _fast_paths(names):
    return [s for name in sorted(names) for s in reference.specialisations_for(name)]


def _generated_code_paths(op):
    """The fast paths every op of its kind has: its generated dispatcher entry, and for a structured op its
    generated runner (reference mode runs dispatcher.dispatch and Backend.run_structured instead)."""
    paths = [reference.SPECIALISATIONS["lantern.ops.dispatcher._generated_entry"]]
    if op.kind is OpKind.STRUCTURED and not op.list_positions:
        paths.append(reference.SPECIALISATIONS["lantern.backends.base.Backend._specialized_structured"])
    return paths
