"""vmap's batching rules: for each op, how to compute a whole batch at once on the physical tensors.

A rule is `rule(op, args, level) -> result`: `args` are the op's arguments in schema order, some of them
BatchedTensors of `level`; the rule moves each one's batch dimension to the front of its physical tensor, calls
ops on the physical tensors (which dispatch again: autograd records them, an outer vmap level batches them), and
wraps the result (batch dimension first) back. A rule may return NotImplemented for arguments it does not cover;
the per-example fallback then runs. Rules are kept in the op records (`op.batch_rule`), grouped by kind of op:

- pointwise (op.pointwise, and copy_/fill_/zero_/clone/_to_copy/alias): line the examples' dimensions up on the
  right, as broadcasting does, and call the op once;
- dims (an op of one tensor, or of tensors of one rank, with dim arguments: reductions, softmax, cumsum, sort,
  select/slice/narrow/transpose/unbind...): shift each dim past the batch dimension;
- shapes (view, reshape, expand, permute, squeeze, unsqueeze, t, repeat, cat, stack): the batch size joins the
  shape argument;
- matmul family (mm, bmm, mv, dot, addmm, addmv, baddbmm): one broadcasting matmul;
- nn: convolution (per-example weights as groups), pooling/upsampling (the batch folded into N), padding,
  tril/triu (trailing dims), and the losses (reduction none over the batch, then per example);
- whole examples (trace, vdot, max/min/median/nanmedian of all elements): each example one row, reduced;
- in-place ops with a rule for their out-of-place form (cumsum_, scatter_, index_add_, masked_fill_, addmm_...):
  that rule, then a copy into self (out= variants have none: the fallback refuses them, as torch's does).

Advanced indexing and masks are in batching_rules_indexing.py; layer norm, embedding and the backward kernels
that gradients run under vmap in batching_rules_nn_grad.py.

>>> import lantern
>>> from lantern.ops.registry import REGISTRY
>>> REGISTRY["add"].batch_rule.__name__, REGISTRY["sum"].batch_rule.__name__, REGISTRY["mm"].batch_rule.__name__
('pointwise_rule', 'dims_rule', 'matmul_rule')
"""
from ..core.tensor_impl import TensorImpl
from ..ops import dispatcher, registry
from ..ops.op_kinds import AliasKind, OpKind
from .batched_tensor import example_span, is_batched, refuse_unbatched_write, to_front, unwrap, wrap_front
from .batching_rules_common import batch_size, front_or_expanded, kept_weight, padded
from .batching_rules_indexing import ALONG_DIM, INDEXING_RULES, index_along_dim_by_index_put
from .batching_rules_nn_grad import NN_GRAD_RULES
import lantern


# ---- pointwise ---------------------------------------------------------------------------------------------------
def pointwise_rule(op, args, level):
    """An elementwise op with broadcasting: each batched argument's examples padded to the largest rank, the
    unbatched ones as they are (they broadcast against the batch)."""
    refuse_unbatched_write(op, args, level)
    rank = max(args[i].dim() for i in op.tensor_positions if isinstance(args[i], TensorImpl))
    call_args = list(args)
    for i in op.tensor_positions:
        if is_batched(args[i], level):
            call_args[i] = padded(args[i], level, rank)
    result = dispatcher.call(op, tuple(call_args))
    if op.schema.alias is AliasKind.INPLACE:
        return args[0]
    return wrap_front(result, level)


# ---- dims --------------------------------------------------------------------------------------------------------
DIM_ARGUMENTS = frozenset(("dim", "dim0", "dim1", "dim2", "dims", "dimension", "start_dim", "end_dim", "source",
                           "destination"))
RANK_PLUS_ONE = frozenset(("unsqueeze", "stack", "diag_embed"))   # their dims count the result's dims


