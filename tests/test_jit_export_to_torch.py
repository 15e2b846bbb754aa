"""Models leave Python as TorchScript: lantern.jit.save of a scripted or traced module loads in torch.jit.load (so in
LibTorch too) and computes what the lantern module computes."""
import re

import numpy as np
import pytest
import torch

import lantern
import lantern.nn as nn


def _mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 16), nn.GELU(),
                         nn.LayerNorm(16), nn.Linear(16, 3), nn.LogSoftmax(-1)), (4, 6)


def _cnn():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 2 * 2, 5)), \
        (2, 3, 8, 8)


class _LastStep(nn.Module):
    """An LSTM's last output step through a Linear head: the common call, lstm(x) -> (output, (h, c))."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 7, num_layers=2)
        self.head = nn.Linear(7, 2)

    def forward(self, x):
        output, _ = self.lstm(x)
        return self.head(output[-1])


def _lstm():
    return _LastStep(), (6, 3, 5)


def _transformer():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), (5, 2, 8)


MODELS = {"mlp": _mlp, "cnn": _cnn, "lstm": _lstm, "transformer_encoder": _transformer}
def _trained_state(model, shape):
    """A few batches in training mode, so BatchNorm's running statistics are not the initial ones."""
    for _ in range(2):
        model(lantern.randn(*shape))
    return model.eval()


def _export(model, example, how, path):
    exported = lantern.jit.script(model) if how == "script" else lantern.jit.trace(model, example)
    lantern.jit.save(exported, str(path))
    return exported


