"""multi_head_attention_forward: PyTorch's multi-head attention as a composite of lantern ops.

The query, key and value are projected (one matmul for the packed q, k, v weights when query is key is value, two
when key is value), split into heads (batch, heads, length, head_dim), and every head is attended at once by batched
matmuls: softmax(q kᵀ / √head_dim + mask) v. Masks are canonical first, as PyTorch makes them: a bool mask becomes a
float one with -inf where True; key_padding_mask (N, S) and attn_mask ((L, S) or (N·heads, L, S)) are summed by
broadcasting into one additive mask. Autograd comes from the ops; the one op declared here, _mha_unpack (q, k, v
out of the packed projection), exists so that their gradients come back as one stack rather than three scatters
into zeros.

>>> F = lantern.nn.functional
>>> E, heads = 4, 2
>>> x = lantern.ones(3, 1, E)                       # (length, batch, embed)
>>> w_in, w_out = lantern.eye(E).repeat(3, 1), lantern.eye(E)
>>> out, weights = F.multi_head_attention_forward(x, x, x, E, heads, w_in, None, None, None, False, 0.0, w_out,
...                                                None, training=False)
>>> out.shape, weights.shape
(lantern.Size([3, 1, 4]), lantern.Size([1, 3, 3]))
>>> weights[0, 0].tolist()                          # equal keys: uniform attention
[0.3333333432674408, 0.3333333432674408, 0.3333333432674408]
"""
import math

from ..core import dtype as dt
from ..core import intra_op
from ..core.reference import specialisation
from .derivative import derivative
from .derivative_specialisation import on_float_arrays, specialise_derivative
from .call_by_name import call_op as _op
from .nn_misc import dropout as _dropout
from .registry import custom
from ..core.overridable import overridable
from ..core import user_warnings

__all__ = ["multi_head_attention_forward", "_canonical_mask", "_none_or_dtype", "_mha_shape_check"]


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the inputs are batched (3-D query) or not (2-D); AssertionError, as PyTorch raises, for bad ranks."""
    if query.dim() == 3:
        kind, mask_rank = "batched (3-D)", 2
    elif query.dim() == 2:
        kind, mask_rank = "unbatched (2-D)", 1
    else:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                             "tensor")
    if key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {query.dim()}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != mask_rank:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or {mask_rank}-D but "
                             f"found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.dim()}-D tensor instead")
        if query.dim() == 2 and attn_mask.dim() == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
    return query.dim() == 3


def _none_or_dtype(input):
    if input is None:
        return None
    if hasattr(input, "dtype") and hasattr(input, "_size"):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask as an additive float mask of target_type (-inf where True); float masks pass through. Warns,
    as PyTorch does, when the mask's dtype differs from its companion mask's."""
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype is not dt.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype is not other_type:
        user_warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.", UserWarning, stacklevel=2)
    if is_float:
        return mask
    return _op("zeros", tuple(mask.shape), target_type, None, mask.device, None).masked_fill_(mask, float("-inf"))


def _project(x, weight, bias):
    """x (..., in) @ weight.T + bias as one 2-D matmul over the flattened leading dims."""
    rows = x.reshape(-1, x.shape[-1])
    out = rows.matmul(weight.t()) if bias is None else _op("addmm", bias, rows, weight.t(), 1, 1)
    return out.view(tuple(x.shape[:-1]) + (weight.shape[0],))


def _heads(x, count, num_heads, batch_dim):
    """Projections (L, N, count·E) (or (N, L, ...) when batch_dim is 0) as `count` tensors (N, heads, L, head_dim):
    views for one or two, and for q, k, v the contiguous copies of _mha_unpack, whose backward is one stack."""
    split = x.view(x.shape[0], x.shape[1], count, num_heads, -1)
    split = split.permute(2, 1, 3, 0, 4) if batch_dim == 1 else split.permute(2, 0, 3, 1, 4)
    if count == 3:
        return list(_op("_mha_unpack", split))
    return [split[i] for i in range(count)]


def _copy_by_batch(xp, sources, targets):
    """Each source array copied into its target, by blocks of their leading (batch) dim on the intra-op threads
    where that pays (each element is copied once, so any split gives the same result)."""
    if not targets[0].size:
        return

    def copy(start, stop):
        for source, target in zip(sources, targets):
            xp.copyto(target[start:stop], source[start:stop])
    intra_op.parallel_chunks(len(targets[0]), copy, grain=intra_op.grain(len(targets) * targets[0][0].size))


def _unpack_kernel(backend, packed):
    """q, k, v: contiguous copies of packed[0], [1], [2]."""
    outs = tuple(backend.empty(packed._size[1:], packed.dtype) for _ in range(3))
    if backend.xp is not None and packed.numel():
        _copy_by_batch(backend.xp, backend.array(packed), [backend.array(out) for out in outs])
    return outs


def _memory_order(meta):
    """The packed projection's dims, outermost in memory first."""
    return sorted(range(len(meta.size)), key=lambda d: -meta.stride[d])


