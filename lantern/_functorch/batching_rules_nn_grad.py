"""vmap's batching rules for the nn ops that gradients go through: the backward kernels (pooling and upsampling,
layer norm, embedding, the class-index losses, select/diagonal scatter) that jacrev, hessian and per-sample
gradients run under vmap, and per-example parameters in embedding and layer norm (grad under vmap makes them).

Each rule does what its forward's rule does: the batch folded into the op's own batch dimension (N, or the rows
of a loss), or, for per-example tables, the tables stacked into one with each example's indices offset into its
own.

>>> import lantern
>>> from lantern.func import jacrev
>>> jacrev(lambda x: lantern.nn.functional.avg_pool2d(x, 2))(lantern.ones(1, 2, 2)).shape
lantern.Size([1, 1, 1, 1, 2, 2])
"""
from ..ops import dispatcher
from .batched_tensor import is_batched, to_front, wrap_front
from .batching_rules_common import batch_size, front_or_expanded, kept_weight, padded
import lantern

SPATIAL_BACKWARD = {"avg_pool2d_backward": 2, "_adaptive_avg_pool2d_backward": 2, "_upsample_backward": None,
                    "_upsample_aa_backward": None}   # None: all of the input's dims after N and C


def spatial_backward_rule(op, args, level):
    """The backward of pooling and upsampling: grad_output's batch folded into N, and into input_size (the
    input's shape, with or without N), as spatial_rule folds the input."""
    grad, input_size = args[0], tuple(args[1])
    spatial = SPATIAL_BACKWARD[op.schema.name] or len(input_size) - 2
    front = to_front(grad, level)
    size = front.shape[0]
    if len(input_size) == spatial + 1:
        return wrap_front(dispatcher.call(op, (front, (size, *input_size), *args[2:])), level)
    if len(input_size) != spatial + 2:
        return NotImplemented
    n = front.shape[1]
    out = dispatcher.call(op, (front.reshape(size * n, *front.shape[2:]), (size * n, *input_size[1:]), *args[2:]))
    return wrap_front(out.reshape(size, n, *out.shape[1:]), level)


def layer_norm_rule(op, args, level):
    """native_layer_norm: the input batch first (it normalizes the trailing dims); a batched weight or bias
    (per-example parameters) is applied after normalizing without them, layer norm's own affine step."""
    x, shape, weight, bias, eps = args
    if is_batched(weight, level) or is_batched(bias, level):
        out, mean, rstd = dispatcher.call(op, (x, shape, None, None, eps))
        out = out if weight is None else out * weight
        return (out if bias is None else out + bias), mean, rstd
    front = front_or_expanded(x, level, batch_size(op, args, level))
    return wrap_front(dispatcher.call(op, (front, *args[1:])), level)


def layer_norm_backward_rule(op, args, level):
    """_layer_norm_input_backward: grad_out, input and the saved mean and rstd batch first (each example's rows
    are rows of their own); a batched weight multiplies grad_out first, as the kernel does with its weight."""
    grad, x, shape, mean, rstd, weight, eps = args
    if is_batched(weight, level):
        grad, weight = grad * weight, None
    size = batch_size(op, args, level)
    g, xs, m, r = (front_or_expanded(t, level, size) for t in (grad, x, mean, rstd))
    return wrap_front(dispatcher.call(op, (g, xs, shape, m, r, weight, eps)), level)


def embedding_rule(op, args, level):
    """Batched indices into an unbatched weight: one lookup of every example's indices. A batched weight (a table
    per example): the tables stacked into one, each example's indices offset into its own table (a padding_idx,
    which zeroes one row of each table's gradient, is left to the fallback)."""
    weight, indices, padding_idx = args[:3]
    if not is_batched(weight, level):
        return wrap_front(dispatcher.call(op, (weight, to_front(indices, level), *args[2:])), level)
    if padding_idx != -1:
        return NotImplemented
    tables = to_front(weight, level)
    size, rows = tables.shape[:2]
    offset = _offset_indices(indices, level, size, rows)
    return wrap_front(dispatcher.call(op, (tables.reshape(size * rows, -1), offset, *args[2:])), level)


