"""Calls of lantern's Python-level nn functions compiled to the aten ops torch's script produces for them.

torch's script turns `F.linear(x, w, b)` into `aten::linear(x, w, b)` and `F.relu(x)` into `aten::relu(x)`, so a
saved scripted module names only aten ops and loads in torch.jit.load (and LibTorch). lantern's functionals are
Python functions over its own ops; the script frontend looks each call up here, binds the arguments to the
functional's signature and emits the aten node torch would. Arguments that choose between ops (`inplace`,
`return_indices`) must be constants, as they are in torch's modules (`__constants__`).

lantern's interpreter runs such a node by name (`lantern.<op>`), or, where lantern has no top-level function of
that name, through the node's `python` attribute, which names lantern's function with the aten signature.

>>> import lantern
>>> import lantern.nn.functional as F
>>> def f(x, w):
...     return F.relu(F.linear(x, w))
>>> print(lantern.jit.script(f).code, end="")
def f(x: Tensor,
    w: Tensor) -> Tensor:
  return torch.relu(torch.linear(x, w))
"""
import inspect

import lantern
from ..nn import functional
from ..ops.registry import REGISTRY
from .types import TensorType, TupleType

__all__ = ["lower"]


def lower(emitter, fn, args, kwargs, src):
    """The output of the aten op(s) a call of lantern functional `fn` compiles to, or None if it has no lowering."""
    name = getattr(fn, "__name__", "")
    rule = _RULES.get(name)
    if rule is None or _functional(name) is not fn:
        return None
    from .frontend_emit import error  # cycle: jit.frontend_emit imports jit.lowering
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise error(f"{name}(): {exc}", src) from None
    supplied = set(bound.arguments)
    bound.apply_defaults()
    variadic = {p.name for p in bound.signature.parameters.values() if p.kind is p.VAR_POSITIONAL}
    values = {k: [emitter.as_value(x, src) for x in v] if k in variadic else
              emitter.as_value(v, src) if k in supplied else emitter.const(v) for k, v in bound.arguments.items()}
    return rule(_Call(emitter, values, src, name))


def _functional(name):
    """The lantern function rule `name` lowers: lantern.nn.functional's, else the top-level one (lantern.lstm)."""
    return getattr(functional, name, None) or getattr(lantern, name, None)


class _Call:
    """One functional call being lowered: its bound argument values and helpers to emit aten nodes."""

    def __init__(self, emitter, values, src, name):
        self.emitter, self.values, self.src, self.name = emitter, values, src, name

    def __getitem__(self, name):
        return self.values[name]

    def constant(self, name):
        """The Python value of argument `name`, which must be a compile-time constant."""
        from .frontend_emit import error  # cycle: jit.frontend_emit imports jit.lowering
        value = self.values[name]
        if value.node().kind() == "prim::Constant" and "value" not in value.node().attrs:
            return None
        try:
            return self.emitter.const_value(value)
        except KeyError:
            raise error(f"{self.name}(): argument '{name}' must be a constant in TorchScript (a literal or a "
                        "module attribute listed in __constants__)", self.src) from None

    def aten(self, op, *inputs, tuple_of=0, **keywords):
        """`aten::<op>(*inputs, **keywords)`: a registry op through the frontend's schema binding, else a by-name
        node (positional inputs only)."""
        inputs = [v if not isinstance(v, (int, float, str, bool, list, type(None))) else self.emitter.const(v)
                  for v in inputs]
        if op in REGISTRY:
            return self.emitter.call_op(REGISTRY[op], inputs, keywords, self.src)
        attrs = {}
        if not callable(getattr(lantern, op, None)):
            fn = _functional(op)
            attrs["python"] = f"{fn.__module__}.{fn.__name__}"
        out_types = [TensorType.get()] * (tuple_of or 1)
        node = self.emitter.emit_node(f"aten::{op}", inputs, out_types, attrs, self.src)
        if not tuple_of:
            return node.output()
        return self.emitter.node1("prim::TupleConstruct", list(node.outputs()), TupleType(out_types), src=self.src)

    def pool_stride(self):
        """A pooling stride of None is torch's empty list (the kernel size)."""
        return [] if self.is_none("stride") else self["stride"]

    def is_none(self, name):
        node = self.values[name].node()
        return node.kind() == "prim::Constant" and node.attrs.get("value") is None


def _inplace_or_not(op):
    def rule(call):
        return call.aten(op + "_" if call.constant("inplace") else op, call["input"])
    return rule


