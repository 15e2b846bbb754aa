"""autograd.Function: user-defined ops with a hand-written backward.

A subclass gets a node class named `<Name>Backward` (made by the metaclass). `apply` runs the static forward with
grad mode off, then records one node whose `apply` calls the user's backward. The node is the `ctx`, as in PyTorch,
so `y.grad_fn.needs_input_grad` and attributes set on ctx are visible on the graph.

>>> class Exp(lantern.autograd.Function):
...     @staticmethod
...     def forward(ctx, i):
...         result = i.exp()
...         ctx.save_for_backward(result)
...         return result
...     @staticmethod
...     def backward(ctx, grad_output):
...         result, = ctx.saved_tensors
...         return grad_output * result
>>> x = lantern.tensor([0., 1.], requires_grad=True)
>>> y = Exp.apply(x); y.sum().backward()
>>> type(y.grad_fn).__name__, [round(v, 4) for v in x.grad.tolist()]
('ExpBackward', [1.0, 2.7183])
"""
import contextlib
import functools

from ..core.dtype import is_differentiable
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..ops.dispatcher import call
from ..ops.registry import get
from ..ops.derivative_helpers import zeros_like
from .anomaly import remember_forward
from .forward_ad import set_tangent, suspended
from .graph import InputMeta, Node, SavedTensor, freed_error, gradient_edge
from .grad_mode import no_grad
from .views import CopySlices, record_view


class FunctionCtx:
    """The ctx API; the backward node class inherits it, so ctx and grad_fn are one object."""

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, TensorImpl):
                raise TypeError(f"save_for_backward can only save variables, but argument {tensors.index(t)} is "
                                f"of type {type(t).__name__}")
        self._to_save = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self._materialize = bool(value)

    def save_for_forward(self, *tensors):
        """Tensors the jvp staticmethod reads back as ctx.saved_tensors (forward-mode AD)."""
        self._saved_for_forward = tensors

    @property
    def saved_tensors(self):
        if getattr(self, "_in_jvp", False):
            return self._saved_for_forward
        if self._freed:
            raise freed_error()
        return tuple(None if s is None else s.unpack(self) for s in self._saved)

    saved_variables = saved_tensors


class BackwardCFunction(FunctionCtx, Node):
    """The node recorded by Function.apply."""

    _forward_cls = None
    returns_user_tensors = True

    def __init__(self):
        Node.__init__(self)
        self._to_save = ()
        self._saved = ()
        self._dirty = ()
        self._non_differentiable = ()
        self._materialize = True
        self._freed = False
        self.needs_input_grad = ()
        self._tensor_positions = ()
        self._output_meta = ()

    def apply(self, grads):
        if self._materialize:
            grads = [_zeros(meta) if g is None and meta is not None else g
                     for g, meta in zip(grads, self._output_meta)]
        result = self._forward_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_inputs = len(self.needs_input_grad)
        if len(result) < n_inputs or any(r is not None for r in result[n_inputs:]):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected "
                               f"{n_inputs}, got {len(result)})")
        out = []
        for i, r in enumerate(result[:n_inputs]):
            if i in self._tensor_positions:
                out.append(r if self.needs_input_grad[i] else None)
            elif r is not None:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
        return tuple(out)

    def release_saved(self):
        self._saved = ()
        self._freed = True

    def name(self):
        return type(self).__name__


def _zeros(meta):
    return call(get("zeros"), (meta.shape, meta.dtype, None, meta.device, None, False, None))


