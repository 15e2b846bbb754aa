"""Selective activation checkpointing: a policy says, op by op, whether the non-reentrant checkpoint keeps an op's
output from the forward or recomputes it (torch.utils.checkpoint.create_selective_checkpoint_contexts).

`create_selective_checkpoint_contexts(policy)` returns the two context managers checkpoint's `context_fn` wants.
In the forward, a dispatch watcher (lantern/profiler/watchers.py) asks `policy(ctx, op, *args, **kwargs)` about each
op (an OpOverload such as `lantern.ops.aten.mm.default`) and keeps the outputs of those it must save, with the list
of tensors the op saved for backward. In the recomputation, a second watcher hands those outputs back instead of
running the op again, and passes the op's saved tensors to the recomputation's saved-tensor hook, since the op did
not run for autograd to save them (in torch the policy runs beneath autograd, which saves them itself).

>>> import functools
>>> import lantern
>>> from lantern.utils.checkpoint import checkpoint
>>> ran = []
>>> def policy(ctx, op, *args, **kwargs):
...     ran.append(op.name())
...     return CheckpointPolicy.MUST_SAVE if op == lantern.ops.aten.mm.default else CheckpointPolicy.PREFER_RECOMPUTE
>>> x = lantern.randn(3, 3, requires_grad=True)
>>> y = checkpoint(lambda t: t.mm(t).sin(), x, use_reentrant=False,
...                context_fn=functools.partial(create_selective_checkpoint_contexts, policy))
>>> y.sum().backward()
>>> ran                      # the policy sees the forward's ops only
['aten::mm', 'aten::sin']
"""
import enum
from collections import defaultdict

from ..autograd.saved_hooks import current_hooks, saved_tensors_hooks
from ..core.tensor_impl import TensorImpl
from ..ops.op_namespaces import OpOverload, OpOverloadPacket
from ..profiler.watchers import Watcher, install, remove

__all__ = ["CheckpointPolicy", "SelectiveCheckpointContext", "SAC_IGNORED_OPS", "create_selective_checkpoint_contexts"]


class CheckpointPolicy(enum.Enum):
    """What to do with an op's output: keep it from the forward ({MUST,PREFER}_SAVE), compute it again
    ({MUST,PREFER}_RECOMPUTE), or keep it on the CPU ({MUST,PREFER}_CPU_OFFLOAD, which on lantern's CPU tensors is
    recomputing). MUST_* asks other subsystems (a compiler) not to override the choice."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class SelectiveCheckpointContext:
    """What the policy learns besides the op and its arguments: the op's output (policies run in the forward only,
    so `is_recompute` is always False)."""

    def __init__(self, *, is_recompute, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


# The ops the policy never sees: torch leaves out the detach calls its checkpoint adds (and metadata queries);
# lantern's checkpoint adds no dispatched op, so there is nothing to leave out.
SAC_IGNORED_OPS = set()

_RECOMPUTE = object()
_CONSUMED = object()
_MISMATCH = ("This can happen if the operations in the checkpointed region are nondeterministic or depend on global "
             "state that changed between forward and backward.")


def _policy_from_bool(save):
    return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE


def _overload(op):
    """The OpOverload a program would name `op` by (lantern.ops.aten.mm.default)."""
    qualified, _, overload = op.name.partition(".")
    namespace, _, name = qualified.rpartition("::")
    return OpOverload(op, f"{namespace or 'aten'}.{name}.{overload or 'default'}")


def _tensors(value):
    return [t for t in (value if isinstance(value, (tuple, list)) else (value,)) if isinstance(t, TensorImpl)]


class _SavedEntry:
    """One saved op call: its detached outputs (with their versions, to catch mutation) and how to reproduce what
    it saved for backward: ('arg', i), ('out', j) or ('kept', tensor)."""

    def __init__(self, out, args, saved):
        self.requires_grad = (tuple(isinstance(o, TensorImpl) and o.requires_grad for o in out)
                              if isinstance(out, tuple) else isinstance(out, TensorImpl) and out.requires_grad)
        self.out = _detached(out)
        self.outputs = _tensors(self.out)
        self.versions = [t._version for t in self.outputs]
        inputs = [a for a in args if isinstance(a, TensorImpl)]
        self.saved = []
        for t in saved:
            position = next((i for i, a in enumerate(inputs) if a is t), None)
            if position is not None:
                self.saved.append(("arg", position))
                continue
            position = next((j for j, o in enumerate(_tensors(out)) if o is t), None)
            self.saved.append(("out", position) if position is not None else ("kept", t.detach()))

    def mutated(self):
        """Whether an in-place op changed a saved output since it was saved. Its version counter only grows then;
        it may also drop back to 0, when a composite *_like factory finishes the tensor its op filled
        (ops.factory.finish_like), which is no mutation."""
        return any(t._version > version for t, version in zip(self.outputs, self.versions))

    def replay_saves(self, args, outputs):
        """Give the recomputation's saved-tensor hook what the op saved, in the order it saved it (`outputs`: the
        results handed to the recomputation)."""
        inputs = [a for a in args if isinstance(a, TensorImpl)]
        pack = current_hooks()[0]
        for kind, what in self.saved:
            pack(inputs[what] if kind == "arg" else outputs[what] if kind == "out" else what)


class _TopLevelWatcher(Watcher):
    """A watcher that handles the ops the checkpointed function calls, counting each op's calls; the ops those
    dispatch in turn (inside a composite, or the watcher's own) pass through unseen."""

    def __init__(self, storage):
        self.storage = storage
        self.counter = defaultdict(int)
        self.depth = 0

    def around(self, op, args, run):
        if self.depth or op in SAC_IGNORED_OPS:
            return super().around(op, args, run)
        index = self.counter[op]
        self.counter[op] += 1
        return self.top_level(op, index, args, run)

    def nested(self, compute):
        """compute() with the ops it dispatches passing through this watcher."""
        self.depth += 1
        try:
            return compute()
        finally:
            self.depth -= 1


class _CachingWatcher(_TopLevelWatcher):
    """The forward: asks the policy about each op and keeps what it must save."""

    def __init__(self, policy_fn, storage):
        super().__init__(storage)
        self.policy_fn = policy_fn

    def top_level(self, op, index, args, run):
        saved = []
        outer = current_hooks()

        def pack(t):
            saved.append(t)
            return outer[0](t) if outer is not None else t

        with saved_tensors_hooks(pack, outer[1] if outer is not None else lambda packed: packed):
            out = self.nested(lambda: Watcher.around(self, op, args, run))
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out), _overload(op), *args)
        if isinstance(policy, bool):
            policy = _policy_from_bool(policy)
        saving = policy in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)
        self.storage[op][index] = _SavedEntry(out, args, saved) if saving else _RECOMPUTE
        return out

    def __enter__(self):
        install(self)

    def __exit__(self, *exc):
        remove(self)