def dims_rule(op, args, level):
    """An op whose dim arguments name dims of its tensors (all of one rank): each dim moved past the batch
    dimension; unbatched tensors expanded over the batch. A reduction given no dims (without keepdim) reduces each
    example's elements, flattened into one dim."""
    tensors = [i for i in op.tensor_positions if isinstance(args[i], TensorImpl)]
    rank = args[tensors[0]].dim()
    plus_one = op.schema.name in RANK_PLUS_ONE
    if (rank == 0 and not plus_one) or any(args[i].dim() != rank and not _free_index(op, i) for i in tensors) or \
            any(_free_index(op, i) and is_batched(args[i], level) for i in tensors):
        return NotImplemented
    size = batch_size(op, args, level)
    call_args = list(args)
    for i in tensors:
        front = to_front(args[i], level)
        if front is None and not _free_index(op, i):
            front = args[i].expand(size, *args[i].shape)
        call_args[i] = args[i] if front is None else front
    everything = _reduces_everything(op, args)
    if everything:
        if len(tensors) != 1:
            return NotImplemented
        call_args[tensors[0]] = call_args[tensors[0]].reshape(size, -1)
    for i, a in enumerate(op.schema.args):
        if a.name in DIM_ARGUMENTS and a.type == "int":
            if _unset(args[i]) and not everything:
                return NotImplemented
            call_args[i] = 1 if _unset(args[i]) else _shifted(args[i], a.is_list, rank + plus_one)
    return wrap_front(dispatcher.call(op, tuple(call_args)), level)


def _unset(dim):
    return dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0)


def _reduces_everything(op, args):
    """A reduction called without dims: over all of an example's elements (keepdim=True keeps the example's rank,
    which one flattened dim cannot: the fallback runs that)."""
    params = op.schema.args
    dims = [i for i, a in enumerate(params) if a.name in DIM_ARGUMENTS and a.type == "int"]
    keepdim = next((i for i, a in enumerate(params) if a.name == "keepdim"), None)
    return keepdim is not None and any(_unset(args[i]) for i in dims) and not args[keepdim]


def _free_index(op, i):
    """The index of index_select/index_copy/index_add/index_fill: a list of positions along dim, not a tensor lined
    up with self."""
    return op.schema.name.startswith("index_") and op.schema.args[i].name == "index"


def _shifted(dim, is_list, rank):
    if is_list and not isinstance(dim, int):
        return [d % rank + 1 for d in dim]
    return dim % rank + 1


# ---- shapes ------------------------------------------------------------------------------------------------------
def view_rule(op, args, level):
    """view / _unsafe_view / reshape(size): the batch size leads the new shape."""
    front = to_front(args[0], level)
    return wrap_front(dispatcher.call(op, (front, (front.shape[0], *args[1]))), level)


def expand_rule(op, args, level):
    size = tuple(args[1])
    front = padded(args[0], level, len(size))
    return wrap_front(dispatcher.call(op, (front, (front.shape[0], *size), *args[2:])), level)


def permute_rule(op, args, level):
    rank = args[0].dim()
    return wrap_front(dispatcher.call(op, (to_front(args[0], level), (0, *[d % rank + 1 for d in args[1]]))), level)


def squeeze_rule(op, args, level):
    """squeeze(dim=None) squeezes the example's 1-sized dims only, never the batch dimension."""
    x = args[0]
    dims = [d for d in range(x.dim()) if x.shape[d] == 1] if args[1] is None else args[1]
    dims = [dims] if isinstance(dims, int) else list(dims)
    if x.dim() == 0:
        return NotImplemented
    return wrap_front(dispatcher.call(op, (to_front(x, level), [d % x.dim() + 1 for d in dims])), level)


def t_rule(op, args, level):
    front = to_front(args[0], level)
    if args[0].dim() < 2:
        return wrap_front(front.view(front.shape), level)
    return wrap_front(front.transpose(1, 2), level)


def as_strided_rule(op, args, level):
    """Each example's elements at `stride` from its own start (`storage_offset` is the first example's): the
    batch dimension keeps its stride in the physical tensor."""
    value, bdim = unwrap(args[0], level)
    offset = value.storage_offset() if args[3] is None else args[3]
    return wrap_front(dispatcher.call(op, (value, (value.shape[bdim], *args[1]), (value.stride(bdim), *args[2]),
                                           offset)), level)


def as_strided_scatter_rule(op, args, level):
    """src written into a copy of self at each example's as_strided region: the copy keeps self's layout with the
    batch dimension in front, and each example's region starts where its own elements do (storage_offset counts
    from the example's first element, as as_strided_rule reads it). The fallback's slices would all write where
    the first example's memory is."""
    self, src, size, stride, offset = args
    batch = batch_size(op, args, level)
    front = front_or_expanded(self, level, batch)
    out = front.new_empty_strided(front.shape, (example_span(self.shape, self.stride()), *self.stride()))
    out.copy_(front)
    relative = 0 if offset is None else offset - self.storage_offset()
    region = out.as_strided((batch, *size), (out.stride(0), *stride), out.storage_offset() + relative)
    region.copy_(to_front(src, level) if is_batched(src, level) else src)
    return wrap_front(out, level)


