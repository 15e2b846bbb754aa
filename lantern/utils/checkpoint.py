"""Activation checkpointing (torch.utils.checkpoint): keep less for backward, run the forward again to get it back.

`checkpoint(fn, *args, use_reentrant=False)` runs fn so that the tensors its ops save for backward are not kept:
saved-tensor hooks record only their position, and the first time a backward pass needs one, fn runs again on the
same inputs (with the random state it first saw, so dropout draws the same mask) and the recomputed tensors are
used, once per backward pass (or per GraphExecGroup), stopping as soon as they are all there (early stop); the
determinism checks and debug mode are torch's (docs/activation-checkpointing.md).
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

import lantern
from . import _pytree
from ..autograd import backward, enable_grad, is_grad_enabled
from ..autograd.engine import GraphTask, _running, queue_callback
from ..autograd.function import Function
from ..autograd.saved_hooks import saved_tensors_hooks
from ..core.tensor_impl import TensorImpl
from ..profiler.watchers import Watcher, install, remove
from ..random import fork_rng, get_rng_state, set_rng_state
from .checkpoint_selective import (  # noqa: F401  (torch.utils.checkpoint's names)
    SAC_IGNORED_OPS, CheckpointPolicy, SelectiveCheckpointContext, create_selective_checkpoint_contexts,
)
from ..core import user_warnings

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "check_backward_validity",
           "detach_variable", "get_device_states", "set_device_states", "noop_context_fn",
           "set_checkpoint_early_stop", "DefaultDeviceType", "set_checkpoint_debug_enabled", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts", "SAC_IGNORED_OPS", "GraphExecGroup"]

_checkpoint_debug_enabled = None
_checkpoint_early_stop = None

_DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Within the block, every checkpoint runs with `debug=enabled` whatever it was given (None: its own `debug`)."""
    global _checkpoint_debug_enabled
    previous, _checkpoint_debug_enabled = _checkpoint_debug_enabled, enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = previous


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Within the block, every non-reentrant checkpoint whose forward runs here stops its recomputation as soon as it
    has saved all the tensors the forward saved (True) or runs the whole function again (False)."""
    global _checkpoint_early_stop
    previous, _checkpoint_early_stop = _checkpoint_early_stop, enable
    try:
        yield
    finally:
        _checkpoint_early_stop = previous


class GraphExecGroup:
    """Backward passes run inside one `with GraphExecGroup():` block recompute each checkpointed region at most
    once, however many backward calls there are (they must need different saved tensors). Only the non-reentrant
    checkpoint is affected; groups do not nest."""

    _current = None

    def __enter__(self):
        if GraphExecGroup._current is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group "
                               f"{GraphExecGroup._current}")
        GraphExecGroup._current = self
        return self

    def __exit__(self, *exc):
        GraphExecGroup._current = None


class DefaultDeviceType:
    """The device type whose random state checkpoint saves and restores when no argument is on an accelerator:
    the current accelerator's, or "cpu" without one (set_device_type changes it)."""

    _default_device_type = None

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        if not DefaultDeviceType._default_device_type:
            accelerator = lantern.accelerator.current_accelerator(True)
            DefaultDeviceType._default_device_type = accelerator.type if accelerator else "cpu"
        return DefaultDeviceType._default_device_type


def _device_module(device_type):
    return getattr(lantern, device_type)


def _accelerator_tensors(args):
    tensors = []
    _pytree.tree_map(lambda a: tensors.append(a) if isinstance(a, TensorImpl) and a.device.type not in
                     ("cpu", "meta") else None, args)
    return tensors


def get_device_states(*args):
    """(device indices, random states) of the accelerator devices that tensors among `args` live on; CPU and meta
    tensors are left out (the CPU state is saved separately)."""
    tensors = _accelerator_tensors(args)
    if not tensors:
        return [], []
    device_types = {t.device.type for t in tensors}
    device_type = "cuda" if "cuda" in device_types else tensors[0].device.type
    module = _device_module(device_type)
    ids = [t.get_device() for t in tensors]
    states = []
    for index in ids:
        with module.device(index):
            states.append(module.get_rng_state())
    return ids, states


def set_device_states(devices, states, *, device_type=None):
    """Restore the random states `get_device_states` returned, device by device."""
    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    module = _device_module(device_type)
    for device, state in zip(devices, states):
        with module.device(device):
            module.set_rng_state(state)


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
        user_warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """function(*args, **kwargs), with its saved tensors recomputed in backward instead of kept."""
    if use_reentrant is None:
        user_warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
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
    return _checkpoint_by_recomputing(function, preserve_rng_state, context_fn, determinism_check, debug, early_stop,
                                      args, kwargs)


