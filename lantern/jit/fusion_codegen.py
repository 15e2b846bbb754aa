"""A fusion group as a flat program, and the numba source of its forward and backward kernels.

`Program` is the group in SSA form reduced to what code generation needs: node i is `(op, args)` where each
argument is `("in", k)` (the group's k-th input), `("node", j)` (node j's result) or `("const", value)`.
`kernel_source` writes one loop over the flattened broadcast shape (fusion_numba.py compiles it).

>>> p = Program(1, [("mul", (("in", 0), ("const", 2.0))), ("tanh", (("node", 0),))], [("node", 1)])
>>> print(kernel_source(p, [("array", "float32")], ["float32", "float32"], ["float32", "float32"]))
def kernel(n, i0, o0):
    for k in loop(n):
        v0 = i0[k]
        t0 = (v0 * T_float32(2.0))
        t1 = tanh_float32(t0)
        o0[k] = t1
"""
import re

from .fusion_ops import EXPENSIVE, NOT_CONST, RULES, FLOATING, Unsupported, lit, operands

__all__ = []

SUPPORTED_DTYPES = {"bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"}


class Program:
    """A fusion group's nodes in order, its number of inputs and its outputs (references, as node arguments)."""

    def __init__(self, n_inputs, nodes, outputs):
        self.n_inputs, self.nodes, self.outputs = n_inputs, list(nodes), list(outputs)
        self.key = repr((n_inputs, self.nodes, self.outputs))
        self.depends = [self._inputs_of(ref) for ref in self.outputs]

    def _inputs_of(self, ref, memo=None):
        memo = {} if memo is None else memo
        if ref[0] == "in":
            return frozenset([ref[1]])
        if ref[0] == "const":
            return frozenset()
        if ref[1] not in memo:
            memo[ref[1]] = frozenset().union(*(self._inputs_of(a, memo) for a in self.nodes[ref[1]][1]))
        return memo[ref[1]]

    def __repr__(self):
        return f"Program({self.key})"


def _var(ref):
    return f"v{ref[1]}" if ref[0] == "in" else f"t{ref[1]}"


def _check_dtype(dt):
    if dt not in SUPPORTED_DTYPES:
        raise Unsupported(f"dtype {dt}")
    return dt


def _node_sources(program, in_kinds, result_dtypes, compute_dtypes, loaded=None):
    """(forward lines, per node the argument sources and constants) for the per-element body; nodes in
    `loaded` (node -> source) are read from there instead of computed."""
    lines = []
    for k, (kind, dt) in enumerate(in_kinds):
        _check_dtype(dt)
        lines.append(f"v{k} = i{k}[k]" if kind == "array" else f"v{k} = i{k}")
    in_dtypes = [dt for _, dt in in_kinds]
    args_of = []
    for j, (op, args) in enumerate(program.nodes):
        if op not in RULES:
            raise Unsupported(f"op {op}")
        cdt = _check_dtype(compute_dtypes[j])
        _check_dtype(result_dtypes[j])
        cast = operands(op, len(args))
        srcs, const = [], []
        for i, ref in enumerate(args):
            if ref[0] == "const":
                value = ref[1]
                const.append(value)
                if i in cast:
                    if not isinstance(value, (bool, int, float)):
                        raise Unsupported(f"constant {value!r} of {op}")
                    srcs.append(_literal(value, cdt))
                else:
                    srcs.append(None)
                continue
            const.append(NOT_CONST)
            src_dt = in_dtypes[ref[1]] if ref[0] == "in" else result_dtypes[ref[1]]
            name = _var(ref)
            srcs.append(f"T_{cdt}({name})" if i in cast and src_dt != cdt else name)
        if op in FLOATING and not cdt.startswith("float"):
            raise Unsupported(f"{op} computed in {cdt}")
        if loaded and j in loaded:
            lines.append(f"t{j} = {loaded[j]}")
        else:
            lines.append(f"t{j} = {_cast(RULES[op].forward(srcs, const, cdt), result_dtypes[j], cdt, op)}")
        args_of.append((srcs, const))
    return lines, args_of


def _cast(expr, dt, computed_in, op):
    """`expr` as type `dt`; a floating result computed in its own type needs no cast (numba keeps float32
    arithmetic, math functions and literals of one float type in that type), which keeps typing fast."""
    if dt == computed_in and dt.startswith("float") and not (op and RULES[op].compare):
        return expr
    return f"T_{dt}({expr})"


def _literal(value, dt):
    if dt != "bool" and not dt.startswith("float") and isinstance(value, float):
        raise Unsupported(f"float constant in a {dt} computation")
    return lit(value, dt)