def repeat_rule(op, args, level):
    repeats = tuple(args[1])
    front = padded(args[0], level, len(repeats))
    return wrap_front(dispatcher.call(op, (front, (1, *repeats))), level)


def cat_rule(op, args, level):
    """cat / stack: unbatched tensors expanded over the batch, the dim moved past it."""
    tensors = args[0]
    size = batch_size(op, args, level)
    rank = tensors[0].dim() + (1 if op.schema.name == "stack" else 0)
    if rank == 0 or any(t.dim() != tensors[0].dim() for t in tensors):
        return NotImplemented
    fronts = [front_or_expanded(t, level, size) for t in tensors]
    return wrap_front(dispatcher.call(op, (fronts, args[1] % rank + 1, *args[2:])), level)


# ---- matmul family -----------------------------------------------------------------------------------------------
def matmul_rule(op, args, level):
    """mm, bmm, mv, dot: one broadcasting matmul over the physical tensors (batched ones batch first)."""
    a, b = (to_front(x, level) if is_batched(x, level) else x for x in args[:2])
    name = op.schema.name
    if name == "dot":
        return wrap_front((a * b).sum(-1), level)
    if name == "mv":
        return wrap_front(lantern.matmul(a, b.unsqueeze(-1)).squeeze(-1), level)
    return wrap_front(lantern.matmul(a, b), level)


ADD_PRODUCT = {"addmm": "mm", "addmv": "mv", "baddbmm": "bmm"}


def add_product_rule(op, args, level):
    """addmm / addmv / baddbmm: beta * self + alpha * the product, the product batched by matmul_rule where a
    factor is batched."""
    self, beta, alpha = args[0], args[3], args[4]
    product_op = registry.get(ADD_PRODUCT[op.schema.name])
    if is_batched(args[1], level) or is_batched(args[2], level):
        product = to_front(matmul_rule(product_op, (args[1], args[2]), level), level)
        rank = product.dim() - 1
    else:
        product = dispatcher.call(product_op, (args[1], args[2]))
        rank = product.dim()
    if alpha != 1:
        product = product * alpha
    if beta != 0:
        term = padded(self, level, rank) if is_batched(self, level) else self
        product = product + (term if beta == 1 else term * beta)
    if product.dim() == rank:  # beta 0 and no factor batched: every example's result is the same
        product = product.expand(batch_size(op, args, level), *product.shape)
    return wrap_front(product, level)


# ---- nn ----------------------------------------------------------------------------------------------------------
def convolution_rule(op, args, level):
    """A batched input with unbatched weight and bias: the batch folded into the input's own batch dimension.
    A batched weight (per-example weights, as grad under vmap makes them): the examples become groups of one
    convolution, the batch folded into the channels."""
    x, weight, bias = args[0], args[1], args[2]
    if x.dim() != weight.dim():
        return NotImplemented
    if not (is_batched(weight, level) or is_batched(bias, level)):
        front = to_front(x, level)
        size, n = front.shape[0], front.shape[1]
        out = dispatcher.call(op, (front.reshape(size * n, *front.shape[2:]), *args[1:]))
        return wrap_front(out.reshape(size, n, *out.shape[1:]), level)
    return _grouped_convolution(op, args, level)


def _grouped_convolution(op, args, level):
    """convolution with every example's own weight: input (B, N, C, ...) as (N, B*C, ...), weight (B, O, C/g, ...)
    as (B*O, C/g, ...) (transposed: (B, C, O/g, ...) as (B*C, O/g, ...)), groups B*g; the output's (N, B*O, ...)
    back to (B, N, O, ...)."""
    x, weight, bias, groups = args[0], args[1], args[2], args[8]
    size = batch_size(op, args, level)
    xs = front_or_expanded(x, level, size)
    ws = front_or_expanded(weight, level, size)
    n = xs.shape[1]
    folded_x = xs.movedim(0, 1).reshape(n, size * xs.shape[2], *xs.shape[3:])
    folded_w = ws.reshape(size * ws.shape[1], *ws.shape[2:])
    folded_b = None
    if bias is not None:
        bs = front_or_expanded(bias, level, size)
        folded_b = bs.reshape(-1)
    out = dispatcher.call(op, (folded_x, folded_w, folded_b, *args[3:8], groups * size))
    return wrap_front(out.reshape(n, size, -1, *out.shape[2:]).movedim(1, 0), level)


