"""MultiheadAttention, multi_head_attention_forward and the Transformer family against torch.

Every layer is built in both libraries with torch's weights (nn_oracle.check_module): outputs, input gradients and
parameter gradients must agree. Dropout is 0 (or the module is in eval mode) so results are deterministic.
"""
import copy
import warnings

import numpy as np
import pytest
import torch

import lantern
from deliberate_differences import DIFFERENCES
from nn_oracle import check_module, same_weights
from oracle import as_numpy, assert_same, check, raises_like

E, HEADS = 8, 2
TOL = {"atol": 2e-5, "rtol": 1e-4}
_rng = np.random.default_rng(0)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _randn(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


X = _randn(5, 3, E)             # (L, N, E)
KV = _randn(4, 3, E)            # (S, N, E)
X_BF = _randn(3, 5, E)          # (N, L, E)
KPM = np.array([[False, False, True, False], [True, False, False, False], [False, False, False, False]])
AMASK = np.array([[False, True, False, False], [False, False, False, True], [True, False, False, False],
                  [False, False, True, False], [False, False, False, False]])
FLOAT_AMASK = _randn(5, 4)
FLOAT_AMASK_3D = _randn(3 * HEADS, 5, 4)


def _self(m, x, **kw):
    return m(x, x, x, **kw)


def _cross(m, q, kv, **kw):
    return m(q, kv, kv, **kw)


# ---- MultiheadAttention -----------------------------------------------------------------------------------------

MHA_CASES = {
    "self": (lambda nn: nn.MultiheadAttention(E, HEADS), _self, X),
    "self_no_weights": (lambda nn: nn.MultiheadAttention(E, HEADS), lambda m, x: _self(m, x, need_weights=False), X),
    "self_per_head_weights": (lambda nn: nn.MultiheadAttention(E, HEADS),
                              lambda m, x: _self(m, x, average_attn_weights=False), X),
    "cross": (lambda nn: nn.MultiheadAttention(E, HEADS), _cross, X, KV),
    "cross_no_weights": (lambda nn: nn.MultiheadAttention(E, HEADS),
                         lambda m, q, kv: _cross(m, q, kv, need_weights=False), X, KV),
    "separate_qkv": (lambda nn: nn.MultiheadAttention(E, HEADS), lambda m, q, k, v: m(q, k, v), X, KV, _randn(4, 3, E)),
    "kdim_vdim": (lambda nn: nn.MultiheadAttention(E, HEADS, kdim=5, vdim=3), lambda m, q, k, v: m(q, k, v),
                  X, _randn(4, 3, 5), _randn(4, 3, 3)),
    "kdim_vdim_no_bias": (lambda nn: nn.MultiheadAttention(E, HEADS, bias=False, kdim=6, vdim=6),
                          lambda m, q, kv: m(q, kv, kv, need_weights=False), X, _randn(4, 3, 6)),
    "no_bias": (lambda nn: nn.MultiheadAttention(E, HEADS, bias=False), _self, X),
    "add_bias_kv": (lambda nn: nn.MultiheadAttention(E, HEADS, add_bias_kv=True),
                    lambda m, q, kv: _cross(m, q, kv, key_padding_mask=lantern_or_torch(m).tensor(KPM)), X, KV),
    "add_zero_attn": (lambda nn: nn.MultiheadAttention(E, HEADS, add_zero_attn=True),
                      lambda m, q, kv, a: _cross(m, q, kv, attn_mask=a), X, KV, FLOAT_AMASK),
    "bias_kv_zero_attn_3d_mask": (lambda nn: nn.MultiheadAttention(E, HEADS, add_bias_kv=True, add_zero_attn=True),
                                  lambda m, q, kv, a: _cross(m, q, kv, attn_mask=a, need_weights=False),
                                  X, KV, FLOAT_AMASK_3D),
    "kpm_bool": (lambda nn: nn.MultiheadAttention(E, HEADS), lambda m, q, kv, p: _cross(m, q, kv, key_padding_mask=p),
                 X, KV, KPM),
    "kpm_float": (lambda nn: nn.MultiheadAttention(E, HEADS),
                  lambda m, q, kv, p: _cross(m, q, kv, key_padding_mask=p), X, KV, _randn(3, 4)),
    "attn_mask_bool": (lambda nn: nn.MultiheadAttention(E, HEADS),
                       lambda m, q, kv, a: _cross(m, q, kv, attn_mask=a), X, KV, AMASK),
    "attn_mask_float": (lambda nn: nn.MultiheadAttention(E, HEADS),
                        lambda m, q, kv, a: _cross(m, q, kv, attn_mask=a, average_attn_weights=False),
                        X, KV, FLOAT_AMASK),
    "attn_mask_3d": (lambda nn: nn.MultiheadAttention(E, HEADS),
                     lambda m, q, kv, a: _cross(m, q, kv, attn_mask=a), X, KV, FLOAT_AMASK_3D),
    "both_masks_bool": (lambda nn: nn.MultiheadAttention(E, HEADS),
                        lambda m, q, kv, a, p: _cross(m, q, kv, attn_mask=a, key_padding_mask=p), X, KV, AMASK, KPM),
    "both_masks_no_weights": (lambda nn: nn.MultiheadAttention(E, HEADS),
                              lambda m, q, kv, a, p: _cross(m, q, kv, attn_mask=a, key_padding_mask=p,
                                                            need_weights=False), X, KV, AMASK, KPM),
    "causal_hint": (lambda nn: nn.MultiheadAttention(E, HEADS),
                    lambda m, x: _self(m, x, attn_mask=lantern_or_torch(m).nn.Transformer
                                       .generate_square_subsequent_mask(5), is_causal=True, need_weights=False), X),
    "batch_first_self": (lambda nn: nn.MultiheadAttention(E, HEADS, batch_first=True), _self, X_BF),
    "batch_first_cross_masks": (lambda nn: nn.MultiheadAttention(E, HEADS, batch_first=True),
                                lambda m, q, kv, p: _cross(m, q, kv, key_padding_mask=p, need_weights=False),
                                X_BF, _randn(3, 4, E), KPM),
    "batch_first_kdim": (lambda nn: nn.MultiheadAttention(E, HEADS, batch_first=True, kdim=3, vdim=5),
                         lambda m, q, k, v: m(q, k, v, average_attn_weights=False), X_BF, _randn(3, 4, 3),
                         _randn(3, 4, 5)),
    "unbatched": (lambda nn: nn.MultiheadAttention(E, HEADS, batch_first=True), _self, _randn(5, E)),
    "unbatched_masks": (lambda nn: nn.MultiheadAttention(E, HEADS),
                        lambda m, q, kv, a, p: _cross(m, q, kv, attn_mask=a, key_padding_mask=p,
                                                      average_attn_weights=False),
                        _randn(5, E), _randn(4, E), _randn(HEADS, 5, 4), _randn(4)),
    "float64": (lambda nn: nn.MultiheadAttention(E, HEADS, dtype=torch.float64 if nn is torch.nn else lantern.float64),
                _self, X.astype(np.float64)),
}


def lantern_or_torch(module):
    return torch if isinstance(module, torch.nn.Module) else lantern


def _eval_both(make, run, grad=False):
    """run(lib, module) for torch's make(torch) and lantern's make(lantern) (torch's weights, eval mode, grad mode
    `grad`): [torch's result, lantern's]."""
    torch.manual_seed(0)
    modules = {torch: make(torch).eval(), lantern: make(lantern).eval()}
    same_weights(modules[torch], modules[lantern])
    results = []
    for lib, m in modules.items():
        with lib.set_grad_enabled(grad), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append(run(lib, m))
    return results


@pytest.mark.parametrize("name", MHA_CASES)
def test_multihead_attention_matches_torch(name):
    make, call, *inputs = MHA_CASES[name]
    batch_first = name.startswith("batch_first")
    assert not batch_first or DIFFERENCES["MultiheadAttention batch_first output layout"]
    check_module(make, *inputs, call=call, strides=not batch_first, **TOL)


def test_multihead_attention_eval_and_training_dropout():
    # eval: dropout is off; training: the returned weights are the dropped ones, each 0 or scaled by 1 / (1 - p)
    check_module(lambda nn: nn.MultiheadAttention(E, HEADS, dropout=0.5), X, call=_self, train=False, **TOL)
    m = lantern.nn.MultiheadAttention(E, HEADS, dropout=0.5)
    x = lantern.tensor(X)
    m.eval()
    _, plain = m(x, x, x, average_attn_weights=False)
    m.train()
    _, dropped = m(x, x, x, average_attn_weights=False)
    plain, dropped = as_numpy(plain), as_numpy(dropped)
    kept = dropped != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(dropped[kept], plain[kept] * 2, rtol=1e-5)


def test_multihead_attention_fully_masked_rows():
    """torch gives NaN for a sequence whose keys are all padding on its explicit-weights path (and in its fused
    inference kernel), zeros on its scaled_dot_product_attention path; lantern follows each."""
    kpm = np.array([[True] * 4, [False, True, False, False], [False] * 4])
    q = _randn(3, 5, E)
    kv = _randn(3, 4, E)
    for need_weights in (True, False):
        check_module(lambda nn: nn.MultiheadAttention(E, HEADS, batch_first=True), q, kv, kpm, grad=False,
                     call=lambda m, q, kv, p: m(q, kv, kv, key_padding_mask=p, need_weights=need_weights),
                     strides=not DIFFERENCES["MultiheadAttention batch_first output layout"], **TOL)
    x = _randn(3, 4, E)
    outs = _eval_both(lambda lib: lib.nn.MultiheadAttention(E, HEADS, batch_first=True),
                      lambda lib, m: m(*[lib.tensor(x)] * 3, key_padding_mask=lib.tensor(kpm),
                                       need_weights=False)[0])
    assert np.isnan(as_numpy(outs[0])[0]).all()
    assert_same(outs[1], outs[0], strides=False, **TOL)


def test_multihead_attention_parameters_and_init():
    for kwargs in ({}, {"kdim": 3, "vdim": 5, "add_bias_kv": True}, {"bias": False}):
        tm, lm = torch.nn.MultiheadAttention(E, HEADS, **kwargs), lantern.nn.MultiheadAttention(E, HEADS, **kwargs)
        assert list(lm.state_dict()) == list(tm.state_dict())
        assert [n for n, _ in lm.named_parameters()] == [n for n, _ in tm.named_parameters()]
        assert type(lm.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
        assert isinstance(lm.out_proj, lantern.nn.Linear)
        assert repr(lm) == repr(tm)
    m = lantern.nn.MultiheadAttention(64, 4)
    bound = (6 / (64 + 3 * 64)) ** 0.5  # xavier_uniform_ on (3E, E)
    w = as_numpy(m.in_proj_weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not as_numpy(m.in_proj_bias).any() and not as_numpy(m.out_proj.bias).any()
    for attr in ("embed_dim", "kdim", "vdim", "num_heads", "head_dim", "batch_first", "dropout", "_qkv_same_embed_dim",
                 "add_zero_attn"):
        assert getattr(m, attr) == getattr(torch.nn.MultiheadAttention(64, 4), attr)


def test_multihead_attention_mismatched_mask_warning():
    messages = []
    for lib in (torch, lantern):
        m = lib.nn.MultiheadAttention(E, HEADS)
        x = lib.tensor(X)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m(x, x, x, key_padding_mask=lib.tensor(KPM[:, :1].repeat(5, 1)), attn_mask=lib.zeros(5, 5))
        messages.append([str(w.message) for w in caught if "mismatched" in str(w.message)])
    assert messages[0] == messages[1] and len(messages[0]) == 1


def test_merge_masks_matches_torch():
    am, kpm = np.zeros((5, 5), np.float32), _randn(3, 5)
    am[0, 1] = -np.inf
    for a, p in ((am, None), (None, kpm), (am, kpm), (_randn(3 * HEADS, 5, 5), kpm)):
        check(lambda lib, q, *masks: lib.nn.MultiheadAttention(E, HEADS, batch_first=True).merge_masks(
            *[None if m is None else masks[i] for i, m in enumerate((a, p))], q), X_BF,
            *(m if m is not None else np.zeros(1, np.float32) for m in (a, p)), strides=False)


# ---- the functional form ----------------------------------------------------------------------------------------

def _mha_fn(**kwargs):
    """F.multi_head_attention_forward over numpy weights, with keyword arguments given as arrays or values."""
    def fn(lib, q, k, v, w_in, b_in, w_out, b_out, *extra):
        extra_kw = dict(zip(kwargs["tensors"], extra)) if "tensors" in kwargs else {}
        plain = {key: val for key, val in kwargs.items() if key != "tensors"}
        return lib.nn.functional.multi_head_attention_forward(
            q, k, v, E, HEADS, w_in, b_in, plain.pop("bias_k", None), plain.pop("bias_v", None),
            plain.pop("add_zero_attn", False), 0.0, w_out, b_out, **plain, **extra_kw)
    return fn


W_IN, B_IN, W_OUT, B_OUT = _randn(3 * E, E) * 0.3, _randn(3 * E), _randn(E, E) * 0.3, _randn(E)
FN_INPUTS = (X, KV, KV, W_IN, B_IN, W_OUT, B_OUT)


@pytest.mark.parametrize("kwargs", [
    {},
    {"need_weights": False, "training": False},
    {"average_attn_weights": False},
    {"tensors": ("static_k", "static_v")},
    {"use_separate_proj_weight": True, "tensors": ("q_proj_weight", "k_proj_weight", "v_proj_weight")},
    {"tensors": ("key_padding_mask", "attn_mask")},
], ids=["plain", "no_weights", "per_head", "static_kv", "separate", "masks"])
def test_functional_matches_torch(kwargs):
    extra = {"static_k": _randn(3 * HEADS, 6, E // HEADS), "static_v": _randn(3 * HEADS, 6, E // HEADS),
             "q_proj_weight": _randn(E, E), "k_proj_weight": _randn(E, E), "v_proj_weight": _randn(E, E),
             "key_padding_mask": KPM, "attn_mask": FLOAT_AMASK}
    check(_mha_fn(**kwargs), *FN_INPUTS, *[extra[n] for n in kwargs.get("tensors", ())], strides=False, **TOL)


MHA_ERRORS = {
    "query_4d": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(1, 2, 3, E)),
    "key_rank": lambda lib: lib.nn.MultiheadAttention(E, HEADS)(lib.zeros(5, 2, E), lib.zeros(4, E), lib.zeros(4, E)),
    "unbatched_key_rank": lambda lib: lib.nn.MultiheadAttention(E, HEADS)(lib.zeros(5, E), lib.zeros(4, 1, E),
                                                                          lib.zeros(4, 1, E)),
    "kpm_rank": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E),
                                  key_padding_mask=lib.zeros(5, dtype=lib.bool)),
    "attn_mask_rank": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E),
                                        attn_mask=lib.zeros(5, dtype=lib.bool)),
    "unbatched_3d_mask_shape": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, E),
                                                 attn_mask=lib.zeros(3, 5, 5)),
    "embed_dim": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E + 2)),
    "int_mask": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E),
                                  attn_mask=lib.zeros(5, 5, dtype=lib.int64)),
    "2d_mask_shape": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E),
                                       attn_mask=lib.zeros(4, 5)),
    "3d_mask_shape": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E),
                                       attn_mask=lib.zeros(2, 5, 5)),
    "kpm_batch": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E),
                                   key_padding_mask=lib.zeros(3, 5, dtype=lib.bool)),
    "kpm_length": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E),
                                    key_padding_mask=lib.zeros(2, 4, dtype=lib.bool)),
    "causal_without_mask": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E),
                                             is_causal=True),
    "key_value_shapes": lambda lib: lib.nn.MultiheadAttention(E, HEADS)(lib.zeros(5, 2, E), lib.zeros(4, 2, E),
                                                                        lib.zeros(3, 2, E)),
    "kdim_shape": lambda lib: lib.nn.MultiheadAttention(E, HEADS, kdim=3)(lib.zeros(5, 2, E), lib.zeros(4, 2, 4),
                                                                          lib.zeros(4, 2, E)),
    "dtype_mismatch": lambda lib: _self(lib.nn.MultiheadAttention(E, HEADS), lib.zeros(5, 2, E, dtype=lib.float64)),
    "zero_heads": lambda lib: lib.nn.MultiheadAttention(E, 0),
    "indivisible_heads": lambda lib: lib.nn.MultiheadAttention(E, 3),
    "functional_indivisible": lambda lib: lib.nn.functional.multi_head_attention_forward(
        lib.zeros(5, 2, 9), lib.zeros(5, 2, 9), lib.zeros(5, 2, 9), 9, 2, lib.zeros(27, 9), None, None, None,
        False, 0.0, lib.zeros(9, 9), None),
    "bias_k_without_bias_v": lambda lib: lib.nn.functional.multi_head_attention_forward(
        lib.zeros(5, 2, E), lib.zeros(5, 2, E), lib.zeros(5, 2, E), E, 2, lib.zeros(3 * E, E), None,
        lib.zeros(1, 1, E), None, False, 0.0, lib.zeros(E, E), None),
}


