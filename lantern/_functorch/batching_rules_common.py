"""What the batching rules share: the batch size of a call, and an argument's physical tensor laid out for one call
on the whole batch (batch dimension first, padded, or expanded when the argument is not batched).

>>> import lantern
>>> from lantern._functorch import batched_tensor as bt
>>> with bt.vmap_level(3) as level:
...     front_or_expanded(lantern.ones(2), level, 3).shape
lantern.Size([3, 2])
"""
from .batched_tensor import is_batched, to_front, unwrap


def batch_size(op, args, level):
    """The size of the `level` batch dimension of the first argument batched at it."""
    for i in op.tensor_positions:
        value, bdim = unwrap(args[i], level)
        if bdim is not None:
            return value.shape[bdim]
    for i in op.list_positions:
        for t in args[i]:
            value, bdim = unwrap(t, level)
            if bdim is not None:
                return value.shape[bdim]
    raise AssertionError("a batching rule ran without a batched argument")


def padded(x, level, rank):
    """x's physical tensor (batch first) with 1-sized dims after the batch dim up to logical rank `rank`: the
    examples' dims line up on the right with the other arguments', as broadcasting lines them up."""
    front = to_front(x, level)
    for _ in range(rank - x.dim()):
        front = front.unsqueeze(1)
    return front


def front_or_expanded(x, level, size):
    """x's physical tensor with the batch first, or x expanded over a batch of `size` when x is not batched."""
    return to_front(x, level) if is_batched(x, level) else x.expand(size, *x.shape)


def kept_weight(target, ignore_index, weight, dtype):
    """Each row's weight in a class-index loss's mean: 0 where target is ignore_index, else its class's weight (1
    without weights)."""
    kept = (target != ignore_index).to(dtype)
    return kept if weight is None else kept * weight[target.clamp(min=0)]
