"""The elementwise ops a fusion group may hold: each one's scalar code and its symbolic derivative.

A rule turns the operand expressions of one node (Python source, already cast to the node's compute type) into the
source of its result, and, for the backward kernel, into the source of each operand's gradient contribution given
the names of the result (`y`) and of the incoming gradient (`g`). Arguments that must be known when compiling
(pow's exponent, clamp's bounds, gelu's `approximate`) arrive in `const` (`NOT_CONST` when only known at run time,
and then the rule refuses by raising `Unsupported`).

>>> rule = RULES["mul"]
>>> rule.forward(["a", "b"], [NOT_CONST, 2.0], "float32")
'(a * b)'
>>> rule.backward(["a", "b"], [NOT_CONST, 2.0], "y", "g", "float32")
['(g * b)', '(g * a)']
"""
import math

__all__ = []

NOT_CONST = object()


class Unsupported(Exception):
    """This node (or this use of it) cannot go into a generated kernel: run the group op by op instead."""


class Rule:
    """forward(args, const, dt) -> source; backward(args, const, y, g, dt) -> a source or None per argument."""

    def __init__(self, forward, backward=None, compare=False):
        self.forward, self._backward, self.compare = forward, backward, compare

    def backward(self, args, const, y, g, dt):
        if self._backward is None:
            return [None] * len(args)
        grads = list(self._backward(args, const, y, g, dt))
        return grads + [None] * (len(args) - len(grads))


def lit(value, dt):
    """A constant as source of type `dt` (inf and nan spelled so the generated module can evaluate them)."""
    if dt == "bool":
        return "True" if value else "False"
    if isinstance(value, float) and not math.isfinite(value):
        return f"T_{dt}(float('{value}'))"
    return f"T_{dt}({value!r})"


def _need(const, i, what):
    value = const[i] if i < len(const) else None
    if value is NOT_CONST:
        raise Unsupported(f"{what} must be a constant")
    return value


def _alpha(args, const, dt):
    alpha = _need(const, 2, "alpha") if len(args) > 2 else 1
    return None if alpha == 1 else lit(alpha, dt)


def _scaled(expr, alpha):
    return expr if alpha is None else f"({alpha} * {expr})"


def _add(args, const, dt):
    return f"({args[0]} + {_scaled(args[1], _alpha(args, const, dt))})"


def _sub(args, const, dt):
    return f"({args[0]} - {_scaled(args[1], _alpha(args, const, dt))})"


def _rsub(args, const, dt):
    return f"({args[1]} - {_scaled(args[0], _alpha(args, const, dt))})"


def _div(args, const, dt):
    if len(args) > 2 and _need(const, 2, "rounding_mode") is not None:
        raise Unsupported("div with a rounding_mode")
    return f"({args[0]} / {args[1]})"


def _exponent(const):
    e = _need(const, 1, "pow's exponent")
    if not isinstance(e, (int, float)) or isinstance(e, bool):
        raise Unsupported("pow with a tensor exponent")
    return e


def _pow_source(x, e, dt):
    """x ** e with the special exponents computed as PyTorch's CPU kernel does (products, sqrt, reciprocals)."""
    if e == 2:
        return f"({x} * {x})"
    if e == 3:
        return f"({x} * {x} * {x})"
    if e == 1:
        return x
    if dt.startswith("float"):
        if e == 0.5:
            return f"math.sqrt({x})"
        if e == -0.5:
            return f"({lit(1, dt)} / math.sqrt({x}))"
        if e == -1:
            return f"({lit(1, dt)} / {x})"
        if e == -2:
            return f"({lit(1, dt)} / ({x} * {x}))"
    elif e < 0:
        raise Unsupported("integer pow with a negative exponent")
    return f"({x} ** {lit(e, dt)})"


def _pow(args, const, dt):
    return _pow_source(args[0], _exponent(const), dt)


def _pow_grad(args, const, y, g, dt):
    e = _exponent(const)
    if e == 0:
        return [lit(0, dt)]
    return [f"({g} * {lit(e, dt)} * {_pow_source(args[0], e - 1, dt)})"]


