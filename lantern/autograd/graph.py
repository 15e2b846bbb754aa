"""The autograd graph: Nodes (backward functions) joined by edges `(node, input_nr)`, and saved tensors.

Every op that records builds one Node. `next_functions` are its edges toward the inputs: the node that made each
input (its grad_fn), an `AccumulateGrad` for a leaf, or None for an input that needs no gradient.

>>> x = lantern.ones(2, requires_grad=True)
>>> y = (x * 2).sum()
>>> y.grad_fn.name(), y.grad_fn.next_functions[0][0].name(), y.grad_fn.next_functions[0][0].next_functions
('SumBackward0', 'MulBackward0', ((<AccumulateGrad object>, 0), (None, 0)))
"""
import itertools
import re
import weakref

from ..core.dtype import is_differentiable
from ..core.dispatch_keys import DispatchKey
from ..core.state import tls
from ..core.tensor_impl import make_tensor
from ..ops import python_key
from .accumulate import accumulate_grad
from .forward_ad import carry_tangent
from .meta import Hooks, autograd_meta, current_grad_fn
from .saved_hooks import current_hooks, save_on_cpu, saved_tensors_hooks  # noqa: F401 (public here, as in torch)

_PYTHON_KEY = DispatchKey.Python  # read per call: an enum class attribute costs ~70 ns (see autograd/kernel.py)

_sequence = itertools.count()
# A leaf's AccumulateGrad runs as soon as it is ready, before any other ready node (PyTorch gives it the largest
# sequence number), so a leaf's .grad and its post-accumulate hooks come while backward still runs: what lets
# DistributedDataParallel start a bucket's all-reduce early. Among leaves the earlier-made runs first (a layer's
# weight before its bias, in the order torch's engine queues them).
_LEAF_SEQUENCE_BASE = 2 ** 62


class RemovableHandle:
    """Returned by every register_*hook; `.remove()` takes the hook out again."""

    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        # dicts keyed by the same id (a module's with_kwargs / always_call flags) that remove() also cleans
        extras = [extra_dict] if isinstance(extra_dict, dict) else (extra_dict or [])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self):
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            hooks = ref()
            if hooks is not None:
                hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class InputMeta:
    """What a gradient flowing into a node's input must look like: shape and dtype of the forward tensor."""

    __slots__ = ("shape", "dtype", "backend")

    def __init__(self, t):
        self.shape = t._size
        self.dtype = t.dtype
        self.backend = t._backend

    @property
    def device(self):
        return self.backend.device

    def __repr__(self):
        return f"InputMeta(shape={list(self.shape)}, dtype={self.dtype}, device={self.device})"


class Node:
    """A backward function. `apply(grads)` maps gradients of its outputs to gradients of its inputs."""

    __slots__ = ("next_functions", "_input_meta", "_seq", "_metadata", "__weakref__", "__dict__")
    returns_user_tensors = False  # may apply() return tensors someone else still holds? (user code may)
    # hooks, retain_grad's callbacks and anomaly mode's forward trace: class-level Nones until a node gets its own
    # (most nodes never do, and recording one then costs no assignments)
    _hooks = _pre_hooks = _retains = _trace = None

    def __init__(self, next_functions=(), input_meta=()):
        self.next_functions = next_functions
        self._input_meta = input_meta
        self._seq = next(_sequence)

    @property
    def metadata(self):
        """A dict for the user's own annotations (PyTorch's Node.metadata)."""
        try:
            return self._metadata
        except AttributeError:
            self._metadata = {}
            return self._metadata

    def name(self):
        return type(self).__name__

    def apply(self, grads):
        raise NotImplementedError

    def release_saved(self):
        """Drop what the node saved for backward (the engine calls it after the node ran, unless retain_graph)."""

    def __call__(self, *grads):
        return self.apply(grads)

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) runs after this node; a non-None return replaces grad_inputs."""
        if self._hooks is None:
            self._hooks = Hooks()
        handle = RemovableHandle(self._hooks)
        self._hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn):
        """fn(grad_outputs) runs before this node; a non-None return replaces grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = Hooks()
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    def __repr__(self):
        return f"<{self.name()} object>"


