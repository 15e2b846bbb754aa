"""The Transformer family (torch.nn.modules.transformer): encoder and decoder layers, their stacks, Transformer.

A layer is attention then a feed-forward block (linear1, activation, dropout, linear2), each wrapped in a residual
connection and a LayerNorm, after the block (post-norm, the default) or before it (norm_first). The stacks hold deep
copies of one layer in a ModuleList, so parameter names (layers.0.self_attn.in_proj_weight, layers.0.linear1.weight,
...) and state_dicts are PyTorch's.

PyTorch's inference fast paths (eval mode, nothing requiring grad) compute the same numbers as its training path,
with two observable differences that are reproduced here: rows whose keys are all masked come out NaN rather than
zero, and TransformerEncoder's nested-tensor path gives padded positions zeros.

>>> import lantern
>>> layer = lantern.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
>>> encoder = lantern.nn.TransformerEncoder(layer, num_layers=2)
>>> encoder(lantern.randn(3, 5, 8)).shape
lantern.Size([3, 5, 8])
>>> lantern.nn.Transformer.generate_square_subsequent_mask(3)
tensor([[0., -inf, -inf],
        [0., 0., -inf],
        [0., 0., 0.]])
"""
import copy
from typing import Optional

import lantern

from ... import _functions as _fns
from ..._tensor import Tensor
from ...autograd.grad_mode import is_grad_enabled
from ...ops.nn_attention import _canonical_mask, _none_or_dtype
from .. import functional as F, init
from .activation import GELU, ReLU
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .multihead_attention import MultiheadAttention
from .normalization import LayerNorm
from ...core import user_warnings

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    return _fns.full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _seq_len(src, batch_first):
    return src.shape[0] if src.dim() == 2 else src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """is_causal if given; otherwise whether mask is exactly the square subsequent mask (in its own dtype)."""
    if is_causal is not None or mask is None:
        return is_causal is True
    size = size if size is not None else mask.shape[-2]
    causal = _generate_square_subsequent_mask(size, device=mask.device, dtype=mask.dtype)
    return tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())


def _needs_grad(tensors):
    return is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _encoder_layer_tensors(layer):
    """The parameters PyTorch's fused encoder-layer kernels take, in its order (none may need grad for them)."""
    attn = layer.self_attn
    return (attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight, attn.out_proj.bias, layer.norm1.weight,
            layer.norm1.bias, layer.norm2.weight, layer.norm2.bias, layer.linear1.weight, layer.linear1.bias,
            layer.linear2.weight, layer.linear2.bias)


