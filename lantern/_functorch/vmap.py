"""vmap: run a function written for one example over a whole batch, through batching rules.

vmap(f, in_dims, out_dims)(*args) makes a new vmap level, wraps each input tensor with an in_dim as a
BatchedTensor of that level (lantern/_functorch/batched_tensor.py), calls f, and turns each output back into an
ordinary tensor with the batch dimension at its out_dim. Inside f every op on a BatchedTensor reaches the
FuncTorchBatched key, whose kernel runs the op record's batching rule (lantern/_functorch/batching_rules.py).
Random ops inside vmap follow `randomness`: 'error' refuses them, 'same' draws once for the whole batch,
'different' draws for each example.

>>> import lantern
>>> from lantern.func import vmap
>>> vmap(lambda row: row.sum() * 2)(lantern.tensor([[1., 2.], [3., 4.]]))
tensor([ 6., 14.])
>>> vmap(lantern.dot, in_dims=(0, None))(lantern.ones(3, 2), lantern.tensor([1., 2.]))
tensor([3., 3., 3.])
"""
import functools

from ..core.tensor_impl import TensorImpl
from ..profiler.watchers import Watcher, install, remove
from ..utils._pytree import tree_flatten, tree_unflatten
from . import batching_rules  # noqa: F401  (installs the rules in the op records)
from .batching_rules_indexing import COMPOSITE_INPUTS
from .batched_tensor import active_levels, add_batch_dim, is_batched, unwrap, vmap_level
import lantern
from ..ops import dispatcher

RANDOMNESS = ("error", "different", "same")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.func.vmap: `func` mapped over the in_dims of its inputs, results stacked along out_dims."""
    if randomness not in RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def vmapped(*args, **kwargs):
        name = _name(func)
        _check_in_dims(name, in_dims, args)
        flat_args, args_spec = tree_flatten(args)
        flat_dims = _broadcast_in_dims(name, in_dims, args, args_spec)
        size = _batch_size(name, in_dims, flat_args, flat_dims)
        if chunk_size is None or chunk_size >= size:
            return _vmap_once(func, name, flat_args, flat_dims, args_spec, size, out_dims, randomness, kwargs)
        return _chunked(func, name, flat_args, flat_dims, args_spec, size, out_dims, randomness, kwargs, chunk_size)

    return vmapped


def _name(func):
    return getattr(func, "__name__", type(func).__name__)


def _check_in_dims(name, in_dims, args):
    if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")


def _broadcast_in_dims(name, in_dims, args, args_spec):
    """One in_dim per leaf of args: in_dims is a prefix of args' structure (an int or None covers a subtree)."""
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * args_spec.num_leaves
    if len(in_dims) != len(args):
        raise _structure_mismatch(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)", "in_dims", in_dims, "inputs",
                                  args_spec)
    dims = []
    for arg, dim in zip(args, in_dims):
        leaves, spec = tree_flatten(arg)
        if isinstance(dim, int) or dim is None:
            dims += [dim] * len(leaves)
        else:
            dims += _broadcast_in_dims(name, dim, tuple(arg), tree_flatten(tuple(arg))[1])
    return dims


def _structure_mismatch(call, dims_name, dims, what, spec):
    """torch's error for in_dims or out_dims whose structure does not match the inputs' or outputs'."""
    return ValueError(f"{call}: {dims_name} is not compatible with the structure of `{what}`. {dims_name} has "
                      f"structure {tree_flatten(dims)[1]} but {what} has structure {spec}.")


def _batch_size(name, in_dims, flat_args, flat_dims):
    sizes = []
    for arg, dim in zip(flat_args, flat_dims):
        if dim is None:
            continue
        if not isinstance(arg, TensorImpl):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input but the "
                             f"input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use None "
                             "as the respective in_dim")
        if not -arg.dim() <= dim < arg.dim():
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for some input, but "
                             f"that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        sizes.append(arg.shape[dim])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _vmap_once(func, name, flat_args, flat_dims, args_spec, size, out_dims, randomness, kwargs):
    with vmap_level(size, randomness) as level:
        watcher = install(VmapWatcher())
        try:
            batched = [a if d is None else add_batch_dim(a, d, level) for a, d in zip(flat_args, flat_dims)]
            output = func(*tree_unflatten(batched, args_spec), **kwargs)
        finally:
            remove(watcher)
        return _unbatched_outputs(name, output, out_dims, level, size)


def _chunked(func, name, flat_args, flat_dims, args_spec, size, out_dims, randomness, kwargs, chunk_size):
    """vmap over chunks of at most chunk_size examples, the chunks' outputs concatenated along out_dims."""
    starts = range(0, size, chunk_size)
    outputs = []
    for start in starts:
        length = min(chunk_size, size - start)
        chunk = [a if d is None else a.narrow(d, start, length) for a, d in zip(flat_args, flat_dims)]
        outputs.append(_vmap_once(func, name, chunk, flat_dims, args_spec, length, out_dims, randomness, kwargs))
    flat_outputs = [tree_flatten(o)[0] for o in outputs]
    spec = tree_flatten(outputs[0])[1]
    dims = _out_dims_per_leaf(name, out_dims, outputs[0], spec)
    joined = [lantern.cat([o[k] for o in flat_outputs], dim=dims[k]) if dims[k] is not None else flat_outputs[0][k]
              for k in range(spec.num_leaves)]
    return tree_unflatten(joined, spec)