class AccumulateGrad(Node):
    """The sink for a leaf: adds the incoming gradient into `variable.grad`.

    The leaf keeps its AccumulateGrad for life and the node refers back to the leaf weakly (PyTorch does the
    reverse), so the node is not rebuilt for every graph and no reference cycle forms; a leaf that is gone has no
    .grad anyone could read, so its gradient is dropped."""

    __slots__ = ("_variable",)

    def __init__(self, variable):
        self.next_functions = ()
        self._input_meta = (InputMeta(variable),)
        self._seq = _LEAF_SEQUENCE_BASE - next(_sequence)
        self._variable = weakref.ref(variable)

    @property
    def variable(self):
        return self._variable()

    def apply(self, grads):
        variable = self._variable()
        if variable is not None:
            accumulate_grad(variable, grads[0], owned=False)
        return ()


def grad_accumulator(t):
    """The leaf's AccumulateGrad node (one per leaf, made on first use)."""
    meta = autograd_meta(t)
    node = meta.grad_accumulator
    if node is None:
        node = meta.grad_accumulator = AccumulateGrad(t)
    return node


def gradient_edge(t):
    """The edge a gradient for `t` flows along: (its grad_fn, output_nr), or (its AccumulateGrad, 0) for a leaf."""
    meta = t._autograd
    fn = t._grad_fn if meta is None or meta.attr_version is None else current_grad_fn(t)
    if fn is not None:
        return fn, t._output_nr
    if t._requires_grad:
        node = None if meta is None else meta.grad_accumulator
        return (grad_accumulator(t) if node is None else node), 0
    return None, 0


class SavedTensor:
    """A tensor kept for backward, with the version it had, so later in-place changes are caught.

    An op's own output is kept as a detached alias (saving it with its grad_fn would make a reference cycle);
    unpacking rebuilds an alias that points back at the node when double backward needs one.
    """

    __slots__ = ("tensor", "version", "is_output", "output_nr", "hooks_packed", "unpack_hook")

    def __init__(self, t, is_output=False, output_nr=0):
        if t._is_inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                "mode in computation tracked by autograd. To work around this, you can make a clone to get a normal "
                "tensor and use it in autograd, or use `lantern.no_grad()` instead of `lantern.inference_mode()`.")
        self.version = t._vc[0]
        self.is_output = is_output
        self.output_nr = output_nr
        if tls.saved_tensor_hooks:  # pack gets the tensor itself, outputs included, as in PyTorch
            pack, self.unpack_hook = current_hooks()
            self.tensor, self.hooks_packed = pack(t), True
            return
        if is_output:
            t = _alias(t)
        self.tensor, self.hooks_packed, self.unpack_hook = t, False, None

    def unpack(self, node):
        if self.hooks_packed:
            return self.unpack_hook(self.tensor)
        t = self.tensor
        if t._vc[0] != self.version:
            raise RuntimeError(_modified_message(t, self, node))
        if self.is_output and node is not None and t._grad_fn is None and is_differentiable(t.dtype):
            # an integer output (frexp's exponent) never carries a gradient
            out = _alias(t)
            out._requires_grad = True
            out._grad_fn = node
            out._output_nr = self.output_nr
            return out
        return t


def _alias(t):
    """A new tensor object over t's memory and metadata, without t's history (a wrapper subclass's keeps its class
    and what it wraps: lantern.ops.python_key.alias)."""
    if t._backend.key is _PYTHON_KEY:
        return python_key.alias(t)
    alias = make_tensor(t._storage, t._size, t._stride, t._offset, t.dtype, t._backend, t._nd, t._vc, t._base)
    if t._fw_grads:  # inside forward-AD levels a saved output keeps its tangents (forward-over-reverse)
        carry_tangent(t, alias)
    return alias


def _modified_message(t, saved, node):
    """PyTorch's wording: the tensor's type and shape, the node whose output it is (the op's name without
    'Backward0'), and the versions."""
    what = f"[torch.{t.dtype.legacy}Tensor [{', '.join(str(s) for s in t._size)}]]"
    creator = node if saved.is_output else current_grad_fn(t)
    origin = ""
    if creator is not None:
        nr = saved.output_nr if saved.is_output else t._output_nr
        label = getattr(creator, "qualified_name", None) or _BACKWARD_SUFFIX.sub("", creator.name())
        origin = f", which is output {nr} of {label},"
    return (f"one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"{what}{origin} is at version {t._vc[0]}; expected version {saved.version} instead. Hint: enable "
            "anomaly detection to find the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")


_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def freed_error():
    return RuntimeError(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have "
        "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
        "if you need to access saved tensors after calling backward.")