def _checkpoint_by_recomputing(function, preserve_rng_state, context_fn, determinism_check, debug, early_stop, args,
                               kwargs):
    """The non-reentrant form: each saved tensor becomes a slot, filled by one recomputation per backward pass."""
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, on_error = _debug_context_and_error()
    else:
        on_error = None
    if determinism_check not in _METADATA_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_METADATA_CHECKS)}, but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    rng_state = get_rng_state() if preserve_rng_state else None

    def recompute():
        with fork_rng(enabled=preserve_rng_state):
            if preserve_rng_state:
                set_rng_state(rng_state)
            with recompute_context:
                function(*args, **kwargs)

    if not is_grad_enabled():
        return function(*args, **kwargs)
    stops_early = _checkpoint_early_stop if _checkpoint_early_stop is not None else early_stop
    frame = _CheckpointFrame(recompute, stops_early, _METADATA_CHECKS[determinism_check], on_error)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        out = function(*args, **kwargs)
    frame.forward_completed = True
    return out


class _OpLog(Watcher):
    """A dispatch watcher that writes down each operator call: its name, input shapes and dtype."""

    def __init__(self):
        self.lines = []

    def around(self, op, args, run):
        shapes = ", ".join(f"{a.dtype.name}{list(a.shape)}" for a in args if isinstance(a, TensorImpl))
        self.lines.append(f"{op.name}({shapes})")
        return super().around(op, args, run)

    @contextlib.contextmanager
    def recording(self):
        self.lines = []
        install(self)
        try:
            yield
        finally:
            remove(self)


def _debug_context_and_error():
    """debug=True: a context_fn that logs the operators of the forward and of the recomputation, and the handler
    that adds both logs to a CheckpointError."""
    forward_log, recompute_log = _OpLog(), _OpLog()

    def context_fn():
        return forward_log.recording(), recompute_log.recording()

    def on_error(exc):
        raise CheckpointError(f"{exc}\nAn error happened while unpacking tensors; these are the operators that ran, "
                              "because you passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.\n"
                              "Operations executed during the original forward:\n" + "\n".join(forward_log.lines)
                              + "\nOperations executed during recomputation:\n" + "\n".join(recompute_log.lines)
                              + "\n ERROR: Detected non-determinism while running activation checkpointing") from exc

    return context_fn, on_error


def _shape_dtype_device(t):
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


# determinism_check: what is compared between a tensor the forward saved and its recomputed value
_METADATA_CHECKS = {"default": _shape_dtype_device, "none": lambda t: None}


class _StopRecomputation(Exception):
    """Raised inside a recomputation once it has saved every tensor the forward saved (early stop)."""


class _CheckpointFrame:
    """One checkpointed call: the metadata of what its forward saved (`slots`), and the recomputed tensors of the
    backward pass now running. A backward pass (a graph task, or every pass inside one GraphExecGroup) recomputes
    once, on its first unpack; another pass (retain_graph) recomputes again, as torch's checkpoint does."""

    def __init__(self, recompute, early_stop, metadata_fn, on_error):
        self.recompute, self.early_stop, self.metadata_fn, self.on_error = recompute, early_stop, metadata_fn, on_error
        self.slots = []
        self.forward_completed = False
        self.owner = None       # the graph task or GraphExecGroup the recomputed tensors belong to
        self.recomputed = []

    def pack(self, tensor):
        self.slots.append(self.metadata_fn(tensor))
        return len(self.slots) - 1

    def unpack(self, slot):
        try:
            return self._recomputed_for_this_pass()[slot]
        except CheckpointError as exc:
            if self.on_error is None:
                raise
            self.on_error(exc)

    def _recomputed_for_this_pass(self):
        owner = _current_pass()
        if owner is None or owner is not self.owner:
            self.recomputed = self._run_recomputation()
            self._check(self.recomputed)
            self.owner = owner
            if isinstance(owner, GraphTask):
                queue_callback(self._forget)
        return self.recomputed

    def _forget(self):
        self.owner, self.recomputed = None, []

    def _run_recomputation(self):
        recomputed = []

        def keep(tensor):
            if len(recomputed) == len(self.slots) and self.forward_completed:
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation than "
                                      "during the original forward pass.\n" + _DEBUG_TIP)
            recomputed.append(tensor.detach())
            if self.early_stop and len(recomputed) == len(self.slots):
                raise _StopRecomputation
            return None

        try:
            with saved_tensors_hooks(keep, _never_unpacked), enable_grad():
                self.recompute()
        except _StopRecomputation:
            pass
        return recomputed

    def _check(self, recomputed):
        if len(recomputed) != len(self.slots):
            raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the original "
                                  f"forward and recomputation.\nNumber of tensors saved during forward: "
                                  f"{len(self.slots)}\nNumber of tensors saved during recomputation: "
                                  f"{len(recomputed)}.\n" + _DEBUG_TIP)
        different = ""
        for i, (saved, tensor) in enumerate(zip(self.slots, recomputed)):
            if saved != self.metadata_fn(tensor):
                different += (f"tensor at position {i}:\nsaved metadata: {saved}\n"
                              f"recomputed metadata: {self.metadata_fn(tensor)}\n")
        if different:
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have different "
                                  f"metadata than during the forward pass.\n{different}.\n" + _DEBUG_TIP)


def _current_pass():
    """What one recomputation serves: the GraphExecGroup open now, else the backward pass running (None: neither,
    so every unpack recomputes)."""
    if GraphExecGroup._current is not None:
        return GraphExecGroup._current
    return _running.tasks[-1] if _running.tasks else None


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
        user_warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
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