def _stack_grads(grads, meta):
    """The gradient of _mha_unpack: the outputs' gradients stacked (zeros for an output that got none), laid out
    in memory as the packed projection is, so that the permute and view back to the projection's gradient are
    views rather than a copy."""
    like = next(g for g in grads if g is not None)
    parts = [g if g is not None else _op("zeros", meta.size[1:], like.dtype, None, like.device, None)
             for g in grads]
    order = _memory_order(meta)
    stacked = _op("stack", [p.permute([d - 1 for d in order if d]) for p in parts], order.index(0))
    return stacked.permute([order.index(d) for d in range(len(order))])


def every_gradient_on_float_arrays(grads):
    """Whether _stack_grads_on_arrays serves: all three gradients present, float32/float64 on one array backend."""
    return all(g is not None for g in grads) and on_float_arrays(*grads)


@specialisation(replaces="_mha_unpack's derivative _stack_grads (permuted views, then the stack op)",
                when="backward without create_graph, fast paths on; every_gradient_on_float_arrays(grads)",
                parity_test="tests/test_nn_transformer.py::test_unpack_gradient_is_laid_out_as_the_projection",
                ops=("_mha_unpack",))
def _stack_grads_on_arrays(grads, meta):
    """_stack_grads as three array copies into one buffer in the projection's memory order, by blocks of the batch
    dim on the intra-op threads: the same values and strides."""
    backend = grads[0]._backend
    order = _memory_order(meta)
    buffer = backend.empty(tuple(meta.size[d] for d in order), grads[0].dtype)
    stacked = buffer.permute([order.index(d) for d in range(len(order))])
    _copy_by_batch(backend.xp, [backend.array(g) for g in grads], backend.array(stacked))
    return stacked


custom("_mha_unpack(Tensor packed) -> (Tensor, Tensor, Tensor)", _unpack_kernel, _unpack_kernel, method=False)
derivative("_mha_unpack", packed="_stack_grads(grads, packed_meta)", helpers={"_stack_grads": _stack_grads})
specialise_derivative("_mha_unpack", {
    "_stack_grads(grads, packed_meta)": ("_stack_grads_on_arrays(grads, packed_meta)",
                                         "every_gradient_on_float_arrays(grads)"),
}, helpers={"_stack_grads": _stack_grads, "_stack_grads_on_arrays": _stack_grads_on_arrays,
            "every_gradient_on_float_arrays": every_gradient_on_float_arrays})


def _check_in_projection(query, key, value, q_w, k_w, v_w, b_q, b_k, b_v):
    eq, ek, ev = query.shape[-1], key.shape[-1], value.shape[-1]
    for what, w, shape in (("query", q_w, (eq, eq)), ("key", k_w, (eq, ek)), ("value", v_w, (eq, ev))):
        if tuple(w.shape) != shape:
            raise AssertionError(f"expecting {what} weights shape of {shape}, but got {w.shape}")
    for what, b in (("query", b_q), ("key", b_k), ("value", b_v)):
        if b is not None and tuple(b.shape) != (eq,):
            raise AssertionError(f"expecting {what} bias shape of {(eq,)}, but got {b.shape}")


def _in_projection(query, key, value, num_heads, batch_dim, packed, separate, bias):
    """q, k, v as (N, heads, length, head_dim) views: one matmul when query is key is value (self-attention), a
    query and a key-value matmul when key is value, three otherwise."""
    if separate is None:
        E = query.shape[-1]
        if query is key and key is value:
            return _heads(_project(query, packed, bias), 3, num_heads, batch_dim)
        if key is value:
            w_q, w_kv = packed.split([E, 2 * E])
            b_q, b_kv = (None, None) if bias is None else bias.split([E, 2 * E])
            q = _heads(_project(query, w_q, b_q), 1, num_heads, batch_dim)
            return q + _heads(_project(key, w_kv, b_kv), 2, num_heads, batch_dim)
        weights = packed.chunk(3)
    else:
        weights = separate
    biases = (None, None, None) if bias is None else bias.chunk(3)
    if separate is not None:
        _check_in_projection(query, key, value, *weights, *biases)
    return [_heads(_project(x, w, b), 1, num_heads, batch_dim)[0]
            for x, w, b in zip((query, key, value), weights, biases)]


def _static(t, name, bsz, num_heads, head_dim):
    if t.shape[0] != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got {t.shape[0]}")
    if t.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.shape[2]}")
    return t.view(bsz, num_heads, t.shape[1], head_dim)


def _append_zero_key(t):
    zeros = _op("zeros", tuple(t.shape[:2]) + (1, t.shape[3]), t.dtype, None, t.device, None)
    return _op("cat", [t, zeros], 2)


def _pad_mask(mask):
    """One more (unmasked) key column."""
    return None if mask is None else _op("constant_pad_nd", mask, (0, 1), 0)


def _attend(q, k, v, mask, dropout_p, safe):
    """softmax(q kᵀ / √d + mask) v over (N, heads, ...) with the weights; `safe` gives rows whose keys are all masked
    zero weights (PyTorch's scaled_dot_product_attention) instead of NaN (its explicit-weights path)."""
    scores = (q * math.sqrt(1.0 / q.shape[-1])).matmul(k.transpose(-2, -1))
    dead = None
    if mask is not None:
        if safe and mask.device.type != "meta":  # (meta tensors have no values to look at)
            dead = (mask == float("-inf")).all(-1, True)
            if dead.any().item():
                mask = mask.masked_fill(dead, 0.0)
            else:
                dead = None
        scores = scores + mask
    weights = _op("softmax", scores, -1, None)
    if dead is not None:
        weights = weights.masked_fill(dead, 0.0)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, True)
    return weights.matmul(v), weights


