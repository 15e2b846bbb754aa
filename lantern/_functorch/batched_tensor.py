"""BatchedTensor: what a function under vmap sees, one example of a batch whose batch dimension it cannot see.

A BatchedTensor wraps a "physical" tensor holding the whole batch in one dimension (`bdim`) and shows the rest:
its shape, strides and dtype are one example's. It belongs to one vmap `level` (nested vmaps wrap a BatchedTensor
of an outer level inside one of an inner level). Its backend has a dispatch key of its own, FuncTorchBatched, so
every op the dispatcher runs on it reaches `batched_kernel`: the op record's batching rule (`op.batch_rule`,
lantern/_functorch/batching_rules.py) computes on the physical tensors, or, for an op without a rule, the
per-example fallback runs the op once per example and stacks the results, with torch's performance warning.

The layer sits above autograd, as torch's FuncTorchBatched key does: a BatchedTensor never requires grad itself;
the ops a rule runs on the physical tensors are what autograd records (lantern.autograd.kernel hands batched calls
straight down).

>>> import lantern
>>> from lantern._functorch import batched_tensor as bt
>>> with bt.vmap_level(3) as level:
...     x = bt.add_batch_dim(lantern.arange(6.).reshape(3, 2), 0, level)
...     x.shape, bt.unwrap(x * 10, level)
(lantern.Size([2]), (tensor([[ 0., 10.],
        [20., 30.],
        [40., 50.]]), 0))
"""
import contextlib
import threading

from ..core import user_warnings
from ..core.dispatch_keys import DispatchKey
from .._tensor import Tensor
from ..core.tensor_impl import TensorImpl
from ..core.torch_function import _disabled_torch_function_impl
from ..ops import dispatcher, registry
from ..ops.op_kinds import AliasKind
from ..ops.python_key import _tensor_arguments
from ..core.layout import strided
from ..autograd.forward_ad import set_tangent
from ..autograd.forward_kernel import suspended
import lantern

_DATA_DEPENDENT = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We "
                   "don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")


class BatchedBackend:
    """The backend of BatchedTensors on one device: its key's kernel is `batched_kernel`; it has no memory (the
    physical tensor has), and reading values out of one example (item(), bool(), numpy()) is data-dependent
    control flow, which vmap refuses with torch's message."""

    key = DispatchKey.FuncTorchBatched
    xp = None  # derivative fast paths read arrays only where a backend has an array library

    def __init__(self, device):
        self.device = device
        self.layout = _strided()

    def array(self, t):
        raise RuntimeError(_DATA_DEPENDENT)

    array_or_none = host_array = array

    def empty(self, shape, dtype):
        """A new tensor, not batched, on this device (code that makes a scalar from a tensor's backend, as
        t[i] = 0 does, gets it from the backend of a batched t too)."""
        return lantern.empty(shape, dtype=dtype, device=self.device)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"vmap: a BatchedTensor's backend has no {name}(): lantern computes a batched tensor's "
                           "ops through batching rules on the tensor it wraps")

    def explain(self, op, args):
        """Why a call's key set has FuncTorchBatched, for the dispatch trace: its first batched input."""
        tensors = [args[i] for i in op.tensor_positions] + [t for i in op.list_positions for t in args[i]]
        i, t = next((i, t) for i, t in enumerate(tensors) if isinstance(t, BatchedTensor))
        return f"input {i} is batched (vmap level {t._level}, batch dim {t._bdim} of {t._value.shape[t._bdim]})"

    def __repr__(self):
        return f"<lantern FuncTorchBatched backend on {self.device}>"


def _strided():
    return strided


_BACKENDS = {}


def _backend(device):
    return _BACKENDS.setdefault(device, BatchedBackend(device))