SPATIAL_DIMS = {"max_pool2d_with_indices": 2, "avg_pool2d": 2, "_adaptive_avg_pool2d": 2, "adaptive_max_pool2d": 2,
                "im2col": 2, "_upsample": None, "_upsample_aa": None}   # None: as many as output_size has


def spatial_rule(op, args, level):
    """Pooling, upsampling, im2col of a batched input, (N, C, *spatial) or (C, *spatial): the batch folded into
    the op's own batch dimension N (or made N)."""
    if any(is_batched(args[i], level) for i in op.tensor_positions[1:]):
        return NotImplemented
    x = args[0]
    spatial = SPATIAL_DIMS[op.schema.name] or len(args[1])
    front = to_front(x, level)
    if x.dim() == spatial + 1:
        return wrap_front(dispatcher.call(op, (front, *args[1:])), level)
    if x.dim() != spatial + 2:
        return NotImplemented
    size, n = front.shape[0], front.shape[1]
    out = dispatcher.call(op, (front.reshape(size * n, *front.shape[2:]), *args[1:]))
    outs = out if isinstance(out, tuple) else (out,)
    unfolded = tuple(o.reshape(size, n, *o.shape[1:]) for o in outs)
    return wrap_front(unfolded if isinstance(out, tuple) else unfolded[0], level)


def trailing_dims_rule(op, args, level):
    """constant_pad_nd, tril and triu of a batched input: they work on the input's last dims, which the batch
    dimension in front does not move."""
    if any(is_batched(args[i], level) for i in op.tensor_positions[1:]):
        return NotImplemented
    reached = len(args[1]) // 2 if op.schema.name == "constant_pad_nd" else 2   # how many last dims it needs
    if reached > args[0].dim():
        return NotImplemented
    return wrap_front(dispatcher.call(op, (to_front(args[0], level), *args[1:])), level)


BATCH_NORM_UNBATCHED_STATS = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which will be updated in place, "
    "were not batched.\nIf you are using a module and do not need eval mode, please set `track_running_stats` to be "
    "False.If you are using a prebuilt module and do not need eval mode, please see the functorch website for "
    "resources on how to patch your module to work with vmap")


def batch_norm_rule(op, args, level):
    """native_batch_norm of a batch of (N, C, ...) examples: each example's channels become channels of their own,
    one call on (N, B * C, ...), so each example gets its own statistics. Per-channel tensors unbatched are
    repeated for every example; running statistics updated in training must be batched too (torch's error)."""
    x, weight, bias, running_mean, running_var, training = args[:6]
    if training and is_batched(x, level) and any(s is not None and not is_batched(s, level)
                                                 for s in (running_mean, running_var)):
        raise RuntimeError(BATCH_NORM_UNBATCHED_STATS)
    if x.dim() < 2:
        return NotImplemented
    size = batch_size(op, args, level)
    front = front_or_expanded(x, level, size)
    n, channels, rest = front.shape[1], front.shape[2], front.shape[3:]
    folded = front.movedim(0, 1).reshape(n, size * channels, *rest)
    per_channel = [_per_example_channels(t, level, size) for t in (weight, bias, running_mean, running_var)]
    out, mean, invstd = dispatcher.call(op, (folded, *per_channel, *args[5:]))
    for stat, flat in ((running_mean, per_channel[2]), (running_var, per_channel[3])):
        if is_batched(stat, level):
            to_front(stat, level).copy_(flat.view(size, channels))
    out = out.reshape(n, size, channels, *rest).movedim(1, 0)
    return wrap_front((out, *(s.reshape(size, -1) for s in (mean, invstd))), level)


def _per_example_channels(t, level, size):
    """A per-channel tensor (C,) for the folded call: a batch of them flattened to (B * C,), one repeated B times."""
    if t is None:
        return None
    return to_front(t, level).reshape(-1).clone() if is_batched(t, level) else t.repeat(size)