def kernel_source(program, in_kinds, result_dtypes, compute_dtypes, saved=()):
    """The forward kernel: `kernel(n, i0.., o0.., s0..)`; in_kinds[k] = ("array" | "scalar", dtype name); the
    results of the nodes listed in `saved` are also written to s0, s1, ... for the backward."""
    lines, _ = _node_sources(program, in_kinds, result_dtypes, compute_dtypes)
    for m, ref in enumerate(program.outputs):
        if ref[0] == "const":
            raise Unsupported("a constant output")
        lines.append(f"o{m}[k] = {_var(ref)}")
    lines += [f"s{q}[k] = t{j}" for q, j in enumerate(saved)]
    params = ([f"i{k}" for k in range(program.n_inputs)] + [f"o{m}" for m in range(len(program.outputs))]
              + [f"s{q}" for q in range(len(saved))])
    return _wrap("kernel", params, lines)


def nodes_to_save(program, in_kinds, result_dtypes, compute_dtypes, wanted):
    """The transcendental nodes whose results the backward reads: saving them (one write and one read per
    element) is cheaper than recomputing them (measured on the GELU chain: 5.3 ms against 7.3 ms)."""
    source = backward_source(program, in_kinds, result_dtypes, compute_dtypes, ["array"] * len(program.outputs),
                             wanted)
    lines = [line.strip() for line in source.splitlines()[2:]]
    first_adjoint = next((i for i, line in enumerate(lines) if line.startswith(("a_", "d0"))), len(lines))
    definitions = {line.split(" = ")[0]: line.split(" = ", 1)[1] for line in lines[:first_adjoint]}
    live = set(re.findall(r"\bt\d+\b", " ".join(lines[first_adjoint:])))
    frontier = list(live)
    while frontier:
        for name in re.findall(r"\bt\d+\b", definitions.get(frontier.pop(), "")):
            if name not in live:
                live.add(name)
                frontier.append(name)
    return [j for j, (op, _) in enumerate(program.nodes) if op in EXPENSIVE and f"t{j}" in live]


def backward_source(program, in_kinds, result_dtypes, compute_dtypes, grad_kinds, wanted, saved=()):
    """The backward kernel: `backward(n, i0.., s0.., g0.., d0..)`: recomputes the forward per element (reading
    the `saved` nodes' results from s0, s1, ...), then runs the
    derivative rules in reverse; grad_kinds[m] is "array", "scalar" or None (no gradient for output m) and
    `wanted` lists the inputs whose gradient (over the broadcast shape) is written to d0, d1, ..."""
    lines, args_of = _node_sources(program, in_kinds, result_dtypes, compute_dtypes,
                                   {j: f"s{q}[k]" for q, j in enumerate(saved)})
    in_dtypes = [dt for _, dt in in_kinds]
    needs = {("in", k) for k in wanted}
    for j, (op, args) in enumerate(program.nodes):
        if not RULES[op].compare and any(tuple(a) in needs for a in args):
            needs.add(("node", j))
    adjoint = {}

    def dtype_of(ref):
        return in_dtypes[ref[1]] if ref[0] == "in" else result_dtypes[ref[1]]

    def accumulate(ref, expr, computed_in):
        ref = tuple(ref)
        name = f"a_{_var(ref)}"
        expr = _cast(expr, dtype_of(ref), computed_in, None)
        lines.append(f"{name} = {name} + {expr}" if ref in adjoint else f"{name} = {expr}")
        adjoint[ref] = name

    for m, (ref, kind) in enumerate(zip(program.outputs, grad_kinds)):
        if kind is not None and tuple(ref) in needs:
            accumulate(ref, f"g{m}[k]" if kind == "array" else f"g{m}", None)
    for j in reversed(range(len(program.nodes))):
        if ("node", j) not in adjoint:
            continue
        op, args = program.nodes[j]
        srcs, const = args_of[j]
        contributions = RULES[op].backward(srcs, const, f"t{j}", adjoint[("node", j)], compute_dtypes[j])
        for ref, expr in zip(args, contributions):
            if expr is not None and tuple(ref) in needs:
                accumulate(ref, expr, compute_dtypes[j])
    for slot, k in enumerate(wanted):
        zero = _literal(0, in_dtypes[k])
        lines.append(f"d{slot}[k] = {adjoint.get(('in', k), zero)}")
    params = ([f"i{k}" for k in range(program.n_inputs)] + [f"s{q}" for q in range(len(saved))]
              + [f"g{m}" for m in range(len(program.outputs))] + [f"d{slot}" for slot in range(len(wanted))])
    return _wrap("backward", params, lines)


def _wrap(name, params, lines):
    body = "\n".join("        " + line for line in lines)
    return f"def {name}(n, {', '.join(params)}):\n    for k in loop(n):\n{body}"