def _causal_mask(length, source, like):
    full = _op("full", (length, source), float("-inf"), like.dtype, None, like.device, None)
    return full.triu(1)


def _multi_head_attention(query, key, value, num_heads, packed_weight, separate_weights, in_proj_bias, bias_k,
                          bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
                          key_padding_mask, need_weights, attn_mask, static_k, static_v, average_attn_weights,
                          is_causal, batch_dim, safe):
    """The computation behind multi_head_attention_forward, for batched 3-D inputs whose batch dim is batch_dim
    (1 as PyTorch's functional takes them, 0 for batch_first modules, which then need no transposes) and
    canonical (float) masks already checked. Returns (output in the query's layout, weights (N, heads, L, S))."""
    bsz = query.shape[batch_dim]
    tgt_len, embed_dim = query.shape[1 - batch_dim], query.shape[2]
    head_dim = embed_dim // num_heads
    q, k, v = _in_projection(query, key, value, num_heads, batch_dim, packed_weight, separate_weights, in_proj_bias)

    if attn_mask is not None:
        src_len = key.shape[1 - batch_dim]
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
            attn_mask = attn_mask.view(bsz, num_heads, tgt_len, src_len)
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _op("cat", [k, bias_k.view(1, 1, num_heads, head_dim).permute(0, 2, 1, 3).expand(bsz, -1, -1, -1)], 2)
        v = _op("cat", [v, bias_v.view(1, 1, num_heads, head_dim).permute(0, 2, 1, 3).expand(bsz, -1, -1, -1)], 2)
        attn_mask, key_padding_mask = _pad_mask(attn_mask), _pad_mask(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    if static_k is not None:
        k = _static(static_k, "static_k", bsz, num_heads, head_dim)
    if static_v is not None:
        v = _static(static_v, "static_v", bsz, num_heads, head_dim)
    if add_zero_attn:
        k, v = _append_zero_key(k), _append_zero_key(v)
        attn_mask, key_padding_mask = _pad_mask(attn_mask), _pad_mask(key_padding_mask)
    src_len = k.shape[2]

    mask = attn_mask
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        padding = key_padding_mask.view(bsz, 1, 1, src_len)
        mask = padding if mask is None else mask + padding
    elif is_causal and mask is None:
        mask = _causal_mask(tgt_len, src_len, q)

    out, weights = _attend(q, k, v, mask, dropout_p if training else 0.0, safe)
    # (N, heads, L, head_dim) -> the query's layout, heads side by side
    out = out.permute(2, 0, 1, 3) if batch_dim == 1 else out.permute(0, 2, 1, 3)
    out = _project(out.reshape(query.shape[0], query.shape[1], embed_dim), out_proj_weight, out_proj_bias)
    if not need_weights:
        return out, None
    return out, weights.mean(1) if average_attn_weights else weights


@overridable
def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention of query (L, N, E) over key (S, N, Ek) and value (S, N, Ev), or of unbatched (L, E),
    (S, Ek), (S, Ev). Returns (output (L, N, E), weights): (N, L, S) averaged over heads, (N, heads, L, S) if not
    average_attn_weights, None if not need_weights (the batch dim dropped for unbatched inputs)."""
    return _attention_forward(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
        add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask, need_weights,
        attn_mask, use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, static_k, static_v,
        average_attn_weights, is_causal)


def _attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
                       bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask,
                       need_weights, attn_mask, use_separate_proj_weight, q_proj_weight, k_proj_weight,
                       v_proj_weight, static_k, static_v, average_attn_weights, is_causal, batch_first=False,
                       fused=False):
    """multi_head_attention_forward, also for batch-first inputs (as MultiheadAttention(batch_first=True) gets
    them, computed without transposing) and for PyTorch's fused inference kernels (`fused`), which give rows whose
    keys are all masked NaN where its scaled_dot_product_attention path gives zeros."""
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    key_padding_mask, attn_mask, is_causal = _prepare_masks(key_padding_mask, attn_mask, query.dtype, is_causal,
                                                            need_weights)
    embed_dim = query.shape[2]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    if (embed_dim // num_heads) * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        separate = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        separate = None
    out, weights = _multi_head_attention(
        query, key, value, num_heads, in_proj_weight, separate, in_proj_bias, bias_k, bias_v, add_zero_attn,
        dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask, need_weights, attn_mask, static_k,
        static_v, average_attn_weights, is_causal, 0 if batched and batch_first else 1,
        not need_weights and not fused)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights


def _prepare_masks(key_padding_mask, attn_mask, dtype, is_causal, need_weights):
    """Canonical masks and the causal hint, as PyTorch settles them."""
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint stands for the mask
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    return key_padding_mask, attn_mask, is_causal