def _reduction_position(op):
    return next(i for i, a in enumerate(op.schema.args) if a.name == "reduction")


def _reduced_per_example(front, reduction):
    """Each example's 'none' losses (front: batch first) reduced as `reduction` says (0 none, 1 mean, 2 sum)."""
    dims = list(range(1, front.dim()))
    if reduction == 0 or not dims:
        return front
    return front.sum(dims) if reduction == 2 else front.mean(dims)


def elementwise_loss_rule(op, args, level):
    """mse_loss, smooth_l1_loss, huber_loss, binary_cross_entropy(_with_logits): the elementwise losses of the
    whole batch (reduction none, the examples lined up as pointwise ops line them up), then each example's own
    mean or sum."""
    at = _reduction_position(op)
    rank = max(args[i].dim() for i in op.tensor_positions if isinstance(args[i], TensorImpl))
    call_args = list(args)
    for i in op.tensor_positions:
        if is_batched(args[i], level):
            call_args[i] = padded(args[i], level, rank)
    call_args[at] = 0
    return wrap_front(_reduced_per_example(dispatcher.call(op, tuple(call_args)), args[at]), level)


def class_index_loss_rule(op, args, level):
    """nll_loss and the fused cross entropy of (N, C) scores and N class indices: the batch's N*B rows in one call
    (reduction none), then each example's sum, or mean over its rows that are not ignore_index (weighted by the
    target classes' weights, as torch's mean is)."""
    scores, target = args[0], args[1]
    weight = args[2] if op.schema.name == "nll_loss" else None
    if scores.dim() != 2 or target.dim() != 1 or is_batched(weight, level):
        return NotImplemented
    size = batch_size(op, args, level)
    s = front_or_expanded(scores, level, size)
    t = front_or_expanded(target, level, size)
    rows, classes = s.shape[1], s.shape[2]
    at = _reduction_position(op)
    call_args = list(args)
    call_args[0], call_args[1], call_args[at] = s.reshape(size * rows, classes), t.reshape(size * rows), 0
    out = dispatcher.call(op, tuple(call_args))
    losses = (out[0] if isinstance(out, tuple) else out).reshape(size, rows)
    reduction, ignore_index = args[at], args[at + 1]
    if reduction == 2:
        losses = losses.sum(1)
    elif reduction == 1:
        losses = losses.sum(1) / kept_weight(t, ignore_index, weight, losses.dtype).sum(1)
    if isinstance(out, tuple):  # the fused cross entropy's second output: the softmax it keeps for backward
        return wrap_front((losses, out[1].reshape(size, rows, classes)), level)
    return wrap_front(losses, level)


# ---- whole examples -----------------------------------------------------------------------------------------------
WHOLE_EXAMPLE = frozenset(("trace", "vdot", "max", "min", "median.all", "nanmedian.all"))


def whole_example_rule(op, args, level):
    """trace, vdot and the reductions of all of a tensor's elements (max, min, median, nanmedian without a dim):
    each example's elements as one row of the physical tensor, reduced along it."""
    size = batch_size(op, args, level)
    name = op.name.partition(".")[0]
    if name == "vdot":
        if args[0].dim() != 1 or args[1].dim() != 1:
            return NotImplemented
        a, b = (front_or_expanded(t, level, size) for t in args)
        return wrap_front((a.conj() * b).sum(-1), level)
    x = to_front(args[0], level)
    if name == "trace":
        return wrap_front(x.diagonal(0, 1, 2).sum(-1), level) if args[0].dim() == 2 else NotImplemented
    rows = x.reshape(size, -1)
    if name in ("max", "min"):
        return wrap_front(rows.amax(1) if name == "max" else rows.amin(1), level)
    return wrap_front(getattr(rows, name)(1).values, level)


# ---- index_add/index_copy/index_fill, and in-place ops -------------------------------------------------------------
def index_along_dim_rule(op, args, level):
    """index_add / index_copy / index_fill: dims_rule for an unbatched index; a batched one (or index_fill's 0-dim
    value tensor) by index_along_dim_by_index_put, index_put_ beside the batch's arange."""
    if not is_batched(args[2], level):
        result = dims_rule(op, args, level)
        if result is not NotImplemented:
            return result
    return index_along_dim_by_index_put(op, args, level)


