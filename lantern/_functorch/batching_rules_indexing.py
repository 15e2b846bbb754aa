"""vmap's batching rules for advanced indexing and the ops that write at positions: index.Tensor, index_put_,
index_add/index_copy/index_fill with a batched index, masked_fill, masked_scatter, take, and the out-of-place
index_put.

Advanced indexing of the whole batch at once gives the batch dimension an index of its own: an arange over the
batch, shaped to broadcast against the examples' index tensors, so that example b's indices pick from example b
only. When the examples' index tensors stand side by side after some whole dims (x[:, idx]), those dims get arange
indices too: every index is then adjacent, starting at the batch's, and the result (or the region index_put_
writes) is the batch of the examples' results, batch first, whatever NumPy's placement rule would have done.

>>> import lantern
>>> from lantern.func import vmap
>>> rows = lantern.arange(6.).reshape(2, 3)
>>> vmap(lambda r, i: r[i])(rows, lantern.tensor([[2, 0], [1, 1]]))
tensor([[2., 0.],
        [4., 4.]])
>>> vmap(lambda v: lantern.zeros(4).index_put((lantern.tensor([0, 0]),), v, True))(rows[:, :2])
tensor([[1., 0., 0., 0.],
        [7., 0., 0., 0.]])
"""
from ..core import dtype as dt
from ..ops import dispatcher
from ..ops.indexing import _check_indices
from ..ops.op_kinds import AliasKind
from .batched_tensor import active_levels, add_batch_dim, is_batched, not_possible, refuse_unbatched_write, to_front, \
    wrap_front
from .batching_rules_common import batch_size, front_or_expanded, padded
import lantern

_MASK_BATCHED = ("vmap: We do not support batching operators that can support dynamic shape. Attempting to batch "
                 "over indexing with a boolean mask.")


def index_rule(op, args, level):
    """self[indices] for the whole batch: one index.Tensor on self's physical tensor (expanded over the batch where
    only the indices are batched)."""
    self, indices = args
    size = batch_size(op, args, level)
    physical, _ = _physical_indices(self, indices, level, size)
    return wrap_front(dispatcher.call(op, (front_or_expanded(self, level, size), physical)), level)


def index_put_rule(op, args, level):
    """index_put_ into a batched self: one index_put_ into its physical tensor, each example's values (padded to
    the rank of the indexed region) written at its own indices. An unbatched self refuses batched indices or
    values, as torch does."""
    self, indices, values, accumulate = args
    if not is_batched(self, level):
        raise RuntimeError(not_possible(op))
    size = batch_size(op, args, level)
    physical, region_rank = _physical_indices(self, indices, level, size)
    if is_batched(values, level):
        values = padded(values, level, region_rank)
    dispatcher.call(op, (to_front(self, level), physical, values, accumulate))
    return self


def _physical_indices(self, indices, level, size):
    """(the index list for self's physical tensor, the rank of one example's indexed region)."""
    _check_indices(self, indices)   # the op's own IndexError for no index or too many
    indices = _masks_as_positions(indices, level)
    at = [i for i, ix in enumerate(indices) if ix is not None]
    rank = len(lantern.broadcast_shapes(*(indices[i].shape for i in at)))
    prefix = at[0] if at == list(range(at[0], at[-1] + 1)) else 0   # whole dims before side-by-side indices
    depth = prefix + rank
    physical = [_arange(size, 0, depth + 1, self.device)]
    for i, ix in enumerate(indices):
        if i < prefix:
            physical.append(_arange(self.shape[i], i + 1, depth + 1, self.device)[0])
        else:
            physical.append(padded(ix, level, depth) if is_batched(ix, level) else ix)
    return physical, self.dim() - len(at) + depth - prefix


def _arange(n, position, rank, device):
    """arange(n) laid along dim `position` of `rank` dims (1-sized elsewhere)."""
    shape = [1] * rank
    shape[position] = n
    return lantern.arange(n, device=device).view(shape)


def _masks_as_positions(indices, level):
    """A bool (or uint8) mask index as the index tensors of its True positions; a batched mask would give each
    example its own number of them, which torch refuses."""
    positions = []
    for ix in indices:
        if ix is None or ix.dtype not in (dt.bool, dt.uint8):
            positions.append(ix)
        elif is_batched(ix, level):
            raise RuntimeError(_MASK_BATCHED)
        else:
            positions.extend(ix.nonzero().unbind(1))
    return positions