class Error(Node):
    """The grad_fn of a once-differentiable backward's outputs (PyTorch's DelayedError, whose Python type is
    named `Error`): differentiating through it raises."""

    __slots__ = ()

    def apply(self, grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


def once_differentiable(fn):
    """Mark a backward as not differentiable itself: it runs under no_grad, and when a graph is being built
    (create_graph) from grads that require grad, its outputs get a grad_fn that raises on double backward."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not tls.grad_enabled or not any(isinstance(a, TensorImpl) and a._requires_grad for a in args):
            return outputs
        items = outputs if isinstance(outputs, tuple) else (outputs,)
        leaves = [o.detach().requires_grad_(True) if isinstance(o, TensorImpl) and is_differentiable(o.dtype) else None
                  for o in items]
        node = Error(tuple(gradient_edge(t) if t is not None else (None, 0) for t in leaves),
                     tuple(InputMeta(t) if t is not None else None for t in leaves))
        wrapped = []
        for nr, (o, leaf) in enumerate(zip(items, leaves)):
            if leaf is not None:
                o = leaf.detach()
                o._requires_grad, o._grad_fn, o._output_nr = True, node, nr
            wrapped.append(o)
        return tuple(wrapped) if isinstance(outputs, tuple) else wrapped[0]
    return wrapper


class FunctionMeta(type):
    """Gives each Function subclass its node class, `<Name>Backward`."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class for custom autograd ops: define static forward (and setup_context) and backward."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        tensor_positions = tuple(i for i, a in enumerate(args) if isinstance(a, TensorImpl))
        ctx._tensor_positions = tensor_positions
        ctx.needs_input_grad = tuple(isinstance(a, TensorImpl) and a._requires_grad for a in args)
        custom_setup = cls.setup_context is not Function.setup_context
        dual = tls.forward_ad and any(a._fw_grad is not None for a in args if isinstance(a, TensorImpl))
        with no_grad(), (suspended() if dual else contextlib.nullcontext()):
            if custom_setup:
                outputs = cls.forward(*args, **kwargs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        if custom_setup:
            cls.setup_context(ctx, args, outputs)
        record = tls.grad_enabled and any(ctx.needs_input_grad)
        if record and tls.anomaly:
            remember_forward(ctx)
        result = _finish(ctx, args, outputs, record)
        if dual:
            _forward_tangents(cls, ctx, args, result)
        return result

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")


def _forward_tangents(cls, ctx, args, result):
    """Forward-mode AD through a custom Function: its jvp staticmethod maps the inputs' tangents (zeros for a
    tensor without one) to the outputs', reading ctx.save_for_forward's tensors as ctx.saved_tensors."""
    tangents = [(a._fw_grad if a._fw_grad is not None else zeros_like(a)) if isinstance(a, TensorImpl) else None
                for a in args]
    ctx._in_jvp = True
    try:
        with suspended():
            out_tangents = cls.jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = False
    outs = result if isinstance(result, tuple) else (result,)
    out_tangents = out_tangents if isinstance(out_tangents, tuple) else (out_tangents,)
    for o, t in zip(outs, out_tangents):
        if isinstance(o, TensorImpl) and t is not None and is_differentiable(o.dtype):
            set_tangent(o, t)


def _finish(ctx, args, outputs, record):
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    dirty = {id(t) for t in ctx._dirty}
    non_diff = {id(t) for t in ctx._non_differentiable}
    inputs = {id(a) for a in args if isinstance(a, TensorImpl)}
    if record:
        ctx.next_functions = tuple(gradient_edge(args[i]) if args[i]._requires_grad else (None, 0)
                                   for i in ctx._tensor_positions)
    result = []
    for nr, o in enumerate(outs):
        if not isinstance(o, TensorImpl):
            result.append(o)
            continue
        differentiable = record and id(o) not in non_diff and is_differentiable(o.dtype)
        if id(o) in dirty:
            _check_dirty(o, record)
            o._bump_version()
            if differentiable:
                _rebase(o, ctx, nr)
        else:
            if id(o) in inputs and record:
                o = _alias(o)  # an input returned unchanged: the output is a new view of it
                o._custom_function_view = _view_error(ctx, nr, outs, non_diff)  # no in-place on it
            if differentiable:
                o._requires_grad, o._grad_fn, o._output_nr = True, ctx, nr
        result.append(o)
    if record:
        ctx._output_meta = tuple(InputMeta(o) if isinstance(o, TensorImpl) else None for o in result)
        ctx._input_meta = ctx._output_meta
        out_ids = {id(o): i for i, o in enumerate(result) if isinstance(o, TensorImpl)}
        ctx._saved = tuple(None if t is None else SavedTensor(t, id(t) in out_ids, out_ids.get(id(t), 0))
                           for t in ctx._to_save)
        ctx._to_save = ()
    else:
        ctx._saved = tuple(None if t is None else SavedTensor(t) for t in ctx._to_save)
    return result[0] if single else tuple(result)


def _view_error(ctx, nr, outs, non_diff):
    """The error an in-place change of output nr (an input returned as-is, so a view) will raise."""
    n_diff = sum(1 for o in outs if isinstance(o, TensorImpl) and id(o) not in non_diff and is_differentiable(o.dtype))
    why = ("is the output of a function that returns multiple views. Such functions do not allow the output views to "
           "be modified inplace. You should replace the inplace operation by an out-of-place one." if n_diff > 1 else
           "was created inside a custom Function (or because an input was returned as-is) and the autograd logic to "
           "handle view+inplace would override the custom backward associated with the custom Function, leading to "
           "incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom "
           "Function.")
    return f"Output {nr} of {ctx._forward_cls.__name__} is a view and is being modified inplace. This view {why}"


def _check_dirty(t, record):
    if not (record and t._requires_grad):
        return
    if t._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    base = t._base
    if base is not None and base._requires_grad and base._grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def _rebase(t, ctx, nr):
    """A dirty output's history becomes ctx; a dirty view's base gets CopySlices, as for in-place ops."""
    base = t._base
    if base is not None and t.dtype is base.dtype:
        CopySlices.rebase(base, t, ctx)
        record_view(t)
    else:
        t._requires_grad, t._grad_fn, t._output_nr = True, ctx, nr


def _alias(t):
    with no_grad():
        return call(get("alias"), (t,))
