"""lantern.autograd: define-by-run reverse-mode differentiation.

Importing this layer installs the Autograd dispatch key's kernel; from then on every op whose input requires grad
records a graph node (see kernel.py), and `backward` / `grad` run the engine (engine.py) over that graph.

>>> x = lantern.tensor([1., 2., 3.], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad.tolist()
[2.0, 4.0, 6.0]
"""

from ..core import dtype as dt
from ..core.dispatch_keys import DispatchKey
from ..core.size import Size
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..ops import dispatcher
from ..ops import python_key
from ..ops.derivative_helpers import zeros_like
from . import engine, graph
from .accumulate import accumulate_grad
from .anomaly import (  # noqa: F401
    detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly,
)
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401
from . import functional  # noqa: F401
from .grad_mode import (  # noqa: F401
    enable_grad, enforce_grad_layout_policy, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled, set_multithreading_enabled,
)
from .kernel import autograd_entry
from .variable import Variable  # noqa: F401
from ..core.reference import on_switch
from ..core import user_warnings

dispatcher.set_autograd_kernel(autograd_entry())
from . import forward_ad  # noqa: E402,F401
from .forward_kernel import forward_ad_kernel  # noqa: E402
dispatcher.set_forward_ad_kernel(forward_ad_kernel)
on_switch(lambda: dispatcher.set_autograd_kernel(autograd_entry()))
_PYTHON_KEY = DispatchKey.Python  # read per call: an enum class attribute costs ~70 ns (see autograd/kernel.py)


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, TensorImpl):
        return (x,)
    return tuple(x)


def _ones_seed(o):
    """The implicit gradient of a scalar output: a one of its dtype."""
    if o._requires_grad:
        if o._size and o.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if o.dtype.category != dt.FLOATING:
            raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {o.dtype}")
    backend = o._backend
    if backend.key is _PYTHON_KEY:  # a wrapper subclass holds no memory to fill: its handler makes ones
        return python_key.ones_like(o)
    g = backend.empty(o._size, o.dtype)
    nd = g._nd
    if nd is not None and not o._size:  # a 0-d array (a loss): one item to set
        nd[()] = 1
    else:
        backend.fill(g, 1)
    return g


def _make_grads(outputs, grads):
    """Seed gradients: ones for scalar outputs when none is given; shape checks otherwise."""
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            g = _ones_seed(o)
        elif isinstance(g, TensorImpl):
            if g._size != o._size:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g._size)} and "
                                   f"output[{i}] has a shape of {Size(o._size)}.")
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate d(tensors)/d(leaf) into every leaf's .grad (or only into `inputs`)."""
    if (grad_tensors is None and grad_variables is None and inputs is None and not create_graph
            and isinstance(tensors, TensorImpl)):  # the common `loss.backward()`: straight to the engine
        engine.run_backward((tensors,), (_ones_seed(tensors),), bool(retain_graph), False)
        return
    tensors = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors if grad_tensors is not None else grad_variables) or (None,) * len(tensors)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:
            if not t._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        user_warnings.warn("Using backward() with create_graph=True will create a reference cycle between the parameter "
                      "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
                      "creating the graph to avoid this. If you have to use this function, make sure to reset the "
                      ".grad fields of your parameters to None after use to break the cycle and avoid the leak.",
                      UserWarning, stacklevel=2)
    seeds = _make_grads(tensors, grads)
    captured = engine.run_backward(tensors, seeds, retain_graph, create_graph, inputs=inputs, allow_unused=True)
    if inputs is not None:
        _accumulate_into_non_leaves(inputs, captured, create_graph)


def _accumulate_into_non_leaves(inputs, captured, create_graph):
    """backward(inputs=...) fills in .grad of the non-leaf inputs too (the leaves accumulated in the engine)."""
    prev = tls.grad_enabled
    tls.grad_enabled = create_graph
    try:
        for t, g in zip(inputs, captured):
            if g is not None and t._grad_fn is not None:
                accumulate_grad(t, g, owned=False)
    finally:
        tls.grad_enabled = prev


_vmap = []  # [lantern.func.vmap], installed by lantern/func.py: vmap sits in a layer above autograd


def install_vmap(vmap):
    """Give grad(is_grads_batched=True) the vmap it maps the backward pass with (called by lantern.func)."""
    _vmap[:] = [vmap]


def _check_batched_grads(outputs, grads):
    """is_grads_batched: each grad_output's dims after the first (the batch) must be its output's shape."""
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if isinstance(g, TensorImpl) and (not g._size or g._size[1:] != o._size):
            raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                               "the batch dimension. The sizes of the remaining dimensions are expected to match the "
                               f"shape of corresponding output, but a mismatch was detected: grad_output[{i}] has a "
                               f"shape of {Size(g._size[1:])} and output[{i}] has a shape of {Size(o._size)}. If you "
                               "only want some tensors in `grad_output` to be considered batched, consider using "
                               "vmap.")


def _batched_backward(outputs, seeds, retain_graph, create_graph, inputs, allow_unused):
    """One backward pass for a batch of seeds (dim 0 of each): the engine run under vmap over the seeds, as torch
    does, so each gradient gets the batch dim in front. A gradient that does not exist stays None."""
    found = []  # which inputs got a gradient (vmap returns tensors only)

    def vjp(*batch_of_seeds):
        grads = engine.run_backward(outputs, batch_of_seeds, retain_graph, create_graph, inputs=inputs,
                                    accumulate=False, allow_unused=allow_unused)
        found[:] = [g is not None for g in grads]
        return tuple(g for g in grads if g is not None)
    batched = iter(_vmap[0](vjp, in_dims=tuple(None if s is None else 0 for s in seeds))(*seeds))
    return tuple(next(batched) if f else None for f in found)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, returned (no .grad is touched). is_grads_batched: dim 0 of
    each grad_output is a batch of seeds, and each gradient gets that batch dim (one backward pass, under vmap)."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    grads = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        _check_batched_grads(outputs, grads)
        seeds = _make_grads(outputs, [g if g is None else g[0] for g in grads])
        seeds = [s if g is None else g for s, g in zip(seeds, grads)]
        result = _batched_backward(outputs, seeds, retain_graph, create_graph, inputs, allow_unused)
    else:
        result = engine.run_backward(outputs, _make_grads(outputs, grads), retain_graph, create_graph, inputs=inputs,
                                     accumulate=False, allow_unused=allow_unused)
    if materialize_grads:
        result = tuple(zeros_like(t) if g is None else g for t, g in zip(inputs, result))
    return result