def inplace_rule(op, args, level):
    """An in-place op whose out-of-place form has a rule (cumsum_, scatter_, index_add_, addmm_, tril_ ...): that
    rule on the same arguments, then a copy into self, as functionalization rewrites an in-place op. An unbatched
    self refuses batched arguments first, as torch does."""
    refuse_unbatched_write(op, args, level)
    functional = registry.REGISTRY[_functional_name(op)]
    result = functional.batch_rule(functional, args, level)
    if result is NotImplemented:
        return NotImplemented
    args[0].copy_(result)
    return args[0]


def _functional_name(op):
    """cumsum_ -> cumsum, scatter_.src -> scatter.src."""
    name, dot, overload = op.name.partition(".")
    return name[:-1] + dot + overload


# ---- which op gets which rule -------------------------------------------------------------------------------------
ELEMENTWISE = frozenset(("copy_", "fill_", "zero_", "clone", "_to_copy", "alias"))
SHAPE_RULES = {"view": view_rule, "_unsafe_view": view_rule, "reshape": view_rule, "expand": expand_rule,
               "permute": permute_rule, "squeeze": squeeze_rule, "as_strided": as_strided_rule,
               "as_strided_scatter": as_strided_scatter_rule, "t": t_rule,
               "repeat": repeat_rule, "cat": cat_rule, "stack": cat_rule}
MATMUL_RULES = {"mm": matmul_rule, "bmm": matmul_rule, "mv": matmul_rule, "dot": matmul_rule,
                "addmm": add_product_rule, "addmv": add_product_rule, "baddbmm": add_product_rule}
NN_RULES = {"convolution": convolution_rule, "mse_loss": elementwise_loss_rule,
            "smooth_l1_loss": elementwise_loss_rule, "huber_loss": elementwise_loss_rule,
            "binary_cross_entropy": elementwise_loss_rule, "binary_cross_entropy_with_logits": elementwise_loss_rule,
            "nll_loss": class_index_loss_rule, "_cross_entropy_index": class_index_loss_rule,
            "constant_pad_nd": trailing_dims_rule, "tril": trailing_dims_rule, "triu": trailing_dims_rule,
            "native_batch_norm": batch_norm_rule,
            **{name: spatial_rule for name in SPATIAL_DIMS}}
NAMED_RULES = {**SHAPE_RULES, **MATMUL_RULES, **NN_RULES, **INDEXING_RULES, **NN_GRAD_RULES,
               **{name: whole_example_rule for name in WHOLE_EXAMPLE}}
# random ops that draw each element on its own: one call on the physical tensors draws different values for every
# example (randomness='different'; vmap's VmapWatcher handles 'same' before any rule runs)
SAMPLERS = frozenset(("bernoulli", "bernoulli_", "binomial", "cauchy_", "exponential_", "geometric_", "log_normal_",
                      "normal", "normal_", "poisson", "random_", "uniform_", "_standard_gamma"))
NO_DIMS_RULE = frozenset(("diag_embed", "roll", "_sparse_softmax", "_sparse_log_softmax"))


def rule_for(op):
    """The batching rule of an op record, or None (the fallback runs)."""
    name = op.schema.name
    if op.schema.alias is AliasKind.OUT:
        return None   # torch.vmap has no rule for an out= variant, and its fallback refuses them (so does lantern's)
    if name in SAMPLERS:
        return pointwise_rule
    if op.name in NAMED_RULES:
        return NAMED_RULES[op.name]
    if op.pointwise or name in ELEMENTWISE:
        return pointwise_rule
    if op.kind is OpKind.STRUCTURED_INPLACE or op.schema.alias is AliasKind.INPLACE:
        functional = registry.REGISTRY.get(_functional_name(op))
        return inplace_rule if functional is not None and rule_for(functional) is not None else None
    if name in ALONG_DIM:
        return index_along_dim_rule
    if name not in NO_DIMS_RULE and op.tensor_positions and not op.list_positions and _has_dims(op):
        return dims_rule
    return None


def _has_dims(op):
    return any(a.name in DIM_ARGUMENTS and a.type == "int" for a in op.schema.args)


def _install(op):
    if op.batch_rule is None:
        op.batch_rule = rule_for(op)


registry.on_register(_install)