def _detached(out):
    if isinstance(out, tuple):
        return tuple(_detached(o) for o in out)
    return out.detach() if isinstance(out, TensorImpl) else out


def _as_if_computed(out, requires_grad):
    """A saved output handed to the recomputation as the op's result: a non-leaf that requires grad where the
    forward's did, so that the ops after it record (and save for backward) as they did in the forward."""
    if isinstance(out, tuple):
        return tuple(_as_if_computed(o, r) for o, r in zip(out, requires_grad))
    if isinstance(out, TensorImpl) and requires_grad:
        return out.detach().requires_grad_().clone()
    return out


class _CachedWatcher(_TopLevelWatcher):
    """The recomputation: runs the ops to recompute and hands back the saved ones."""

    def __init__(self, storage, allow_cache_entry_mutation):
        super().__init__(storage)
        self.allow_mutation = allow_cache_entry_mutation

    def top_level(self, op, index, args, run):
        name = _overload(op)
        calls = self.storage.get(op)
        if calls is None:
            raise RuntimeError(f"{name} encountered during backward but not found in storage. {_MISMATCH}")
        entry = calls.get(index)
        if entry is None:
            raise RuntimeError(f"{name} invocation index {index} encountered during backward but not found in "
                               f"storage. {_MISMATCH}")
        if entry is _CONSUMED:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to backward once on any "
                               "region computed under selective activation checkpoint.")
        if entry is _RECOMPUTE:
            return self.nested(lambda: Watcher.around(self, op, args, run))
        calls[index] = _CONSUMED
        if not self.allow_mutation and entry.mutated():
            raise RuntimeError("Tensor cached during selective activation checkpoint has been mutated")
        out = self.nested(lambda: _as_if_computed(entry.out, entry.requires_grad))
        entry.replay_saves(args, _tensors(out))
        return out

    def __enter__(self):  # entered once per recomputation (a second backward pass recomputes again)
        self.counter.clear()
        install(self)

    def __exit__(self, *exc):
        remove(self)


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The (forward, recomputation) context managers of a selective checkpoint: pass
    `functools.partial(create_selective_checkpoint_contexts, policy)` as checkpoint's `context_fn`. `policy` is
    `policy(ctx, op, *args, **kwargs) -> CheckpointPolicy` (or a bool: save or not), or a list of OpOverloads to
    save (every other op is recomputed). A saved output that is modified in place before backward is an error
    unless `allow_cache_entry_mutation`."""
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, OpOverload):
                extra = ("Please update the OpOverloadPacket to a specific OpOverload.For example, if you have "
                         "`torch.ops.aten.mm`, change it to `torch.ops.aten.mm.default`."
                         if isinstance(op, OpOverloadPacket) else "")
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} of type {type(op)}. "
                                 f"{extra}")
        ops_to_save = list(policy_fn_or_list)

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops_to_save else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage = defaultdict(dict)
    return (_CachingWatcher(policy_fn, storage),
            _CachedWatcher(storage, allow_cache_entry_mutation))