def _add_feed_forward_and_norms(layer, blocks, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias,
                                factory):
    """Register what both layer kinds have after their attention, in PyTorch's order (which fixes the parameter
    order and the random draws): linear1, dropout, linear2, then one LayerNorm per residual block (norm1, norm2,
    ...) and one Dropout per block (dropout1, dropout2, ...)."""
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
    layer.norm_first = norm_first
    for i in range(1, blocks + 1):
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
    for i in range(1, blocks + 1):
        setattr(layer, f"dropout{i}", Dropout(dropout))


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and LayerNorm.

    TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=relu,
    layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True); activation is 'relu', 'gelu' or a
    callable. forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False).
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        # linear1, dropout, linear2, norm1, norm2, dropout1, dropout2
        _add_feed_forward_and_norms(self, 2, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias,
                                    factory)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = F.relu

    def forward(self, src, src_mask: Optional[Tensor] = None, src_key_padding_mask: Optional[Tensor] = None,
                is_causal: bool = False):
        fused = False
        if not lantern.jit.is_scripting():  # TorchScript leaves bool masks to the attention, and has no fused kernel
            src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                                   _none_or_dtype(src_mask), "src_mask", src.dtype)
            src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
            fused = self._fused_inference(src)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal, fused)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal, fused))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _fused_inference(self, src):
        """Whether PyTorch would run this layer as one fused inference kernel (see the module docstring)."""
        attn = self.self_attn
        if (src.dim() != 3 or self.training or not attn.batch_first or attn.in_proj_bias is None
                or not attn._qkv_same_embed_dim or not self.activation_relu_or_gelu or self.norm1.eps != self.norm2.eps
                or attn.num_heads % 2 == 1):
            return False
        if any(len(getattr(m, "_forward_hooks", ())) + len(getattr(m, "_forward_pre_hooks", ()))
               for m in self.modules()):
            return False
        return not _needs_grad((src, *_encoder_layer_tensors(self)))

    def _sa_block(self, x, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor], is_causal: bool = False,
                  fused: bool = False):
        if not lantern.jit.is_scripting():
            if fused:  # PyTorch's fused kernel does not call self_attn (it has no hooks, or it would not be taken)
                x = self.self_attn._attend(x, x, x, key_padding_mask, False, attn_mask, True, is_causal, True)[0]
                return self.dropout1(x)
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory, and a feed-forward block, each with a residual
    connection and LayerNorm. forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False).
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **factory)
        # linear1, dropout, linear2, norm1, norm2, norm3, dropout1, dropout2, dropout3
        _add_feed_forward_and_norms(self, 3, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias,
                                    factory)
        self.activation = _get_activation_fn(activation) if isinstance(activation, str) else activation

    def __setstate__(self, state):
        state.setdefault("activation", F.relu)
        super().__setstate__(state)

    def forward(self, tgt, memory, tgt_mask: Optional[Tensor] = None, memory_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None, memory_key_padding_mask: Optional[Tensor] = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor], is_causal: bool = False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
                   is_causal: bool = False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _why_no_nested_tensor(layer):
    """Why TransformerEncoder cannot use PyTorch's nested-tensor inference path with this layer ('' if it can)."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    attn = layer.self_attn
    for failed, why in ((layer.norm_first, "norm_first was True"),
                        (not attn.batch_first,
                         "self_attn.batch_first was not True(use batch_first for better inference performance)"),
                        (not attn._qkv_same_embed_dim, "self_attn._qkv_same_embed_dim was not True"),
                        (attn.in_proj_bias is None, "self_attn was passed bias=False"),
                        (not layer.activation_relu_or_gelu, "activation_relu_or_gelu was not True"),
                        (layer.norm1.eps != layer.norm2.eps, f"norm1.eps was not equal to {name}.norm2.eps"),
                        (attn.num_heads % 2 == 1, "self_attn.num_heads is odd")):
        if failed:
            return f"{name}.{why}"
    return ""


class TransformerEncoder(Module):
    """A stack of num_layers deep copies of encoder_layer, then `norm` if given.

    TransformerEncoder(encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True);
    forward(src, mask=None, src_key_padding_mask=None, is_causal=None).
    """

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_no_nested_tensor(encoder_layer)
        if enable_nested_tensor and why_not:
            user_warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why_not}",
                          UserWarning, stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src, mask: Optional[Tensor] = None, src_key_padding_mask: Optional[Tensor] = None,
                is_causal: Optional[bool] = None):
        if not lantern.jit.is_scripting():
            return self._forward(src, mask, src_key_padding_mask, is_causal)
        return self._scripted_forward(src, mask, src_key_padding_mask, is_causal)

    def _scripted_forward(self, src, mask: Optional[Tensor], src_key_padding_mask: Optional[Tensor],
                          is_causal: Optional[bool]):
        """forward as TorchScript compiles it: the layers, then the norm. PyTorch's nested-tensor inference path
        (padded positions come out zero) is not compiled: where eager code may take it, this raises."""
        if self.use_nested_tensor and not self.training and src.dim() == 3 and src_key_padding_mask is not None \
                and mask is None:
            raise RuntimeError("lantern's TorchScript of TransformerEncoder does not run PyTorch's nested-tensor "
                               "inference path (a src_key_padding_mask in eval mode with use_nested_tensor); build "
                               "the encoder with enable_nested_tensor=False")
        causal = False
        if is_causal is not None:
            causal = is_causal
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=causal)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _forward(self, src, mask, src_key_padding_mask, is_causal):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", _none_or_dtype(mask),
                                               "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        first = self.layers[0]
        padding = self._nested_padding(src, mask, src_key_padding_mask)
        layer_padding_mask = src_key_padding_mask if padding is None else padding
        is_causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, first.self_attn.batch_first))
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=layer_padding_mask)
        if padding is not None:
            output = output.masked_fill(padding.unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _nested_padding(self, src, mask, key_padding_mask):
        """Where PyTorch would pack src into a nested tensor (inference with a padding mask), the padded positions
        it drops (N, S) as bool: each sequence keeps its first (number of unpadded) tokens; else None."""
        first = self.layers[0]
        if (not getattr(self, "use_nested_tensor", False) or first.training or src.dim() != 3
                or key_padding_mask is None or mask is not None):
            return None
        keep = key_padding_mask == 0
        lengths = keep.sum(1, keepdim=True)
        positions = _fns.arange(src.shape[1], device=src.device).unsqueeze(0)
        if getattr(self, "mask_check", True) and not bool((keep == (positions < lengths)).all()):
            return None  # not left-aligned: PyTorch runs the padded batch as it is
        if _needs_grad((src, *_encoder_layer_tensors(first))):
            return None
        return positions >= lengths


class TransformerDecoder(Module):
    """A stack of num_layers deep copies of decoder_layer, then `norm` if given. forward(tgt, memory,
    tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=None,
    memory_is_causal=False).
    """

    __constants__ = ["norm"]

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask: Optional[Tensor] = None, memory_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None, memory_key_padding_mask: Optional[Tensor] = None,
                tgt_is_causal: Optional[bool] = None, memory_is_causal: bool = False):
        causal = False
        if not lantern.jit.is_scripting():  # TorchScript takes the hint as given: the masks apply either way
            causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal,
                                            _seq_len(tgt, self.layers[0].self_attn.batch_first))
        elif tgt_is_causal is not None:
            causal = tgt_is_causal
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=causal,
                           memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need".

    Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
    dropout=0.1, activation=relu, custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
    batch_first=False, norm_first=False, bias=True); forward(src, tgt, src_mask, tgt_mask, memory_mask,
    src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask, src_is_causal, tgt_is_causal,
    memory_is_causal). Every parameter with more than one dim is re-drawn with xavier_uniform_.
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                      bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask: Optional[Tensor] = None, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None, src_key_padding_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None, memory_key_padding_mask: Optional[Tensor] = None,
                src_is_causal: Optional[bool] = None, tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False):
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """An (sz, sz) float mask with -inf above the diagonal and 0 elsewhere: position i sees positions <= i."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