@pytest.mark.parametrize("name", MHA_ERRORS)
def test_multihead_attention_errors_match_torch(name):
    torch_msg, lantern_msg = raises_like(MHA_ERRORS[name])
    if "Expected" in torch_msg or "expected" in torch_msg:
        assert lantern_msg.split(" but ")[0] == torch_msg.split(" but ")[0].replace("torch.", "lantern.")


# ---- encoder and decoder layers ---------------------------------------------------------------------------------

def _layer_kwargs(**kw):
    return dict({"dim_feedforward": 16, "dropout": 0.0}, **kw)


SRC, TGT = _randn(5, 3, E), _randn(4, 3, E)
SRC_KPM = np.array([[False] * 5, [False, False, False, True, True], [False, True, False, False, False]])
TGT_KPM = np.array([[False] * 4, [False, False, True, True], [True, False, False, False]])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
def test_encoder_layer_matches_torch(norm_first, activation):
    def make(nn):
        act = (lambda x: x.tanh()) if activation == "callable" else activation
        return nn.TransformerEncoderLayer(E, HEADS, activation=act, norm_first=norm_first, **_layer_kwargs())
    check_module(make, SRC, **TOL)
    check_module(make, SRC, SRC_KPM, np.triu(np.ones((5, 5), bool), 1), **TOL,
                 call=lambda m, x, p, a: m(x, src_mask=a, src_key_padding_mask=p))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first):
    make = lambda nn: nn.TransformerDecoderLayer(E, HEADS, activation="gelu", norm_first=norm_first,  # noqa: E731
                                                 **_layer_kwargs())
    check_module(make, TGT, SRC, **TOL)
    check_module(make, TGT, SRC, TGT_KPM, SRC_KPM, _randn(4, 5), **TOL,
                 call=lambda m, t, s, tp, sp, mm: m(t, s, tgt_mask=m_causal(m, 4), memory_mask=mm,
                                                    tgt_key_padding_mask=tp, memory_key_padding_mask=sp,
                                                    tgt_is_causal=True))