def _leaky_relu(call):
    op = "leaky_relu_" if call.constant("inplace") else "leaky_relu"
    return call.aten(op, call["input"], call["negative_slope"])


def _softmax(op):
    def rule(call):
        if call.is_none("dim"):
            from .frontend_emit import error  # cycle: jit.frontend_emit imports jit.lowering
            raise error(f"{op}(): dim must be given in TorchScript", call.src)
        return call.aten(op, call["input"], call["dim"], call["dtype"])
    return rule


def _dropout(call):
    op = "dropout_" if call.constant("inplace") else "dropout"
    return call.aten(op, call["input"], call["p"], call["training"])


def _conv(op):
    def rule(call):
        return call.aten(op, call["input"], call["weight"], call["bias"], call["stride"], call["padding"],
                         call["dilation"], call["groups"])
    return rule


def _max_pool(op):
    def rule(call):
        indices = call.constant("return_indices")
        args = (call["input"], call["kernel_size"], call.pool_stride(), call["padding"], call["dilation"],
                call["ceil_mode"])
        if indices:
            return call.aten(op + "_with_indices", *args, tuple_of=2)
        return call.aten(op, *args)
    return rule


def _avg_pool(op):
    def rule(call):
        extra = (call["divisor_override"],) if "divisor_override" in call.values else ()
        return call.aten(op, call["input"], call["kernel_size"], call.pool_stride(), call["padding"],
                         call["ceil_mode"], call["count_include_pad"], *extra)
    return rule


def _batch_norm(call):
    return call.aten("batch_norm", call["input"], call["weight"], call["bias"], call["running_mean"],
                     call["running_var"], call["training"], call["momentum"], call["eps"], True)


def _layer_norm(call):
    return call.aten("layer_norm", call["input"], call["normalized_shape"], call["weight"], call["bias"],
                     call["eps"], True)


def _embedding(call):
    if call.constant("max_norm") is not None:
        from .frontend_emit import not_supported  # cycle: jit.frontend_emit imports jit.lowering
        raise not_supported("embedding(): max_norm renormalises the weight in place, which lantern's script does "
                            "not compile", call.src)
    padding_idx = call.constant("padding_idx")
    return call.aten("embedding", call["weight"], call["input"], -1 if padding_idx is None else padding_idx,
                     call["scale_grad_by_freq"], call["sparse"])


def _recurrent(op, outputs):
    """torch.lstm / gru / rnn_tanh / rnn_relu, either overload (padded input with hx first, or packed data with
    batch_sizes first): (output, h_n, c_n) for lstm, (output, h_n) for the others."""
    return lambda call: call.aten(op, call["input"], *call["args"], tuple_of=outputs)


def _unary(op):
    return lambda call: call.aten(op, call["input"])


_RULES = {
    "linear": lambda call: call.aten("linear", call["input"], call["weight"], call["bias"]),
    "relu": _inplace_or_not("relu"),
    "silu": _inplace_or_not("silu"),
    "leaky_relu": _leaky_relu,
    "gelu": lambda call: call.aten("gelu", call["input"], approximate=call["approximate"]),
    "tanh": _unary("tanh"),
    "sigmoid": _unary("sigmoid"),
    "softmax": _softmax("softmax"),
    "log_softmax": _softmax("log_softmax"),
    "dropout": _dropout,
    "conv1d": _conv("conv1d"),
    "conv2d": _conv("conv2d"),
    "conv3d": _conv("conv3d"),
    "max_pool1d": _max_pool("max_pool1d"),
    "max_pool2d": _max_pool("max_pool2d"),
    "max_pool3d": _max_pool("max_pool3d"),
    "avg_pool1d": _avg_pool("avg_pool1d"),
    "avg_pool2d": _avg_pool("avg_pool2d"),
    "avg_pool3d": _avg_pool("avg_pool3d"),
    "adaptive_avg_pool1d": lambda call: call.aten("adaptive_avg_pool1d", call["input"], call["output_size"]),
    "adaptive_avg_pool2d": lambda call: call.aten("adaptive_avg_pool2d", call["input"], call["output_size"]),
    "pad": lambda call: call.aten("pad", call["input"], call["pad"], call["mode"], call["value"]),
    "batch_norm": _batch_norm,
    "layer_norm": _layer_norm,
    "embedding": _embedding,
    "lstm": _recurrent("lstm", 3),
    "gru": _recurrent("gru", 2),
    "rnn_tanh": _recurrent("rnn_tanh", 2),
    "rnn_relu": _recurrent("rnn_relu", 2),
}