def index_put_input(input, indices, values, accumulate=False):
    """The arguments of the out-of-place index_put (a composite: index_put_ into a clone of input) with input
    expanded over every vmap level its indices or values are batched at and it is not: each example then writes
    into its own copy, as torch's rule for index_put does, where index_put_ into the unbatched clone would
    refuse."""
    writers = [t for t in (values, *indices) if t is not None]
    for level in active_levels():
        if not is_batched(input, level.number) and any(is_batched(t, level.number) for t in writers):
            input = add_batch_dim(input.expand(level.batch_size, *input.shape), 0, level.number)
    return (input, indices, values, accumulate)


# ---- index_add / index_copy / index_fill with a batched index -------------------------------------------------
def index_along_dim_by_index_put(op, args, level):
    """index_add, index_copy, index_fill (and their in-place forms): index_put_ (adding for index_add) into self's
    physical tensor with `dim` moved next to the batch dim, the batch's arange beside each example's index (or
    the one index of all)."""
    self, dim, index = args[:3]
    if self.dim() == 0:
        return NotImplemented
    refuse_unbatched_write(op, args, level)
    size = batch_size(op, args, level)
    inplace = op.schema.alias is AliasKind.INPLACE
    target = front_or_expanded(self, level, size)
    target = target if inplace else target.clone()
    region = target.movedim(dim % self.dim() + 1, 1)
    positions = (_arange(size, 0, 2, self.device), padded(index, level, 1) if is_batched(index, level) else index)
    region.index_put_(positions, _along_dim_values(op, args, level, size, region), op.schema.name == "index_add")
    return self if inplace else wrap_front(target, level)


def _along_dim_values(op, args, level, size, region):
    """What index_put_ writes: index_add's source times alpha and index_copy's source, dim moved next to the batch;
    index_fill's value, one per example if batched."""
    self, dim, value = args[0], args[1], args[3]
    if op.schema.name.startswith("index_fill"):
        if not isinstance(value, lantern.Tensor):
            return region.new_full((), value)
        value = value.to(region.dtype)
        return to_front(value, level).view(size, *[1] * (region.dim() - 1)) if is_batched(value, level) else value
    source = front_or_expanded(value, level, size).movedim(dim % self.dim() + 1, 1)
    alpha = args[4] if op.schema.name == "index_add" else 1
    return source if alpha == 1 else source * alpha


# ---- masks -------------------------------------------------------------------------------------------------------
def masked_fill_rule(op, args, level):
    """masked_fill: self and mask lined up as broadcasting lines them up; a value batched (one 0-dim value per
    example) is written by where(), in self's dtype."""
    self, mask, value = args
    rank = max(self.dim(), mask.dim())
    s, m = (padded(t, level, rank) if is_batched(t, level) else t for t in (self, mask))
    if is_batched(value, level):
        return wrap_front(lantern.where(m, to_front(value, level).to(self.dtype).view(-1, *[1] * rank), s), level)
    return wrap_front(dispatcher.call(op, (s, m, value)), level)


def masked_scatter_rule(op, args, level):
    """masked_scatter: each example's source elements, in order, at its mask's True positions. The running count
    of True positions within an example picks its source element (a gather), and where() writes them."""
    self, mask, source = args
    size = batch_size(op, args, level)
    shape = lantern.broadcast_shapes(self.shape, mask.shape)
    s, m = (padded(t, level, len(shape)) if is_batched(t, level) else t for t in (self, mask))
    m = m.expand(size, *shape)
    positions = m.reshape(size, -1).long().cumsum(1).sub(1).clamp(min=0)
    picked = front_or_expanded(source, level, size).reshape(size, -1).gather(1, positions).view(size, *shape)
    return wrap_front(lantern.where(m, picked, s), level)


def take_rule(op, args, level):
    """take: each example's elements flattened, read at its indices (negative ones from the end) by a gather."""
    self, index = args
    size = batch_size(op, args, level)
    flat = front_or_expanded(self, level, size).reshape(size, -1)
    at = front_or_expanded(index, level, size).reshape(size, -1)
    at = lantern.where(at < 0, at + self.numel(), at)
    return wrap_front(flat.gather(1, at).view(size, *index.shape), level)


INDEXING_RULES = {"index.Tensor": index_rule, "index_put_": index_put_rule, "masked_fill.Scalar": masked_fill_rule,
                  "masked_fill.Tensor": masked_fill_rule, "masked_scatter": masked_scatter_rule, "take": take_rule}
ALONG_DIM = frozenset(("index_add", "index_copy", "index_fill"))   # index_along_dim_by_index_put where dims_rule won't
COMPOSITE_INPUTS = {"index_put": index_put_input}   # composites whose arguments vmap lays out before they run
