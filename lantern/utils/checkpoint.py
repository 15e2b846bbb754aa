"""Activation checkpointing (torch.utils.checkpoint): keep less for backward, run the forward again to get it back.

`checkpoint(fn, *args, use_reentrant=False)` runs fn so that the tensors its ops save for backward are not kept:
saved-tensor hooks record only their position, and the first time backward needs one, fn runs again on the same
inputs (with the random state it first saw, so dropout draws the same mask) and the recomputed tensors are used.
`use_reentrant=True` is the older form: fn runs under no_grad inside one autograd Function, whose backward reruns
fn with grad enabled and backpropagates through that second graph. Without use_reentrant, torch warns and takes
the reentrant form; so does lantern.

>>> import lantern
>>> from lantern.utils.checkpoint import checkpoint
>>> x = lantern.tensor([0.5, 1.0], requires_grad=True)
>>> y = checkpoint(lambda t: (t.sin() * t).exp(), x, use_reentrant=False)
>>> y.sum().backward()
>>> x.grad.allclose(((x.sin() * x).exp() * (x.cos() * x + x.sin())).detach())
True
"""
import contextlib
import warnings

from ..autograd import backward, enable_grad
from ..autograd.function import Function
from ..autograd.saved_hooks import saved_tensors_hooks
from ..core.tensor_impl import TensorImpl
from ..random import fork_rng, get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "check_backward_validity",
           "detach_variable", "noop_context_fn"]


class CheckpointError(RuntimeError):
    """The recomputation did not save what the first forward saved (the function is not deterministic)."""


def noop_context_fn():
    """The default context_fn: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Detached copies of a tuple's tensors that keep their requires_grad (other entries pass through)."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    return tuple(x.detach().requires_grad_(x.requires_grad) if isinstance(x, TensorImpl) else x for x in inputs)


def check_backward_validity(inputs):
    if not any(isinstance(x, TensorImpl) and x.requires_grad for x in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """function(*args, **kwargs), with its saved tensors recomputed in backward instead of kept."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                      "the two variants.")
        use_reentrant = True
    preserve_rng_state = kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_by_recomputing(function, preserve_rng_state, context_fn, args, kwargs)


def _checkpoint_by_recomputing(function, preserve_rng_state, context_fn, args, kwargs):
    """The non-reentrant form: saved tensors become positions, filled by one recomputation on first use."""
    forward_context, recompute_context = context_fn()
    rng_state = get_rng_state() if preserve_rng_state else None
    saved_count = [0]
    recomputed = []

    def remember_position(tensor):
        saved_count[0] += 1
        return saved_count[0] - 1

    def recomputed_tensor(position):
        if not recomputed:
            with fork_rng(enabled=preserve_rng_state), enable_grad(), recompute_context, \
                    saved_tensors_hooks(lambda t: recomputed.append(t.detach()), _never_unpacked):
                if preserve_rng_state:
                    set_rng_state(rng_state)
                function(*args, **kwargs)
            if len(recomputed) != saved_count[0]:
                raise CheckpointError(f"torch.utils.checkpoint: the recomputation saved {len(recomputed)} tensors "
                                      f"where the forward saved {saved_count[0]}; the checkpointed function must "
                                      "do the same computation each time it runs")
        return recomputed[position]

    with saved_tensors_hooks(remember_position, recomputed_tensor), forward_context:
        return function(*args, **kwargs)


def _never_unpacked(packed):
    raise AssertionError("a checkpoint's recomputed graph is never backpropagated")


class CheckpointFunction(Function):
    """The reentrant form: forward without a graph, backward reruns the function with one and backpropagates."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function, ctx.preserve_rng_state = run_function, preserve_rng_state
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, TensorImpl)]
        ctx.other_args = [None if isinstance(a, TensorImpl) else a for a in args]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_positions))
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        args = list(ctx.other_args)
        for position, tensor in zip(ctx.tensor_positions, ctx.saved_tensors):
            args[position] = tensor
        inputs = detach_variable(tuple(args))
        with fork_rng(enabled=ctx.preserve_rng_state), enable_grad():
            if ctx.preserve_rng_state:
                set_rng_state(ctx.rng_state)
            outputs = ctx.run_function(*inputs)
        if isinstance(outputs, TensorImpl):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, TensorImpl) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, TensorImpl) else None for x in inputs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or list of modules) in `segments` chunks, checkpointing all but the last chunk."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                      "the two variants.")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = functions[start:end + 1]
        input = checkpoint(_run_in_order(chunk), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return _run_in_order(functions[end + 1:])(input)


def _run_in_order(functions):
    def forward(input):
        for function in functions:
            input = function(input)
        return input
    return forward
