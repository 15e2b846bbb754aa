"""MultiheadAttention (torch.nn.MultiheadAttention): attention over several heads with learned projections.

The packed in_proj_weight (3·E, E) holds the query, key and value projections, or, when kdim/vdim differ from
embed_dim, q_proj_weight / k_proj_weight / v_proj_weight do; out_proj maps the concatenated heads back to E. The
computation is lantern.nn.functional.multi_head_attention_forward (one packed matmul for self-attention, all heads
in batched matmuls); batch_first inputs go through it without being transposed.

>>> import lantern
>>> attn = lantern.nn.MultiheadAttention(8, 2, batch_first=True)
>>> x = lantern.randn(3, 5, 8)                      # (batch, length, embed)
>>> out, weights = attn(x, x, x)
>>> out.shape, weights.shape
(lantern.Size([3, 5, 8]), lantern.Size([3, 5, 5]))
>>> [name for name, _ in attn.named_parameters()]
['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']
"""
import math
from typing import Optional, Tuple

import lantern
from ... import _functions as _fns
from ..._tensor import Tensor
from ...autograd.grad_mode import is_grad_enabled
from ...ops.nn_attention import _attention_forward, _canonical_mask, _none_or_dtype
from .. import functional as F, init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Multi-head attention: softmax(Q Kᵀ / √head_dim + mask) V per head, heads concatenated, then out_proj.

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) -> (output, weights or None); inputs are (L, N, E), (N, L, E) with
    batch_first, or unbatched (L, E). Bool masks mask where True; float masks are added to the scores.
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_fns.empty((3 * embed_dim, embed_dim), **factory))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(_fns.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(_fns.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(_fns.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_fns.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(_fns.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(_fns.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        for b in (self.bias_k, self.bias_v):
            if b is not None:
                init.xavier_normal_(b)

    def __setstate__(self, state):
        state.setdefault("_qkv_same_embed_dim", True)  # checkpoints from before kdim/vdim existed
        super().__setstate__(state)

    def forward(self, query, key, value, key_padding_mask: Optional[Tensor] = None, need_weights: bool = True,
                attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        if not lantern.jit.is_scripting():
            return self._forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                                 is_causal)
        return self._scripted_forward(query, key, value, key_padding_mask, need_weights, attn_mask,
                                      average_attn_weights, is_causal)

    def _forward(self, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                 is_causal):
        float_masks = any(m is not None and m.dtype.is_floating_point for m in (attn_mask, key_padding_mask))
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask),
                                           "attn_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        fused = not float_masks and self._fused_inference(query, key, value)
        return self._attend(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                            is_causal, fused)

    def _scripted_forward(self, query, key, value, key_padding_mask: Optional[Tensor], need_weights: bool,
                          attn_mask: Optional[Tensor], average_attn_weights: bool,
                          is_causal: bool) -> Tuple[Tensor, Optional[Tensor]]:
        """forward as TorchScript compiles it, in ops torch's script has too: the projections, each head's scaled
        dot products, the masks (bool: True is masked; float: added), softmax, dropout and out_proj. is_causal is
        a hint for the attn_mask given. bias_k/bias_v and add_zero_attn add a key and value position."""
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        tgt_len, bsz, embed_dim = query.size(0), query.size(1), query.size(2)
        src_len = key.size(0)
        heads, head_dim = self.num_heads, self.head_dim
        q_bias, k_bias, v_bias = None, None, None
        if self.in_proj_bias is not None:
            bias = self.in_proj_bias
            q_bias, k_bias, v_bias = bias[:embed_dim], bias[embed_dim:2 * embed_dim], bias[2 * embed_dim:]
        if self.in_proj_weight is not None:
            weight = self.in_proj_weight
            q_weight, k_weight, v_weight = weight[:embed_dim], weight[embed_dim:2 * embed_dim], weight[2 * embed_dim:]
        else:
            q_weight, k_weight, v_weight = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        q = F.linear(query, q_weight, q_bias).view(tgt_len, bsz * heads, head_dim).transpose(0, 1)
        k, v = F.linear(key, k_weight, k_bias), F.linear(value, v_weight, v_bias)
        if self.bias_k is not None and self.bias_v is not None:
            k = lantern.cat([k, self.bias_k.repeat(1, bsz, 1)])
            v = lantern.cat([v, self.bias_v.repeat(1, bsz, 1)])
            attn_mask, key_padding_mask = self._one_more_key(attn_mask), self._one_more_key(key_padding_mask)
            src_len += 1
        k = k.view(src_len, bsz * heads, head_dim).transpose(0, 1)
        v = v.view(src_len, bsz * heads, head_dim).transpose(0, 1)
        if self.add_zero_attn:
            k = lantern.cat([k, lantern.zeros(bsz * heads, 1, head_dim, dtype=k.dtype, device=k.device)], 1)
            v = lantern.cat([v, lantern.zeros(bsz * heads, 1, head_dim, dtype=v.dtype, device=v.device)], 1)
            attn_mask, key_padding_mask = self._one_more_key(attn_mask), self._one_more_key(key_padding_mask)
            src_len += 1
        scores = lantern.bmm(q * float(head_dim) ** -0.5, k.transpose(1, 2))
        if attn_mask is not None:
            scores = self._masked(scores, attn_mask)
        if key_padding_mask is not None:
            scores = self._masked(scores.view(bsz, heads, tgt_len, src_len),
                                  key_padding_mask.view(bsz, 1, 1, src_len))
            scores = scores.view(bsz * heads, tgt_len, src_len)
        weights = F.dropout(F.softmax(scores, -1), self.dropout, self.training)
        out = lantern.bmm(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias).view(tgt_len, bsz, embed_dim)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        returned_weights: Optional[Tensor] = None
        if need_weights:
            per_head = weights.view(bsz, heads, tgt_len, src_len)
            returned_weights = per_head.mean(1) if average_attn_weights else per_head
            if not batched:
                returned_weights = returned_weights.squeeze(0)
        return out, returned_weights

    def _one_more_key(self, mask: Optional[Tensor]) -> Optional[Tensor]:
        """A mask over the keys with one more key at the end, not masked (bias_k or the zero attention)."""
        if mask is None:
            return None
        return F.pad(mask, [0, 1])

    def _masked(self, scores, mask):
        """Attention scores with a mask applied: a bool mask puts -inf where it is True, a float mask is added."""
        if mask.is_floating_point():
            return scores + mask
        return scores.masked_fill(mask, -math.inf)

    def _fused_inference(self, query, key, value):
        """Whether PyTorch would run its fused inference kernel (same numbers, except NaN for rows whose keys are
        all masked): batch-first self-attention in eval mode with nothing requiring grad, among other conditions."""
        if (query.dim() != 3 or query is not key or key is not value or self.training or self.num_heads % 2
                or not self.batch_first or self.bias_k is not None or self.bias_v is not None or self.add_zero_attn
                or not self._qkv_same_embed_dim or self.in_proj_bias is None
                or query.dtype is not self.in_proj_weight.dtype or query.dtype is not self.in_proj_bias.dtype):
            return False
        tensors = (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight, self.out_proj.bias)
        return not (is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors))

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal,
                fused):
        separate = not self._qkv_same_embed_dim
        return _attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias, self.training,
            key_padding_mask, need_weights, attn_mask, separate, self.q_proj_weight if separate else None,
            self.k_proj_weight if separate else None, self.v_proj_weight if separate else None, None, None,
            average_attn_weights, is_causal, batch_first=self.batch_first, fused=fused)

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """(mask, type) as PyTorch's fused kernels take them: the padding mask alone (type 1), or the attention
        mask as (N, heads, L, L), plus the padding mask if given (type 2); (None, None) without masks."""
        merged, kind = None, None
        if key_padding_mask is not None:
            merged, kind = key_padding_mask, 1
        if attn_mask is not None:
            batch, length = query.shape[0], query.shape[1]
            if attn_mask.dim() == 3:
                merged = attn_mask.view(batch, -1, length, length)
            else:
                merged = attn_mask.view(1, 1, length, length).expand(batch, self.num_heads, -1, -1)
            if key_padding_mask is not None:
                merged = merged + key_padding_mask.view(batch, 1, 1, length).expand(-1, self.num_heads, -1, -1)
            kind = 2
        return merged, kind