class BatchedTensor(Tensor):
    """One example of `value` along `bdim`, at vmap `level` (made by add_batch_dim, never directly)."""

    __slots__ = ()
    # ops reach a BatchedTensor through its dispatch key, not through __torch_function__ (which would keep the
    # subclass on results made outside the dispatcher)
    __torch_function__ = _disabled_torch_function_impl

    @property
    def _fw_grad(self):
        """A forward-mode tangent lives on the physical tensor (so that the rules' ops carry it): seen from here,
        batched like the value."""
        tangent = self._value._fw_grad
        return None if tangent is None else add_batch_dim(tangent, self._bdim, self._level)

    @_fw_grad.setter
    def _fw_grad(self, tangent):
        if tangent is not None:
            value, bdim = unwrap(tangent, self._level)
            tangent = (tangent.unsqueeze(self._bdim).expand(self._value.shape) if bdim is None
                       else value.movedim(bdim, self._bdim))
        self._value._fw_grad = tangent

    # new_* factories of a BatchedTensor make batched tensors, as torch's batching rules for them do: every
    # example gets its own (code that fills one, make_dual laying a tangent out, writes the batch into it)
    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new("new_empty", _sizes(size), dtype=dtype, device=device)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new("new_zeros", _sizes(size), dtype=dtype, device=device)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new("new_ones", _sizes(size), dtype=dtype, device=device)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        return self._new("new_full", tuple(size), fill_value, dtype=dtype, device=device)

    def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
        value = self._value.new_empty_strided((self._batch_size(), *size), (example_span(size, stride), *stride),
                                              dtype=dtype, device=device)
        return add_batch_dim(value, 0, self._level)

    def _new(self, factory, size, *args, **kwargs):
        value = getattr(self._value, factory)((self._batch_size(), *size), *args, **kwargs)
        return add_batch_dim(value, 0, self._level)

    def _batch_size(self):
        return self._value.shape[self._bdim]

    def resize_(self, *size, memory_format=None):
        """Each example resized: the physical tensor (batch dimension first) resized to the batch of them."""
        if self._bdim != 0:
            raise RuntimeError("vmap: resize_ of a tensor batched along a dim other than its first is not supported "
                               "by lantern")
        self._value.resize_(self._value.shape[0], *_sizes(size))
        value = self._value
        self._storage, self._size, self._stride, self._offset = value._storage, value._size[1:], value._stride[1:], \
            value._offset
        return self

    def detach(self):
        return add_batch_dim(self._value.detach(), self._bdim, self._level)

    def item(self):
        raise RuntimeError("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling "
                           ".item() on a Tensor, please try to rewrite what you're doing with other operations. If "
                           "error is occurring somewhere inside PyTorch internals, please file a bug report.")

    def __repr__(self):
        value = repr(self._value).replace("\n", "\n    ")
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n    {value}\n)"

    __str__ = __repr__


def example_span(size, stride):
    """How many elements of memory one example of this size and stride reaches over (the batch dimension's stride
    that keeps examples apart)."""
    return 1 + sum((n - 1) * abs(s) for n, s in zip(size, stride) if n > 0)


def _sizes(size):
    """new_zeros(2, 3) and new_zeros((2, 3)) alike: the sizes as a tuple."""
    return tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else tuple(size)


def add_batch_dim(value, bdim, level):
    """`value` seen without its dimension `bdim`, at vmap `level`. Levels nest outermost inside: a BatchedTensor of
    an inner (higher) level given here keeps its place outside, and the new level goes in beneath it."""
    bdim = bdim % value.dim()
    if isinstance(value, BatchedTensor) and value._level > level:
        inner_bdim = bdim if bdim < value._bdim else bdim + 1   # value's logical dim, in its physical tensor
        below = add_batch_dim(value._value, inner_bdim, level)
        return add_batch_dim(below, value._bdim if value._bdim < inner_bdim else value._bdim - 1, value._level)
    t = object.__new__(BatchedTensor)
    t._storage = value._storage
    t._size = value._size[:bdim] + value._size[bdim + 1:]
    t._stride = value._stride[:bdim] + value._stride[bdim + 1:]
    t._offset = value._offset
    t.dtype = value.dtype
    t._backend = _backend(value._backend.device)
    t._nd, t._nd_gen, t._vc, t._base = None, 0, value._vc, None
    t._value, t._bdim, t._level = value, bdim, level
    return t


def is_batched(x, level=None):
    """Whether x is a BatchedTensor (batched at `level`, if given)."""
    return isinstance(x, BatchedTensor) and (level is None or unwrap(x, level)[1] is not None)