def m_causal(module, size):
    return lantern_or_torch(module).nn.Transformer.generate_square_subsequent_mask(size)


def test_layers_batch_first_and_unbatched():
    for make in (lambda nn: nn.TransformerEncoderLayer(E, HEADS, batch_first=True, **_layer_kwargs()),):
        check_module(make, _randn(3, 5, E), **TOL)
        check_module(make, _randn(5, E), **TOL)
    make = lambda nn: nn.TransformerDecoderLayer(E, HEADS, batch_first=True, bias=False, **_layer_kwargs())  # noqa
    check_module(make, _randn(3, 4, E), _randn(3, 5, E), **TOL)


def test_layer_eval_with_default_dropout():
    check_module(lambda nn: nn.TransformerEncoderLayer(E, HEADS, 16), SRC, train=False, **TOL)
    check_module(lambda nn: nn.TransformerDecoderLayer(E, HEADS, 16), TGT, SRC, train=False, **TOL)


def test_encoder_layer_inference_paths():
    """In eval mode without grad, torch runs a fused kernel (NaN for a fully padded sequence); with grad, the
    layer's own modules (zeros there)."""
    kpm = np.array([[True] * 5, [False, False, True, True, True], [False] * 5])
    x = _randn(3, 5, E)
    for grad in (False, True):
        for batch_first in (True, False):
            src = x if batch_first else x.transpose(1, 0, 2).copy()
            results = _eval_both(lambda lib: lib.nn.TransformerEncoderLayer(E, HEADS, 16, batch_first=batch_first),
                                 lambda lib, m: m(lib.tensor(src), src_key_padding_mask=lib.tensor(kpm)), grad)
            assert np.isnan(as_numpy(results[0])).any() == (batch_first and not grad)
            assert_same(results[1], results[0], strides=False, **TOL)