def _offset_indices(indices, level, size, rows):
    """Each example's indices plus its example number times `rows`: indices into B stacked tables."""
    front = padded(indices, level, indices.dim()) if is_batched(indices, level) else indices
    steps = lantern.arange(size, device=indices.device).view(size, *[1] * indices.dim()) * rows
    return front + steps


def embedding_backward_rule(op, args, level):
    """embedding_dense_backward of a batch of gradients: each example's rows summed into a table of its own, one
    call over the B tables stacked (each example's indices offset into its table); padding_idx's row is zeroed in
    every table after."""
    grad, indices, num_weights, padding_idx, scale_grad_by_freq = args
    size = batch_size(op, args, level)
    offset = _offset_indices(indices, level, size, num_weights)
    out = dispatcher.call(op, (front_or_expanded(grad, level, size), offset, size * num_weights, -1,
                               scale_grad_by_freq)).view(size, num_weights, -1)
    if padding_idx >= 0:
        out = out.index_fill(1, lantern.tensor([padding_idx], device=out.device), 0)
    return wrap_front(out, level)


def class_index_loss_backward_rule(op, args, level):
    """nll_loss_backward and the fused cross entropy's backward of (N, C) scores: the batch's B*N rows in one call
    with reduction none, each row's gradient its example's (over the example's total weight for 'mean'), as
    class_index_loss_rule computes the losses."""
    grad, scores, target = args[:3]
    weight = args[3] if op.schema.name == "nll_loss_backward" else None
    if scores.dim() != 2 or target.dim() != 1 or is_batched(weight, level):
        return NotImplemented
    size = batch_size(op, args, level)
    s, t = front_or_expanded(scores, level, size), front_or_expanded(target, level, size)
    at = next(i for i, a in enumerate(op.schema.args) if a.name == "reduction")
    reduction, ignore_index = args[at], args[at + 1]
    g = front_or_expanded(grad, level, size)
    if reduction != 0:
        g = g.view(size, 1).expand(t.shape)
    if reduction == 1:
        total = kept_weight(t, ignore_index, weight, g.dtype).sum(1, keepdim=True)
        if op.schema.name == "_cross_entropy_index_backward":
            total = total.clamp(min=1)   # no row kept: a zero gradient, as that kernel gives
    call_args = list(args)
    call_args[:3] = g.reshape(-1), s.reshape(-1, s.shape[2]), t.reshape(-1)
    call_args[at] = 0
    return wrap_front(dispatcher.call(op, tuple(call_args)).view(s.shape), level)


def view_scatter_rule(op, args, level):
    """select_scatter / diagonal_scatter (the backward of select and diagonal): src, with fewer dims than self,
    written into a copy of self; both batch first, and the dims moved past the batch dim."""
    self, src = args[:2]
    if self.dim() == 0:
        return NotImplemented
    size = batch_size(op, args, level)
    call_args = [front_or_expanded(self, level, size), front_or_expanded(src, level, size), *args[2:]]
    for i, a in enumerate(op.schema.args):
        if a.name in ("dim", "dim1", "dim2"):
            call_args[i] = args[i] % self.dim() + 1
    return wrap_front(dispatcher.call(op, tuple(call_args)), level)


NN_GRAD_RULES = {"native_layer_norm": layer_norm_rule, "_layer_norm_input_backward": layer_norm_backward_rule,
                 "embedding": embedding_rule, "embedding_dense_backward": embedding_backward_rule,
                 "nll_loss_backward": class_index_loss_backward_rule,
                 "_cross_entropy_index_backward": class_index_loss_backward_rule,
                 "select_scatter": view_scatter_rule, "diagonal_scatter": view_scatter_rule,
                 **{name: spatial_backward_rule for name in SPATIAL_BACKWARD}}