@pytest.mark.parametrize("how", ["script", "trace"])
@pytest.mark.parametrize("name", list(MODELS))
def test_saved_module_runs_in_torch(name, how, tmp_path):
    """Saved by lantern, run by torch.jit.load (and by lantern.jit.load): the outputs of the eager module."""
    lantern.manual_seed(0)
    model, shape = MODELS[name]()
    model = _trained_state(model, shape)
    x = lantern.randn(*shape)
    expected = model(x).detach().numpy()
    exported = _export(model, x, how, tmp_path / "model.pt")
    np.testing.assert_allclose(exported(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    loaded = torch.jit.load(str(tmp_path / "model.pt"))
    with torch.no_grad():
        got = loaded(torch.from_numpy(x.numpy())).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    round_trip = lantern.jit.load(str(tmp_path / "model.pt"))
    np.testing.assert_allclose(round_trip(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


LSTM_CASES = {
    "default": ({}, (6, 3, 5), False),
    "batch_first": ({"batch_first": True}, (3, 6, 5), False),
    "bidirectional_2_layers": ({"bidirectional": True, "num_layers": 2}, (6, 3, 5), False),
    "projections": ({"proj_size": 4}, (6, 3, 5), True),
    "no_bias_with_state": ({"bias": False}, (6, 3, 5), True),
    "unbatched": ({}, (6, 5), False),
    "unbatched_with_state": ({}, (6, 5), True),
}


@pytest.mark.parametrize("case", list(LSTM_CASES))
def test_scripted_lstm_state_runs_in_torch(case, tmp_path):
    """A scripted nn.LSTM itself: its forward calls aten::lstm over _flat_weights (saved as torch's List[Tensor]),
    and torch returns the same output and (h_n, c_n), with and without a given state."""
    kwargs, shape, with_state = LSTM_CASES[case]
    lantern.manual_seed(0)
    model = nn.LSTM(5, 7, **kwargs).eval()
    x = lantern.randn(*shape)
    args = (x,)
    if with_state:
        layers = (2 if model.bidirectional else 1) * model.num_layers
        batch = shape[1:2] if len(shape) == 3 else ()
        args = (x, (lantern.randn(layers, *batch, model.proj_size or 7), lantern.randn(layers, *batch, 7)))
    out, (h, c) = model(*args)
    _export(model, x, "script", tmp_path / "lstm.pt")
    in_torch = torch.jit.load(str(tmp_path / "lstm.pt"))
    torch_args = [torch.from_numpy(x.numpy())] + [tuple(torch.from_numpy(t.numpy()) for t in args[1])
                                                  for _ in range(with_state)]
    with torch.no_grad():
        t_out, (t_h, t_c) = in_torch(*torch_args)
    l_out, (l_h, l_c) = lantern.jit.load(str(tmp_path / "lstm.pt"))(*args)
    for ours, theirs, round_trip in ((out, t_out, l_out), (h, t_h, l_h), (c, t_c, l_c)):
        np.testing.assert_allclose(theirs.numpy(), ours.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(round_trip.detach().numpy(), ours.detach().numpy())


def test_scripted_lstm_refuses_a_packed_sequence():
    """torch's script compiles a second forward for a PackedSequence; lantern's compiles the Tensor one only."""
    scripted = lantern.jit.script(nn.LSTM(3, 4))
    packed = nn.utils.rnn.pack_padded_sequence(lantern.randn(5, 2, 3), [5, 3])
    with pytest.raises(RuntimeError, match="(?s)Expected a value of type 'Tensor.*' for argument 'input'.*"
                                           "Value: PackedSequence"):
        scripted(packed)


SINGLE_STATE_CASES = {
    "gru": (nn.GRU, {}, (6, 3, 5), False),
    "gru_batch_first_bidirectional_2_layers": (nn.GRU, {"batch_first": True, "num_layers": 2,
                                                        "bidirectional": True}, (3, 6, 5), True),
    "rnn_unbatched_with_state": (nn.RNN, {}, (6, 5), True),
    "rnn_relu_no_bias": (nn.RNN, {"nonlinearity": "relu", "bias": False}, (6, 3, 5), False),
}


@pytest.mark.parametrize("case", list(SINGLE_STATE_CASES))
def test_scripted_gru_and_rnn_run_in_torch(case, tmp_path):
    """GRU and RNN compile to aten::gru / rnn_tanh / rnn_relu as LSTM to aten::lstm."""
    cls, kwargs, shape, with_state = SINGLE_STATE_CASES[case]
    lantern.manual_seed(0)
    model = cls(5, 7, **kwargs).eval()
    x = lantern.randn(*shape)
    layers = (2 if model.bidirectional else 1) * model.num_layers
    batch = () if len(shape) == 2 else (shape[0 if model.batch_first else 1],)
    args = (x,) + ((lantern.randn(layers, *batch, 7),) if with_state else ())
    out, h = model(*args)
    _export(model, x, "script", tmp_path / "rnn.pt")
    with torch.no_grad():
        t_out, t_h = torch.jit.load(str(tmp_path / "rnn.pt"))(*(torch.from_numpy(a.numpy()) for a in args))
    l_out, l_h = lantern.jit.load(str(tmp_path / "rnn.pt"))(*args)
    for ours, theirs, round_trip in ((out, t_out, l_out), (h, t_h, l_h)):
        np.testing.assert_allclose(theirs.numpy(), ours.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(round_trip.detach().numpy(), ours.detach().numpy())


@pytest.mark.parametrize("bad", ["hidden_batch", "cell_size", "input_size", "gru_hidden_batch"])
def test_scripted_lstm_checks_its_arguments_as_eager_does(bad, tmp_path):
    """The scripted forward's checks give eager's messages, in lantern's interpreter and in torch."""
    model = nn.GRU(5, 7) if bad.startswith("gru") else nn.LSTM(5, 7)
    x = lantern.randn(6, 3, 4 if bad == "input_size" else 5)
    state = {"hidden_batch": (lantern.zeros(1, 2, 7), lantern.zeros(1, 2, 7)),
             "cell_size": (lantern.zeros(1, 3, 7), lantern.zeros(1, 3, 6)), "input_size": None,
             "gru_hidden_batch": lantern.zeros(1, 2, 7)}[bad]
    with pytest.raises(RuntimeError) as eager:
        model(x, state)
    message = str(eager.value)
    _export(model, x, "script", tmp_path / "lstm.pt")
    with pytest.raises(lantern.jit.Error, match=re.escape(message)):
        lantern.jit.load(str(tmp_path / "lstm.pt"))(x, state)
    torch_state = None if state is None else torch.from_numpy(state.numpy()) if bad.startswith("gru") else \
        tuple(torch.from_numpy(t.numpy()) for t in state)
    with pytest.raises(torch.jit.Error, match=re.escape(message)):
        torch.jit.load(str(tmp_path / "lstm.pt"))(torch.from_numpy(x.numpy()), torch_state)


@pytest.mark.parametrize("name", ["gru", "rnn_tanh", "rnn_relu"])
def test_single_state_recurrent_functions_match_torch(name):
    """lantern.gru / rnn_tanh / rnn_relu are torch's (both overloads), what the scripted GRU and RNN call."""
    lantern.manual_seed(0)
    model = (nn.GRU if name == "gru" else nn.RNN)(3, 4, num_layers=2, bidirectional=True)
    weights = [w.detach() for w in model._flat_weights]
    x, h0 = lantern.randn(5, 2, 3), lantern.randn(4, 2, 4)
    packed = nn.utils.rnn.pack_padded_sequence(x, [5, 3])
    theirs_weights = [torch.from_numpy(w.numpy()) for w in weights]
    calls = [((x, h0, weights, True, 2, 0.0, False, True, False),
              (torch.from_numpy(x.numpy()), torch.from_numpy(h0.numpy()), theirs_weights, True, 2, 0.0, False, True,
               False)),
             ((packed.data, packed.batch_sizes, h0, weights, True, 2, 0.0, False, True),
              (torch.from_numpy(packed.data.numpy()), torch.from_numpy(packed.batch_sizes.numpy()),
               torch.from_numpy(h0.numpy()), theirs_weights, True, 2, 0.0, False, True))]
    for ours_args, theirs_args in calls:
        for a, b in zip(getattr(lantern, name)(*ours_args), getattr(torch, name)(*theirs_args)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_lstm_function_matches_torch():
    """lantern.lstm, what the scripted forward calls, is torch.lstm (aten::lstm): both overloads."""
    lantern.manual_seed(0)
    model = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    weights = [w.detach() for w in model._flat_weights]
    x, h0, c0 = lantern.randn(5, 2, 3), lantern.randn(4, 2, 4), lantern.randn(4, 2, 4)
    ours = lantern.lstm(x, [h0, c0], weights, True, 2, 0.0, False, True, False)
    theirs = torch.lstm(*(torch.from_numpy(t.numpy()) for t in (x,)), [torch.from_numpy(t.numpy()) for t in (h0, c0)],
                        [torch.from_numpy(w.numpy()) for w in weights], True, 2, 0.0, False, True, False)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    packed = nn.utils.rnn.pack_padded_sequence(x, [5, 3])
    ours = lantern.lstm(packed.data, packed.batch_sizes, [h0, c0], weights, True, 2, 0.0, False, True)
    theirs = torch.lstm(torch.from_numpy(packed.data.numpy()), torch.from_numpy(packed.batch_sizes.numpy()),
                        [torch.from_numpy(t.numpy()) for t in (h0, c0)], [torch.from_numpy(w.numpy()) for w in weights],
                        True, 2, 0.0, False, True)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


MHA_CASES = {
    "default": {},
    "batch_first": {"batch_first": True},
    "kdim_vdim": {"kdim": 5, "vdim": 3},
    "no_bias": {"bias": False},
    "bias_kv_zero_attn": {"add_bias_kv": True, "add_zero_attn": True},
}
MHA_CALLS = {
    "plain": lambda kpm, mask: {},
    "bool_key_padding_mask": lambda kpm, mask: {"key_padding_mask": kpm},
    "float_attn_mask_no_weights": lambda kpm, mask: {"attn_mask": mask, "need_weights": False},
    "bool_attn_mask_per_head_weights": lambda kpm, mask: {"attn_mask": mask > 1, "average_attn_weights": False},
}


@pytest.mark.parametrize("call", list(MHA_CALLS))
@pytest.mark.parametrize("case", list(MHA_CASES))
def test_scripted_multihead_attention_runs_in_torch(case, call, tmp_path):
    """MultiheadAttention's scripted forward (projections, per-head scaled dot products, masks, softmax, out_proj)
    gives the eager outputs and weights, in lantern and in torch."""
    kwargs = MHA_CASES[case]
    lantern.manual_seed(0)
    model = nn.MultiheadAttention(8, 2, **kwargs).eval()
    batch_first = kwargs.get("batch_first", False)
    q, k, v = (lantern.randn(*((2, length, dim) if batch_first else (length, 2, dim)))
               for length, dim in ((4, 8), (6, kwargs.get("kdim", 8)), (6, kwargs.get("vdim", 8))))
    extra = MHA_CALLS[call](lantern.tensor([[False] * 5 + [True], [False] * 6]), lantern.randn(4, 6))
    out, weights = model(q, k, v, **extra)
    _export(model, q, "script", tmp_path / "mha.pt")
    t_out, t_weights = torch.jit.load(str(tmp_path / "mha.pt"))(
        *(torch.from_numpy(t.numpy()) for t in (q, k, v)),
        **{name: torch.from_numpy(a.numpy()) if isinstance(a, lantern.Tensor) else a for name, a in extra.items()})
    l_out, l_weights = lantern.jit.load(str(tmp_path / "mha.pt"))(q, k, v, **extra)
    np.testing.assert_allclose(t_out.detach().numpy(), out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(l_out.detach().numpy(), out.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert (weights is None) == (t_weights is None) == (l_weights is None)
    if weights is not None:
        np.testing.assert_allclose(t_weights.detach().numpy(), weights.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(l_weights.detach().numpy(), weights.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch_first", [False, True])
def test_scripted_transformer_encoder_with_masks_runs_in_torch(batch_first, tmp_path):
    """A pre-norm, gelu TransformerEncoder with a final norm, called with a causal mask and a padding mask."""
    lantern.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", norm_first=True,
                                       batch_first=batch_first)
    model = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8), enable_nested_tensor=False).eval()
    x = lantern.randn(*((2, 5, 8) if batch_first else (5, 2, 8)))
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    padding = lantern.tensor([[False] * 4 + [True], [False] * 5])
    expected = model(x, mask=mask, src_key_padding_mask=padding).detach().numpy()
    _export(model, x, "script", tmp_path / "encoder.pt")
    got = torch.jit.load(str(tmp_path / "encoder.pt"))(
        torch.from_numpy(x.numpy()), mask=torch.from_numpy(mask.numpy()),
        src_key_padding_mask=torch.from_numpy(padding.numpy()))
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-4, atol=1e-5)
    round_trip = lantern.jit.load(str(tmp_path / "encoder.pt"))(x, mask=mask, src_key_padding_mask=padding)
    np.testing.assert_allclose(round_trip.detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_scripted_transformer_runs_in_torch(tmp_path):
    """The whole nn.Transformer (encoder, decoder with self- and cross-attention), with a causal target mask and
    padding masks."""
    lantern.manual_seed(0)
    model = nn.Transformer(8, 2, 2, 2, 16, dropout=0.0).eval()
    src, tgt = lantern.randn(5, 2, 8), lantern.randn(4, 2, 8)
    masks = {"tgt_mask": nn.Transformer.generate_square_subsequent_mask(4),
             "src_key_padding_mask": lantern.tensor([[False] * 4 + [True], [False] * 5]),
             "memory_key_padding_mask": lantern.tensor([[False] * 4 + [True], [False] * 5])}
    expected = model(src, tgt, **masks).detach().numpy()
    _export(model, src, "script", tmp_path / "transformer.pt")
    got = torch.jit.load(str(tmp_path / "transformer.pt"))(
        torch.from_numpy(src.numpy()), torch.from_numpy(tgt.numpy()),
        **{name: torch.from_numpy(m.numpy()) for name, m in masks.items()})
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-4, atol=1e-5)
    round_trip = lantern.jit.load(str(tmp_path / "transformer.pt"))(src, tgt, **masks)
    np.testing.assert_allclose(round_trip.detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_scripted_encoder_refuses_the_nested_tensor_path():
    """Eager inference with a padding mask packs a nested tensor (padded positions come out zero); the scripted
    encoder does not compile that path and says so (a scripted raise: jit.Error, as in torch) rather than give
    other numbers."""
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    scripted = lantern.jit.script(nn.TransformerEncoder(layer, 1).eval())
    with pytest.raises(lantern.jit.Error, match="nested-tensor inference path"):
        scripted(lantern.randn(2, 5, 8), src_key_padding_mask=lantern.tensor([[False] * 4 + [True], [False] * 5]))


LAYERS = {
    "Conv1d": (lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
    "Conv3d": (lambda: nn.Conv3d(2, 3, 2, dilation=1, groups=1), (1, 2, 4, 4, 4)),
    "MaxPool1d": (lambda: nn.MaxPool1d(2), (2, 3, 8)),
    "AvgPool2d": (lambda: nn.AvgPool2d(2, stride=1), (2, 3, 5, 5)),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d(1), (2, 3, 5, 5)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4), (3, 4)),
    "Softmax": (lambda: nn.Softmax(dim=1), (2, 5)),
    "SiLU": (lambda: nn.SiLU(), (2, 5)),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.2), (2, 5)),
    "Tanh": (lambda: nn.Tanh(), (2, 5)),
    "Sigmoid": (lambda: nn.Sigmoid(), (2, 5)),
    "GELU_tanh": (lambda: nn.GELU("tanh"), (2, 5)),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_scripted_layer_runs_in_torch(name, tmp_path):
    lantern.manual_seed(0)
    make, shape = LAYERS[name]
    model = make().eval()
    x = lantern.randn(*shape)
    expected = model(x).detach().numpy()
    _export(model, x, "script", tmp_path / "layer.pt")
    loaded = torch.jit.load(str(tmp_path / "layer.pt"))
    with torch.no_grad():
        got = loaded(torch.from_numpy(x.numpy())).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_scripted_embedding_runs_in_torch(tmp_path):
    lantern.manual_seed(0)
    model = nn.Embedding(10, 4, padding_idx=0)
    ids = lantern.tensor([[0, 3, 9], [2, 2, 1]])
    _export(model, ids, "script", tmp_path / "emb.pt")
    loaded = torch.jit.load(str(tmp_path / "emb.pt"))
    np.testing.assert_allclose(loaded(torch.from_numpy(ids.numpy())).detach().numpy(), model(ids).detach().numpy())


def test_functional_calls_compile_to_the_aten_ops_torch_scripts():
    """The ops in the scripted graph are those of torch's script of the same module (for functionals whose torch
    body is the one op; torch's F.dropout or F.relu add argument checks and branches)."""
    def kinds(graph):
        return [n.kind() for n in graph.nodes() if n.kind().startswith("aten::")]

    pairs = [(nn.Linear(3, 2), torch.nn.Linear(3, 2)), (nn.Conv2d(2, 3, 3), torch.nn.Conv2d(2, 3, 3)),
             (nn.LayerNorm(4), torch.nn.LayerNorm(4)), (nn.GELU("tanh"), torch.nn.GELU("tanh"))]
    for ours, theirs in pairs:
        assert kinds(lantern.jit.script(ours).inlined_graph) == kinds(torch.jit.script(theirs).inlined_graph)


def test_scripted_conv_with_reflect_padding_runs_in_torch(tmp_path):
    """The padding list attribute is saved as torch saves a List[int] (torch.jit._pickle.build_intlist), which
    torch's ops need, and lantern.jit.load reads it back."""
    model = nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect")
    x = lantern.randn(1, 2, 5, 5)
    _export(model, x, "script", tmp_path / "conv.pt")
    loaded = torch.jit.load(str(tmp_path / "conv.pt"))
    np.testing.assert_allclose(loaded(torch.from_numpy(x.numpy())).detach().numpy(), model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    ours = lantern.jit.load(str(tmp_path / "conv.pt"))
    assert ours._reversed_padding_repeated_twice == [1, 1, 1, 1]
    assert lantern.equal(ours(x), model(x))


def _data_pkl_edited(path, old, new):
    """The archive at `path` with bytes `old` of its data.pkl replaced by `new`."""
    import io
    import zipfile
    out = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data.replace(old, new) if info.filename.endswith("/data.pkl") else data)
    return out.getvalue()


@pytest.mark.parametrize("old,new", [(b"build_intlist", b"build_boollist"), (b"build_intlist", b"restore_type_tag")],
                         ids=["list of the wrong element type", "other torch.jit._pickle function"])
def test_only_typed_lists_of_their_element_type_load(old, new, tmp_path):
    import io
    import pickle
    lantern.jit.save(lantern.jit.script(nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect")), tmp_path / "c.pt")
    with pytest.raises(pickle.UnpicklingError):
        lantern.jit.load(io.BytesIO(_data_pkl_edited(tmp_path / "c.pt", old, new)))


def _scaled(x, k: float):
    return x * k


def _scaled_relu(x):
    return lantern.relu(_scaled(x, 2.0))


class _CallsFunctions(nn.Module):
    def forward(self, x):
        return _scaled_relu(x) + _scaled(x, 0.5)


def test_free_functions_a_scripted_module_calls_run_in_torch(tmp_path):
    """Compiled functions are written to the code file of their module and called as torch prints them
    (`__torch__.<module>.<name>(...)`), functions they call included."""
    scripted = lantern.jit.script(_CallsFunctions())
    lantern.jit.save(scripted, str(tmp_path / "f.pt"))
    x = lantern.randn(3, 4)
    expected = _CallsFunctions()(x).numpy()
    np.testing.assert_allclose(torch.jit.load(str(tmp_path / "f.pt"))(torch.from_numpy(x.numpy())).numpy(), expected)
    np.testing.assert_allclose(lantern.jit.load(str(tmp_path / "f.pt"))(x).numpy(), expected)
    assert f"__torch__.{__name__}._scaled_relu" in scripted.code


@pytest.mark.parametrize("default", ["__import__('os').system('true')", "lantern", "[1] * 10**9",
                                     "[" * 600 + "]" * 600], ids=["call", "name", "expression", "deep nesting"])
def test_argument_defaults_of_an_archive_are_literals_only(default, tmp_path):
    """code/__torch__.ir keeps each method's argument defaults as Python literals; lantern.jit.load evaluates them
    with ast.literal_eval and refuses anything else, before running anything."""
    import io
    import json
    import zipfile
    lantern.jit.save(lantern.jit.script(nn.LSTM(3, 4)), str(tmp_path / "lstm.pt"))
    out = io.BytesIO()
    with zipfile.ZipFile(tmp_path / "lstm.pt") as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("code/__torch__.ir"):
                ir = json.loads(data)
                for cls in ir["classes"].values():
                    for record in cls["methods"].values():
                        if "defaults" in record:
                            record["defaults"] = {name: default for name in record["defaults"]}
                data = json.dumps(ir).encode()
            dst.writestr(info, data)
    with pytest.raises(RuntimeError, match="lantern.jit.load"):
        lantern.jit.load(io.BytesIO(out.getvalue()))


def test_inplace_must_be_a_constant():
    import lantern.nn.functional as F

    def f(x, inplace: bool):
        return F.relu(x, inplace)

    with pytest.raises(RuntimeError, match="argument 'inplace' must be a constant"):
        lantern.jit.script(f)