def _bound(const, i, dt, what):
    value = _need(const, i, what) if i < len(const) else None
    return None if value is None else lit(value, dt)


def _clamp(args, const, dt):
    lo, hi = _bound(const, 1, dt, "clamp's min"), _bound(const, 2, dt, "clamp's max")
    x = args[0]
    if lo is not None:
        x = f"({lo} if {x} < {lo} else {x})"
    if hi is not None:
        x = f"({hi} if {x} > {hi} else {x})"
    return x


def _clamp_grad(args, const, y, g, dt):
    lo, hi = _bound(const, 1, dt, "clamp's min"), _bound(const, 2, dt, "clamp's max")
    inside = " and ".join([f"{args[0]} >= {lo}"] * (lo is not None) + [f"{args[0]} <= {hi}"] * (hi is not None))
    return [f"({g} if {inside} else {lit(0, dt)})" if inside else g]


def _hardtanh(args, const, dt):
    lo, hi = lit(_need(const, 1, "min_val") if len(args) > 1 else -1, dt), \
        lit(_need(const, 2, "max_val") if len(args) > 2 else 1, dt)
    return f"({lo} if {args[0]} < {lo} else ({hi} if {args[0]} > {hi} else {args[0]}))"


def _hardtanh_grad(args, const, y, g, dt):
    lo, hi = lit(_need(const, 1, "min_val") if len(args) > 1 else -1, dt), \
        lit(_need(const, 2, "max_val") if len(args) > 2 else 1, dt)
    return [f"({g} if {args[0]} > {lo} and {args[0]} < {hi} else {lit(0, dt)})"]


def _slope(args, const, dt):
    return lit(_need(const, 1, "negative_slope") if len(args) > 1 else 0.01, dt)


def _gelu_mode(args, const):
    mode = _need(const, 1, "approximate") if len(args) > 1 else "none"
    if mode not in ("none", "tanh"):
        raise Unsupported(f"gelu approximate={mode!r}")
    return mode


def _gelu(args, const, dt):
    x, c = args[0], lambda v: lit(v, dt)
    if _gelu_mode(args, const) == "tanh":
        inner = f"({c(math.sqrt(2 / math.pi))} * ({x} + {c(0.044715)} * {x} * {x} * {x}))"
        return f"({c(0.5)} * {x} * ({c(1)} + tanh_{dt}({inner})))"
    return f"({c(0.5)} * {x} * ({c(1)} + math.erf({x} * {c(math.sqrt(0.5))})))"


def _gelu_grad(args, const, y, g, dt):
    x, c = args[0], lambda v: lit(v, dt)
    if _gelu_mode(args, const) == "tanh":
        k = math.sqrt(2 / math.pi)
        t = f"tanh_{dt}({c(k)} * ({x} + {c(0.044715)} * {x} * {x} * {x}))"
        return [f"({g} * gelu_tanh_grad({x}, {t}, {c(0.5)}, {c(1)}, {c(k)}, {c(3 * 0.044715)}))"]
    return [f"({g} * ({c(0.5)} * ({c(1)} + math.erf({x} * {c(math.sqrt(0.5))})) + "
            f"{x} * math.exp({c(-0.5)} * {x} * {x}) * {c(1 / math.sqrt(2 * math.pi))}))"]


def _extremum(keep, drop):
    """maximum (keep '>=') / minimum (keep '<='): NaN propagates; a tie splits the gradient in halves."""
    def forward(a, c, dt):
        return f"({a[0]} if {a[0]} {keep} {a[1]} or {a[0]} != {a[0]} else {a[1]})"

    def backward(a, c, y, g, dt):
        half, zero = f"({g} * {lit(0.5, dt)})", lit(0, dt)
        return [f"({half} if {a[0]} == {a[1]} else ({zero} if {a[0]} {drop} {a[1]} else {g}))",
                f"({half} if {a[0]} == {a[1]} else ({zero} if {a[1]} {drop} {a[0]} else {g}))"]
    return Rule(forward, backward)