def unwrap(x, level):
    """(x without its `level` batch dimension, that dimension): for a BatchedTensor of `level`, its physical tensor;
    for one of a higher level batched at `level` inside, the higher levels kept outside, over the tensor without
    `level`. (x, None) when x is not batched at `level`."""
    if not isinstance(x, BatchedTensor) or x._level < level:
        return x, None
    if x._level == level:
        return x._value, x._bdim
    inner, inner_bdim = unwrap(x._value, level)   # x's value with the `level` dim at inner_bdim
    if inner_bdim is None:
        return x, None
    outer_bdim = x._bdim if x._bdim < inner_bdim else x._bdim + 1   # x's own dim, counted in inner
    return add_batch_dim(inner, outer_bdim, x._level), inner_bdim if inner_bdim < outer_bdim else inner_bdim - 1


def to_front(x, level):
    """x's physical tensor with its `level` batch dimension first, or None when x is not batched at `level`."""
    value, bdim = unwrap(x, level)
    if bdim is None:
        return None
    return value if bdim == 0 else value.movedim(bdim, 0)


def wrap_front(value, level):
    """The physical result `value` (batch dimension first) as a BatchedTensor of `level`; tuples and lists of
    them item by item; anything else as it is."""
    if isinstance(value, TensorImpl):
        return add_batch_dim(value, 0, level)
    if isinstance(value, (tuple, list)):
        parts = [wrap_front(v, level) for v in value]
        return type(value)(*parts) if hasattr(value, "_fields") else type(value)(parts)
    return value


# ---- the vmap levels of this thread ----------------------------------------------------------------------------
class _Levels(threading.local):
    def __init__(self):
        self.stack = []   # [Level], outermost first
        self.count = 0    # levels made so far on this thread (a level number is never reused)


_levels = _Levels()


class Level:
    """One vmap call in progress: its number, its batch size and its randomness mode."""

    __slots__ = ("number", "batch_size", "randomness")

    def __init__(self, number, batch_size, randomness):
        self.number, self.batch_size, self.randomness = number, batch_size, randomness

    def __index__(self):
        return self.number

    def __eq__(self, other):
        return int(self) == int(other)

    def __hash__(self):
        return self.number


@contextlib.contextmanager
def vmap_level(batch_size, randomness="error"):
    """A new vmap level for the body of a `with`: yields its number."""
    _levels.count += 1
    level = Level(_levels.count, batch_size, randomness)
    _levels.stack.append(level)
    try:
        yield level.number
    finally:
        _levels.stack.pop()


def active_levels():
    """The vmap levels in progress on this thread, outermost first."""
    return tuple(_levels.stack)


# ---- the kernel -------------------------------------------------------------------------------------------------
def current_level(op, args):
    """The innermost vmap level among a call's BatchedTensors (the one this call unwraps)."""
    return max(a._level for a in _tensor_arguments(op, args) if isinstance(a, BatchedTensor))


def batched_kernel(op, args):
    """The FuncTorchBatched kernel of every op: its batching rule, or the per-example fallback where the op has
    none (or its rule declines these arguments by returning NotImplemented)."""
    level = current_level(op, args)
    args = _duals_lifted(op, args, level)
    rule = op.batch_rule
    if rule is not None:
        result = rule(op, args, level)
        if result is not NotImplemented:
            return result
    return per_example_fallback(op, args, level)


def _duals_lifted(op, args, level):
    """The arguments with each dual tensor that is not batched at `level` but whose tangent is (a jvp inside this
    vmap whose tangents vary by example, beside a batched input) made batched at `level`: its value expanded over
    the batch, its tangent's examples each with their own, so the rule's ops on physical tensors carry them."""
    lifted = None
    for i in op.tensor_positions:
        a = args[i]
        if isinstance(a, TensorImpl) and not is_batched(a, level) and is_batched(a._fw_grad, level):
            lifted = lifted or list(args)
            lifted[i] = _lifted(a, level)
    return args if lifted is None else tuple(lifted)