def _out_dims_per_leaf(name, out_dims, output, spec):
    if isinstance(out_dims, int) or out_dims is None:
        return [out_dims] * spec.num_leaves
    if not isinstance(output, (tuple, list)) or len(out_dims) != len(output):
        raise _structure_mismatch(f"vmap({name}, ..., out_dims={out_dims})(<inputs>)", "out_dims", out_dims,
                                  "outputs", spec)
    dims = []
    for item, dim in zip(output, out_dims):
        leaves, item_spec = tree_flatten(item)
        dims += _out_dims_per_leaf(name, dim, item, item_spec) if isinstance(dim, tuple) else [dim] * len(leaves)
    return dims


def _unbatched_outputs(name, output, out_dims, level, size):
    """Each output with its batch dimension at its out_dim (an output that did not depend on the batch is
    expanded over it); out_dim None: the output is returned as it is, and must not be batched."""
    leaves, spec = tree_flatten(output)
    dims = _out_dims_per_leaf(name, out_dims, output, spec)
    result = []
    for leaf, dim in zip(leaves, dims):
        if dim is None:
            if is_batched(leaf, level):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            result.append(leaf)
            continue
        if not isinstance(leaf, TensorImpl):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(leaf)}. Did you "
                             "mean to set out_dims= to None for output?")
        value, bdim = unwrap(leaf, level)
        if bdim is None:
            value, bdim = leaf.expand(size, *leaf.shape), 0
        result.append(value.movedim(bdim, dim))
    return tree_unflatten(result, spec)


# ---- randomness ---------------------------------------------------------------------------------------------------
def is_random(op):
    return any(a.type == "Generator" for a in op.schema.args)


class VmapWatcher(Watcher):
    """Random ops under vmap, by the innermost level's randomness: 'error' refuses any; 'same' lets a draw of one
    example's shape run once for the batch, and shares an in-place draw into a batched tensor across its examples;
    'different' draws a factory's values for every example (the batch size joins its size), and an op on batched
    tensors draws per example through its rule or the fallback. And composites whose arguments vmap lays out
    before they run (COMPOSITE_INPUTS: index_put's input expanded over the batch its values are in)."""

    drawing = False   # a batched random op's rule or fallback is running: its calls on the physical tensors pass

    def around(self, op, args, run):
        if self.drawing or not is_random(op):
            return super().around(op, args, run)
        level = active_levels()[-1]
        batched = any(is_batched(args[i]) for i in op.tensor_positions)
        if level.randomness == "error":
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                               "'same' or 'different' randomness flags on vmap or perform the randomness operation "
                               "out of vmap")
        if level.randomness == "same":
            return self._shared_draw(op, args) if batched else super().around(op, args, run)
        if batched:
            return self._batched_draw(op, args, run)
        if op.tensor_positions:
            raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will "
                               "appear like same randomness. If this is necessary for your usage, please file an issue "
                               "with functorch.")
        return self._per_example_factory(op, args, level)

    def composite(self, name, fn, args, kwargs):
        if name in COMPOSITE_INPUTS:
            args, kwargs = COMPOSITE_INPUTS[name](*args, **kwargs), {}
        return super().composite(name, fn, args, kwargs)

    def _shared_draw(self, op, args):
        """randomness='same' on a batched tensor: an in-place sampler whose only batched argument is its target
        draws one example's values and writes them into every example; a draw that depends on batched values
        (bernoulli(p), normal(mean), multinomial) cannot be shared, and torch refuses it."""
        written = dispatcher.written_argument(op)
        others = [i for i in op.tensor_positions if i != written and is_batched(args[i])]
        if written is None or others:
            raise RuntimeError("Vmap does not currently support same randomness with a batched tensor input. Please "
                               "file an issue with functorch")
        target = args[written]
        one = lantern.empty(target.shape, dtype=target.dtype, device=target.device)
        return target.copy_(dispatcher.call(op, (*args[:written], one, *args[written + 1:])))

    def _batched_draw(self, op, args, run):
        self.drawing = True
        try:
            return super().around(op, args, run)
        finally:
            self.drawing = False

    def _per_example_factory(self, op, args, level):
        size_at = next((i for i, a in enumerate(op.schema.args) if a.name == "size"), None)
        if size_at is None:   # randperm(n): one draw per example, stacked
            return add_batch_dim(lantern.stack([self._unwatched(op, args) for _ in range(level.batch_size)]), 0,
                                 level.number)
        args = list(args)
        args[size_at] = (level.batch_size, *args[size_at])
        return add_batch_dim(self._unwatched(op, tuple(args)), 0, level.number)

    def _unwatched(self, op, args):
        remove(self)
        try:
            return dispatcher.call(op, args)
        finally:
            install(self)