def _softplus_parts(args, const, dt):
    beta = _need(const, 1, "beta") if len(args) > 1 else 1
    threshold = _need(const, 2, "threshold") if len(args) > 2 else 20
    return f"({args[0]} * {lit(beta, dt)})", lit(beta, dt), lit(threshold, dt)


def _softplus(args, const, dt):
    z, beta, threshold = _softplus_parts(args, const, dt)
    return f"({args[0]} if {z} > {threshold} else math.log1p(math.exp({z})) / {beta})"


def _softplus_grad(args, const, y, g, dt):
    z, beta, threshold = _softplus_parts(args, const, dt)
    return [f"({g} if {z} > {threshold} else {g} / ({lit(1, dt)} + math.exp(-{z})))"]


def _unary(fwd, bwd=None):
    return Rule(lambda a, c, dt: fwd(a[0], dt),
                None if bwd is None else (lambda a, c, y, g, dt: [bwd(a[0], y, g, dt)]))


def _compare(op):
    return Rule(lambda a, c, dt: f"({a[0]} {op} {a[1]})", compare=True)


RULES = {
    "add": Rule(_add, lambda a, c, y, g, dt: [g, _scaled(g, _alpha(a, c, dt))]),
    "sub": Rule(_sub, lambda a, c, y, g, dt: [g, f"(-{_scaled(g, _alpha(a, c, dt))})"]),
    "rsub": Rule(_rsub, lambda a, c, y, g, dt: [f"(-{_scaled(g, _alpha(a, c, dt))})", g]),
    "mul": Rule(lambda a, c, dt: f"({a[0]} * {a[1]})", lambda a, c, y, g, dt: [f"({g} * {a[1]})", f"({g} * {a[0]})"]),
    "div": Rule(_div, lambda a, c, y, g, dt: [f"({g} / {a[1]})", f"(-{g} * {y} / {a[1]})"]),
    "neg": _unary(lambda x, dt: f"(-{x})", lambda x, y, g, dt: f"(-{g})"),
    "pow": Rule(_pow, _pow_grad),
    "square": _unary(lambda x, dt: f"({x} * {x})", lambda x, y, g, dt: f"({lit(2, dt)} * {g} * {x})"),
    "tanh": _unary(lambda x, dt: f"tanh_{dt}({x})", lambda x, y, g, dt: f"({g} * ({lit(1, dt)} - {y} * {y}))"),
    "sigmoid": _unary(lambda x, dt: f"({lit(1, dt)} / ({lit(1, dt)} + math.exp(-{x})))",
                      lambda x, y, g, dt: f"({g} * {y} * ({lit(1, dt)} - {y}))"),
    "exp": _unary(lambda x, dt: f"math.exp({x})", lambda x, y, g, dt: f"({g} * {y})"),
    "expm1": _unary(lambda x, dt: f"math.expm1({x})", lambda x, y, g, dt: f"({g} * ({y} + {lit(1, dt)}))"),
    "log": _unary(lambda x, dt: f"log_{dt}({x})", lambda x, y, g, dt: f"({g} / {x})"),
    "log1p": _unary(lambda x, dt: f"math.log1p({x})", lambda x, y, g, dt: f"({g} / ({x} + {lit(1, dt)}))"),
    "sqrt": _unary(lambda x, dt: f"sqrt_{dt}({x})", lambda x, y, g, dt: f"({g} / ({lit(2, dt)} * {y}))"),
    "rsqrt": _unary(lambda x, dt: f"({lit(1, dt)} / sqrt_{dt}({x}))",
                    lambda x, y, g, dt: f"({lit(-0.5, dt)} * {g} * {y} * {y} * {y})"),
    "reciprocal": _unary(lambda x, dt: f"({lit(1, dt)} / {x})", lambda x, y, g, dt: f"(-{g} * {y} * {y})"),
    "relu": _unary(lambda x, dt: f"({lit(0, dt)} if {x} <= {lit(0, dt)} else {x})",
                   lambda x, y, g, dt: f"({g} if {y} > {lit(0, dt)} else {lit(0, dt)})"),
    "abs": _unary(lambda x, dt: f"abs({x})",
                  lambda x, y, g, dt: f"({g} if {x} > {lit(0, dt)} else (-{g} if {x} < {lit(0, dt)} else "
                                      f"{lit(0, dt)}))"),
    "sin": _unary(lambda x, dt: f"math.sin({x})", lambda x, y, g, dt: f"({g} * math.cos({x}))"),
    "cos": _unary(lambda x, dt: f"math.cos({x})", lambda x, y, g, dt: f"(-{g} * math.sin({x}))"),
    "erf": _unary(lambda x, dt: f"math.erf({x})",
                  lambda x, y, g, dt: f"({g} * {lit(2 / math.sqrt(math.pi), dt)} * math.exp(-{x} * {x}))"),
    "erfc": _unary(lambda x, dt: f"math.erfc({x})",
                   lambda x, y, g, dt: f"({g} * {lit(-2 / math.sqrt(math.pi), dt)} * math.exp(-{x} * {x}))"),
    "silu": _unary(lambda x, dt: f"({x} / ({lit(1, dt)} + math.exp(-{x})))",
                   lambda x, y, g, dt: f"({g} * silu_grad({x}, {lit(1, dt)}))"),
    "floor": _unary(lambda x, dt: f"np.floor({x})", lambda x, y, g, dt: lit(0, dt)),
    "ceil": _unary(lambda x, dt: f"np.ceil({x})", lambda x, y, g, dt: lit(0, dt)),
    "trunc": _unary(lambda x, dt: f"np.trunc({x})", lambda x, y, g, dt: lit(0, dt)),
    "maximum": _extremum(">=", "<"),
    "minimum": _extremum("<=", ">"),
    "softplus": Rule(_softplus, _softplus_grad),
    "clamp": Rule(_clamp, _clamp_grad),
    "hardtanh": Rule(_hardtanh, _hardtanh_grad),
    "leaky_relu": Rule(lambda a, c, dt: f"({a[0]} if {a[0]} > {lit(0, dt)} else {a[0]} * {_slope(a, c, dt)})",
                       lambda a, c, y, g, dt: [f"({g} if {a[0]} > {lit(0, dt)} else {g} * {_slope(a, c, dt)})"]),
    "gelu": Rule(_gelu, _gelu_grad),
    "where": Rule(lambda a, c, dt: f"({a[1]} if {a[0]} else {a[2]})",
                  lambda a, c, y, g, dt: [None, f"({g} if {a[0]} else {lit(0, dt)})",
                                          f"({lit(0, dt)} if {a[0]} else {g})"]),
    "gt": _compare(">"), "lt": _compare("<"), "ge": _compare(">="), "le": _compare("<="),
    "eq": _compare("=="), "ne": _compare("!="),
}
# Operand positions that take part in type promotion and are cast to the compute type (the rest are options).
OPERANDS = {"add": (0, 1), "sub": (0, 1), "rsub": (0, 1), "mul": (0, 1), "div": (0, 1), "pow": (0,),
            "maximum": (0, 1), "minimum": (0, 1), "softplus": (0,), "clamp": (0,), "hardtanh": (0,),
            "leaky_relu": (0,), "gelu": (0,), "where": (1, 2),
            "gt": (0, 1), "lt": (0, 1), "ge": (0, 1), "le": (0, 1), "eq": (0, 1), "ne": (0, 1)}
# Ops whose result is computed in floating point even from integer operands (the operands are cast first).
FLOATING = {"div", "tanh", "sigmoid", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
            "erf", "erfc", "silu", "gelu"}

# Ops costly enough per element that the backward reads their saved result instead of recomputing it.
EXPENSIVE = {"tanh", "sigmoid", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "erf", "erfc", "sin", "cos",
             "silu", "gelu"}


def operands(op, n_args):
    return OPERANDS.get(op, tuple(range(min(n_args, 1))))