def _lifted(dual, level):
    tangent = dual._fw_grad
    size = unwrap(tangent, level)[0].shape[unwrap(tangent, level)[1]]
    with suspended():
        value = dual.expand(size, *dual.shape)
    batched = add_batch_dim(value, 0, level)
    set_tangent(batched, tangent)
    return batched


FALLBACK_WARNING = ("There is a performance drop because we have not yet implemented the batching rule for "
                    "{name}. Please file us an issue on GitHub so that we can prioritize its implementation.")


def written_position(op):
    return dispatcher.written_argument(op)


def refuse_unbatched_write(op, args, level):
    """An in-place op writing into a tensor that is not batched at `level` while another argument is:
    the batch's result would not fit in it. torch's error names the shapes for an elementwise op, and says why
    for the others (an index, a mask or a dim says where to write, not a shape to broadcast)."""
    written = written_position(op)
    if written is None or is_batched(args[written], level):
        return
    tensors = [args[i] for i in op.tensor_positions if isinstance(args[i], TensorImpl)]
    tensors += [t for i in op.list_positions for t in args[i] if t is not None]  # index_put's None: a whole dim
    batched = [t for t in tensors if is_batched(t, level)]
    if not batched:
        return
    if not op.pointwise:
        raise RuntimeError(not_possible(op))
    size = batched[0]._value.shape[batched[0]._bdim]
    shape = [size, *lantern.broadcast_shapes(*(t.shape for t in tensors))]
    raise RuntimeError(f"output with shape {list(args[written].shape)} doesn't match the broadcast shape {shape}")


def not_possible(op):
    """torch's refusal of an in-place op into a tensor not batched beside batched arguments."""
    name = op.schema.name
    return (f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args "
            "that has more elements than `self`. This happened due to `other` being vmapped over but `self` not "
            f"being vmapped over in a vmap. Please try to use out-of-place operators instead of {name}. If said "
            "operator is being called inside the PyTorch framework, please file a bug report instead.")


def per_example_fallback(op, args, level):
    """Run `op` once per example (each batched argument's slice along its batch dimension) and stack the results
    into a batched result; an in-place op writes each example's slice of its target instead. An out= variant
    refuses, as torch's fallback does."""
    if op.schema.alias is AliasKind.OUT:
        raise RuntimeError(f"Batching rule not implemented for aten::{op.name}; the fallback path doesn't work on "
                           "out= or view ops.")
    refuse_unbatched_write(op, args, level)
    name = op.name if "::" in op.name else f"aten::{op.name}"   # a library op's name has its namespace
    user_warnings.warn(FALLBACK_WARNING.format(name=name), UserWarning, stacklevel=2)
    size = next(a._value.shape[a._bdim] for a in _tensor_arguments(op, args) if is_batched(a, level))
    results = [dispatcher.call(op, _example(op, args, level, i)) for i in range(size)]
    written = written_position(op)
    if written is not None:
        return args[written]
    return _stacked(op, results, level)


def _example(op, args, level, i):
    """The arguments of example i: each tensor batched at `level` replaced by its slice."""
    args = list(args)
    for p in op.tensor_positions:
        value, bdim = unwrap(args[p], level)
        if bdim is not None:
            args[p] = value.select(bdim, i)
    for p in op.list_positions:
        args[p] = [value.select(bdim, i) if bdim is not None else value
                   for value, bdim in (unwrap(t, level) for t in args[p])]
    return tuple(args)


def _stacked(op, results, level):
    first = results[0]
    if isinstance(first, TensorImpl):
        return add_batch_dim(lantern.stack(results), 0, level)
    if isinstance(first, (tuple, list)) and all(isinstance(r, TensorImpl) for r in first):
        parts = [add_batch_dim(lantern.stack([r[k] for r in results]), 0, level) for k in range(len(first))]
        return type(first)(parts) if not hasattr(first, "_fields") else type(first)(*parts)
    if first is None or op.schema.alias is AliasKind.INPLACE:
        return first
    raise RuntimeError(_DATA_DEPENDENT)


registry.on_register(lambda op: op.kernels.setdefault(DispatchKey.FuncTorchBatched, batched_kernel))