# ---- stacks and the whole Transformer ---------------------------------------------------------------------------

def test_encoder_matches_torch():
    def make(nn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, **_layer_kwargs()), 2, nn.LayerNorm(E))
    check_module(make, SRC, **TOL)
    check_module(make, SRC, SRC_KPM, call=lambda m, x, p: m(x, mask=m_causal(m, 5), src_key_padding_mask=p), **TOL)


def test_encoder_nested_tensor_inference():
    """torch's nested-tensor inference path (batch_first, eval, no grad, left-aligned padding) gives padded
    positions zeros before the final norm; so does lantern."""
    kpm = np.array([[False, False, False, True, True], [False] * 5, [False, True, True, True, True]])
    x = _randn(3, 5, E)
    results = _eval_both(
        lambda lib: lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(E, HEADS, 16, batch_first=True), 2),
        lambda lib, m: m(lib.tensor(x), src_key_padding_mask=lib.tensor(kpm)))
    assert not as_numpy(results[0])[0, 3:].any()
    assert_same(results[1], results[0], strides=False, **TOL)


def test_encoder_nested_tensor_warning_and_clones():
    layer = lantern.nn.TransformerEncoderLayer(E, HEADS, 16)
    messages = []
    for lib, lay in ((torch, torch.nn.TransformerEncoderLayer(E, HEADS, 16)), (lantern, layer)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enc = lib.nn.TransformerEncoder(lay, 3)
        messages.append([str(w.message) for w in caught])
        assert enc.use_nested_tensor is False and enc.enable_nested_tensor is True
    assert messages[0] == messages[1] and len(messages[0]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lantern.nn.TransformerEncoder(lantern.nn.TransformerEncoderLayer(E, HEADS, 16, batch_first=True), 2)
        lantern.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    w0, w1 = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert w0 is not w1 and w0 is not layer.linear1.weight
    assert as_numpy(w0).tolist() == as_numpy(layer.linear1.weight).tolist()
    assert isinstance(enc.layers, lantern.nn.ModuleList) and len(enc.layers) == 3


def test_decoder_matches_torch():
    make = lambda nn: nn.TransformerDecoder(nn.TransformerDecoderLayer(E, HEADS, **_layer_kwargs()), 2,  # noqa
                                            nn.LayerNorm(E))
    check_module(make, TGT, SRC, TGT_KPM,
                 call=lambda m, t, s, p: m(t, s, tgt_mask=m_causal(m, 4), tgt_key_padding_mask=p), **TOL)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(batch_first):
    make = lambda nn: nn.Transformer(E, HEADS, 2, 1, 16, dropout=0.0, batch_first=batch_first)  # noqa: E731
    src, tgt = (SRC, TGT) if not batch_first else (SRC.transpose(1, 0, 2), TGT.transpose(1, 0, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_module(make, src, tgt, SRC_KPM, TGT_KPM, **TOL,
                     call=lambda m, s, t, sp, tp: m(s, t, tgt_mask=m.generate_square_subsequent_mask(4),
                                                    src_key_padding_mask=sp, tgt_key_padding_mask=tp,
                                                    memory_key_padding_mask=sp))
        check_module(make, src, tgt, _randn(5, 5), _randn(4, 5), **TOL,
                     call=lambda m, s, t, sm, mm: m(s, t, src_mask=sm, memory_mask=mm))


def test_transformer_custom_parts_and_init():
    encoder = lantern.nn.TransformerEncoder(lantern.nn.TransformerEncoderLayer(E, HEADS, 16), 1,
                                            enable_nested_tensor=False)
    decoder = lantern.nn.TransformerDecoder(lantern.nn.TransformerDecoderLayer(E, HEADS, 16), 1)
    model = lantern.nn.Transformer(E, HEADS, custom_encoder=encoder, custom_decoder=decoder)
    assert model.encoder is encoder and model.decoder is decoder
    assert (model.d_model, model.nhead, model.batch_first) == (E, HEADS, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lantern.nn.Transformer(32, 2, 1, 1, 64)
    bound = (6 / (64 + 32)) ** 0.5  # every matrix is re-drawn with xavier_uniform_: linear1 is (64, 32)
    w = as_numpy(model.encoder.layers[0].linear1.weight)
    assert 0.9 * bound < np.abs(w).max() <= bound


def test_state_dict_keys_match_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (lambda nn: nn.Transformer(E, HEADS, 2, 2, 16),
                     lambda nn: nn.Transformer(E, HEADS, 1, 1, 16, bias=False, norm_first=True),
                     lambda nn: nn.TransformerDecoderLayer(E, HEADS, 16)):
            tm, lm = make(torch.nn), make(lantern.nn)
            assert list(lm.state_dict()) == list(tm.state_dict())
            assert {k: tuple(v.shape) for k, v in lm.state_dict().items()} == \
                {k: tuple(v.shape) for k, v in tm.state_dict().items()}
            same_weights(tm, lm)  # strict load of torch's weights
            back = {k: torch.tensor(as_numpy(v)) for k, v in lm.state_dict().items()}
            tm.load_state_dict(back)


def test_generate_square_subsequent_mask_and_causal_detection():
    check(lambda lib: lib.nn.Transformer.generate_square_subsequent_mask(4))
    check(lambda lib: lib.nn.Transformer.generate_square_subsequent_mask(3, dtype=lib.float64))
    from lantern.nn.modules.transformer import _detect_is_causal_mask
    from torch.nn.modules.transformer import _detect_is_causal_mask as torch_detect
    for mask in (np.triu(np.full((4, 4), -np.inf, np.float32), 1), np.triu(np.ones((4, 4), bool), 1),
                 np.zeros((4, 4), np.float32), np.triu(np.full((3, 3), -np.inf, np.float32), 1)):
        for is_causal in (None, False, True):
            assert _detect_is_causal_mask(lantern.tensor(mask), is_causal, 4) == \
                torch_detect(torch.tensor(mask), is_causal, 4)


TRANSFORMER_ERRORS = {
    "activation": lambda lib: lib.nn.TransformerEncoderLayer(E, HEADS, activation="tanh"),
    "decoder_activation": lambda lib: lib.nn.TransformerDecoderLayer(E, HEADS, activation="swish"),
    "batch_mismatch": lambda lib: lib.nn.Transformer(E, HEADS, 1, 1, 16)(lib.zeros(5, 2, E), lib.zeros(4, 3, E)),
    "batch_first_mismatch": lambda lib: lib.nn.Transformer(E, HEADS, 1, 1, 16, batch_first=True)(
        lib.zeros(2, 5, E), lib.zeros(3, 4, E)),
    "feature_mismatch": lambda lib: lib.nn.Transformer(E, HEADS, 1, 1, 16)(lib.zeros(5, 2, E), lib.zeros(4, 2, 4)),
    "int_padding_mask": lambda lib: lib.nn.TransformerEncoderLayer(E, HEADS, 16)(
        lib.zeros(5, 2, E), src_key_padding_mask=lib.zeros(2, 5, dtype=lib.int32)),
}


@pytest.mark.parametrize("name", TRANSFORMER_ERRORS)
def test_transformer_errors_match_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch_msg, lantern_msg = raises_like(TRANSFORMER_ERRORS[name])
    assert torch_msg == lantern_msg


def test_deepcopy_keeps_behaviour():
    m = lantern.nn.TransformerEncoderLayer(E, HEADS, 16, dropout=0.0)
    clone = copy.deepcopy(m)
    x = lantern.tensor(SRC)
    assert_same(clone(x).detach(), _as_torch(m(x)), strides=False)


def _as_torch(t):
    return torch.tensor(as_numpy(t))


def test_meta_device_shapes():
    shapes = []
    for lib in (torch, lantern):
        m = lib.nn.MultiheadAttention(E, HEADS, device="meta")
        x = lib.zeros(5, 3, E, device="meta")
        pad = lib.zeros(3, 5, dtype=lib.bool, device="meta")
        out, _ = m(x, x, x, key_padding_mask=pad, need_weights=False)
        _, weights = m(x, x, x, key_padding_mask=pad, average_attn_weights=False)
        shapes.append((tuple(out.shape), tuple(weights.shape), out.device.type))
    assert shapes[0] == shapes[1]


@pytest.mark.parametrize("static", [(), ("static_k",), ("static_k", "static_v")])
def test_functional_self_attention_gradients(static):
    """Packed self-attention (query is key is value): the input's and weights' gradients equal torch's, also when
    static keys/values leave some projections unused."""
    values = {"static_k": _randn(3 * HEADS, 5, E // HEADS), "static_v": _randn(3 * HEADS, 5, E // HEADS)}
    weighting = _randn(5, 3, E)
    results = []
    for lib in (torch, lantern):
        x, w_in, b_in = (lib.tensor(a).requires_grad_(True) for a in (X, W_IN, B_IN))
        kwargs = {name: lib.tensor(values[name]) for name in static}
        out, weights = lib.nn.functional.multi_head_attention_forward(
            x, x, x, E, HEADS, w_in, b_in, None, None, False, 0.0, lib.tensor(W_OUT), lib.tensor(B_OUT), **kwargs)
        (out * lib.tensor(weighting)).sum().backward()
        results.append((out, weights, x.grad, w_in.grad, b_in.grad))
    assert_same(results[1], results[0], strides=False, **TOL)


def test_self_attention_gradcheck_and_gradgradcheck():
    """Packed self-attention in float64, through the "_mha_unpack" op (q, k, v out of one projection, whose
    backward is a stack): first and second derivatives by finite differences, non-contiguous input."""
    d = lantern.float64
    w_in, b_in, w_out = (lantern.tensor(a.astype(np.float64)) for a in (W_IN, B_IN, W_OUT))
    x = lantern.randn(2, 2, 2 * E, dtype=d)[:, :, ::2].requires_grad_(True)

    def attention(x, w_in):
        return lantern.nn.functional.multi_head_attention_forward(
            x, x, x, E, HEADS, w_in, b_in, None, None, False, 0.0, w_out, None, need_weights=False)[0]

    assert lantern.autograd.gradcheck(attention, (x, w_in.requires_grad_(True)))
    assert lantern.autograd.gradgradcheck(lambda x: attention(x, w_in.detach()), (x,))
    packed = lantern.randn(3, 2, 4, dtype=d, requires_grad=True)
    assert lantern.autograd.gradgradcheck(lambda p: lantern.ops.nn_attention._op("_mha_unpack", p)[1:], (packed,))


@pytest.mark.parametrize("batch_dim", [0, 1])
@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
def test_unpack_gradient_is_laid_out_as_the_projection(batch_dim, dtype):
    """_mha_unpack's backward stacks the q, k, v gradients in the packed projection's memory order, so that the
    projection's gradient comes back through the permute and view without a copy; _stack_grads_on_arrays (three
    array copies, no create_graph) gives the same values and strides."""
    from lantern.ops.derivative import TensorMeta
    from lantern.ops.nn_attention import _stack_grads, _stack_grads_on_arrays, every_gradient_on_float_arrays
    proj = lantern.randn(4, 5, 3 * E, dtype=dtype)  # (N, L, 3E) for batch_dim 0, (L, N, 3E) for 1
    split = proj.view(4, 5, 3, HEADS, -1)
    packed = split.permute(2, 0, 3, 1, 4) if batch_dim == 0 else split.permute(2, 1, 3, 0, 4)
    shape = packed.shape[1:]
    grads = [lantern.randn(*shape, dtype=dtype), lantern.randn(*shape, dtype=dtype).transpose(-2, -1).contiguous()
             .transpose(-2, -1), lantern.randn(*shape, dtype=dtype)]
    readable = _stack_grads(grads, TensorMeta(packed))
    assert readable.stride() == packed.stride() and lantern.equal(readable, lantern.stack(grads))
    assert every_gradient_on_float_arrays(grads)
    fast = _stack_grads_on_arrays(grads, TensorMeta(packed))
    assert fast.stride() == readable.stride() and lantern.equal(fast, readable)
    grads[2] = None  # no gradient for v: the readable stack, with zeros
    assert not every_gradient_on_float_arrays(grads)
    assert lantern.equal(_stack_grads(grads, TensorMeta(packed)), lantern.stack(grads[:2] + [lantern.zeros(shape)]))


def test_unpack_gradient_on_arrays_runs_only_without_create_graph():
    from lantern.ops.nn_attention import _stack_grads_on_arrays
    from test_ops_specialisations import calls_of
    x = lantern.randn(3, 2, E, dtype=lantern.float64, requires_grad=True)
    w_in = lantern.tensor(W_IN.astype(np.float64))
    grads = {}
    for create_graph in (False, True):
        with lantern.reference_mode(False):
            out = lantern.nn.functional.multi_head_attention_forward(
                x, x, x, E, HEADS, w_in, None, None, None, False, 0.0, lantern.tensor(W_OUT.astype(np.float64)),
                None, need_weights=False)[0]
            with calls_of(_stack_grads_on_arrays) as calls:
                grads[create_graph], = lantern.autograd.grad(out.sum(), x, create_graph=create_graph)
        assert bool(calls) is not create_graph
    assert lantern.allclose(grads[False], grads[True].detach(), rtol=1e-12, atol=1e-12)


def test_unpack_copies_blocks_of_the_batch_on_two_threads(monkeypatch):
    """_mha_unpack's q, k, v copies split the batch dim over the intra-op threads: the same contiguous copies."""
    from lantern.core import intra_op
    calls, run = [], intra_op.run_on_pool
    monkeypatch.setattr(intra_op, "run_on_pool", lambda ranges, fn: (calls.append(len(ranges)), run(ranges, fn)))
    packed = lantern.randn(8, 64, 3, 4, 32).permute(2, 0, 3, 1, 4)  # 8 items of 24576 elements: two blocks
    before = lantern.get_num_threads()
    try:
        lantern.set_num_threads(2)
        with lantern.reference_mode(False):
            parts = lantern.ops.nn_attention._op("_mha_unpack", packed)
    finally:
        lantern.set_num_threads(before)
    assert calls == [2]
    for part, expected in zip(parts, packed):
        assert part.is_contiguous() and lantern.equal(part, expected)
