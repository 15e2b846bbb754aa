"""lantern.onnx.export against torch: models are built in both libraries with the same weights, the lantern model
is exported and run in onnxruntime, and its outputs must match torch's model (eval mode) for the traced batch
size and another one (dynamic axes). Graph-level behaviour (names, initializers, dims) is compared with
torch.onnx.export's own output."""
import io
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import lantern
from nn_oracle import same_weights
from oracle import noncontig, to_lib

DYN = {"x": {0: "batch"}, "y": {0: "batch"}}


def _export(lib, model, args, **kw):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if lib is torch:
            kw["dynamo"] = False
        lib.onnx.export(model, args, f, **kw)
    return f.getvalue()


def _pair(make):
    """The same model in both libraries (torch's weights), in eval mode."""
    torch.manual_seed(0)
    t_model = make(torch.nn).eval()
    l_model = make(lantern.nn).eval()
    same_weights(t_model, l_model)
    return t_model, l_model


def _run(data, *inputs):
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1   # tiny graphs: threads only cost
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    feed = {i.name: np.ascontiguousarray(x) for i, x in zip(session.get_inputs(), inputs)}
    return session.run(None, feed)


def _check_model(make, inputs, resized, atol=1e-5, **kw):
    """Export lantern's model traced on `inputs`, run it in onnxruntime on `inputs` and on `resized` (another
    batch size), compare with torch's model on the same data."""
    t_model, l_model = _pair(make)
    args = tuple(to_lib(lantern, noncontig(x) if x.dtype.kind == "f" else x) for x in inputs)
    data = _export(lantern, l_model, args, **kw)
    onnx.checker.check_model(onnx.load_from_string(data))
    for batch in (inputs, resized):
        with torch.no_grad():
            want = t_model(*(torch.from_numpy(np.ascontiguousarray(x)) for x in batch))
        want = want if isinstance(want, tuple) else (want,)
        got = _run(data, *batch)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), atol=atol, rtol=1e-5)
    return data


def _mlp(nn):
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3), nn.Sigmoid())


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 4, 3, stride=2, bias=False), nn.Flatten(), nn.Linear(4, 5),
                         nn.LogSoftmax(dim=1))


def _lstm(nn):
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 5, num_layers=2, batch_first=True)
            self.head = nn.Linear(5, 2)

        def forward(self, x):
            out, (h, c) = self.lstm(x)
            return self.head(out[:, -1]), h

    return Tagger()


def _encoder(nn, activation="relu", norm_first=False):
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(11, 8)
            layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation=activation, batch_first=True,
                                               norm_first=norm_first)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.out = nn.Linear(8, 4)

        def forward(self, tokens, pad):
            if norm_first:   # a causal float mask with a float key-padding mask
                lib = torch if isinstance(tokens, torch.Tensor) else lantern
                causal = lib.full((6, 6), float("-inf")).triu(1)
                padding = lib.zeros(pad.shape).masked_fill(pad, float("-inf"))
                return self.out(self.enc(self.emb(tokens), mask=causal, src_key_padding_mask=padding).mean(1))
            mask = pad.unsqueeze(1).unsqueeze(2).expand(-1, 2, 6, -1).reshape(-1, 6, 6)
            return self.out(self.enc(self.emb(tokens), mask=mask).mean(1))

    return Encoder()


def test_mlp_matches_torch_and_graph():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    data = _check_model(_mlp, [x], [rng.standard_normal((7, 4)).astype(np.float32)],
                        input_names=["x"], output_names=["y"], dynamic_axes=DYN)
    t_model, _ = _pair(_mlp)
    ref = onnx.load_from_string(_export(torch, t_model, (torch.from_numpy(x),), input_names=["x"],
                                        output_names=["y"], dynamic_axes=DYN))
    got = onnx.load_from_string(data)
    assert [n.op_type for n in got.graph.node] == [n.op_type for n in ref.graph.node]
    assert sorted(i.name for i in got.graph.initializer) == sorted(i.name for i in ref.graph.initializer)
    assert got.graph.input == ref.graph.input
    assert got.graph.output == ref.graph.output
    assert got.opset_import == ref.opset_import


def test_cnn_matches_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    data = _check_model(_cnn, [x], [rng.standard_normal((5, 2, 6, 6)).astype(np.float32)],
                        input_names=["x"], output_names=["y"], dynamic_axes=DYN)
    ops = {n.op_type for n in onnx.load_from_string(data).graph.node}
    assert {"Conv", "MaxPool", "Gemm", "LogSoftmax"} <= ops


def test_lstm_matches_torch():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    data = _check_model(_lstm, [x], [rng.standard_normal((3, 4, 3)).astype(np.float32)],
                        input_names=["x"], output_names=["y", "h"],
                        dynamic_axes={"x": [0], "y": [0], "h": {1: "batch"}})
    proto = onnx.load_from_string(data)
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["x_dynamic_axes_1", 4, 3]
    assert proto.graph.output[1].type.tensor_type.shape.dim[1].dim_param == "batch"


@pytest.mark.parametrize("activation,norm_first,opset", [("relu", False, None), ("gelu", True, 17)])
def test_transformer_encoder_matches_torch(activation, norm_first, opset):
    rng = np.random.default_rng(3)

    def inputs(batch):
        tokens = rng.integers(0, 11, (batch, 6)).astype(np.int64)
        pad = np.zeros((batch, 6), dtype=bool)
        pad[0, 4:] = True
        return [tokens, pad]

    _check_model(lambda nn: _encoder(nn, activation, norm_first), inputs(2), inputs(3), atol=2e-5,
                 opset_version=opset, input_names=["tokens", "pad"], output_names=["y"],
                 dynamic_axes={"tokens": {0: "batch"}, "pad": {0: "batch"}, "y": {0: "batch"}})


def test_static_export_names_and_file(tmp_path):
    """Without names torch calls inputs onnx::<first op>_<i>; a path works as well as a file object."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    t_model, l_model = _pair(_mlp)
    path = tmp_path / "mlp.onnx"
    lantern.onnx.export(l_model, lantern.tensor(x), str(path))
    ref = onnx.load_from_string(_export(torch, t_model, (torch.from_numpy(x),)))
    got = onnx.load(str(path))
    assert [i.name for i in got.graph.input] == [i.name for i in ref.graph.input] == ["onnx::Gemm_0"]
    assert got.graph.input[0].type == ref.graph.input[0].type
    with torch.no_grad():
        np.testing.assert_allclose(_run(got.SerializeToString(), x)[0], t_model(torch.from_numpy(x)).numpy(),
                                   atol=1e-6)


def test_training_mode_restored_and_params_as_inputs():
    _, l_model = _pair(_cnn)
    l_model.train()
    x = lantern.randn(2, 2, 6, 6)
    data = _export(lantern, l_model, (x,), export_params=False)
    assert l_model.training
    proto = onnx.load_from_string(data)
    assert not proto.graph.initializer
    names = [i.name for i in proto.graph.input]
    assert names[1:] == [k for k in l_model.state_dict() if not k.endswith("num_batches_tracked")]
    kept = onnx.load_from_string(_export(lantern, l_model, (x,), keep_initializers_as_inputs=True))
    assert {i.name for i in kept.graph.initializer} <= {i.name for i in kept.graph.input}


def test_errors_match_torch():
    for args in [("aten::cumprod", 17, None), ("aten::gelu", 13, 20), ("mylib::op", 17, None)]:
        assert str(lantern.onnx.errors.UnsupportedOperatorError(*args)) == \
            str(torch.onnx.errors.UnsupportedOperatorError(*args))
    assert issubclass(lantern.onnx.UnsupportedOperatorError, RuntimeError)

    class Odd(lantern.nn.Module):
        def forward(self, x):
            return x.cumprod(0)

    with pytest.raises(lantern.onnx.errors.UnsupportedOperatorError,
                       match="'aten::cumprod' to ONNX opset version 20 is not supported"):
        _export(lantern, Odd(), (lantern.randn(3),))
    with pytest.raises(lantern.onnx.errors.UnsupportedOperatorError, match="added in version 17"):
        _export(lantern, lantern.nn.LayerNorm(4), (lantern.randn(2, 4),), opset_version=16)


def _mutating(nn):
    class Mutating(nn.Module):
        """In-place ops through views, an out= write into a view, and a buffer sized from the batch."""

        def forward(self, x):
            lib = torch if isinstance(x, torch.Tensor) else lantern
            y = x.clone()
            y[:, 0].mul_(2)
            y.narrow(1, 1, 2).add_(1).sigmoid_()
            buf = lib.zeros(x.shape[0], 2, 4)
            lib.tanh(y, out=buf.select(1, 1))
            buf.select(1, 0).copy_(y[:, :1])
            buf[1:].zero_()
            return buf.transpose(0, 1).relu_() - 0.25

    return Mutating()


def test_inplace_and_out_ops_through_views():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    data = _check_model(_mutating, [x], [rng.standard_normal((5, 4)).astype(np.float32)],
                        input_names=["x"], dynamic_axes={"x": {0: "n"}})
    assert "ConstantOfShape" in {n.op_type for n in onnx.load_from_string(data).graph.node}


def test_constant_folding():
    """Folding turns the transposed recurrent weights into initializers; without it they stay nodes."""
    _, model = _pair(_lstm)
    x = lantern.randn(2, 4, 3)
    folded = onnx.load_from_string(_export(lantern, model, (x,)))
    plain = onnx.load_from_string(_export(lantern, model, (x,), do_constant_folding=False))
    assert len(folded.graph.node) < len(plain.graph.node)
    assert {i.name for i in plain.graph.initializer} == set(model.state_dict())
    for proto in (folded, plain):
        with lantern.no_grad():
            want = [t.numpy() for t in model(x)]
        for g, w in zip(_run(proto.SerializeToString(), x.numpy()), want):
            np.testing.assert_allclose(g, w, atol=1e-6)


def _lambda(fn):
    def make(nn):
        lib = torch if nn is torch.nn else lantern

        class Lambda(nn.Module):
            def forward(self, *xs):
                return fn(lib, *xs)
        return Lambda()
    return make


OPS = [
    lambda m, x: m.nn.functional.avg_pool2d(x, 2) + m.nn.functional.adaptive_avg_pool2d(x, 1),
    lambda m, x: m.cat([x.softmax(-1), m.nn.functional.gelu(x), x.sum(1, keepdim=True)], 1),
    lambda m, x: m.stack([m.nn.functional.leaky_relu(x, 0.2), m.nn.functional.hardtanh(x), x.exp().log()], 2),
    lambda m, x: m.where(x > 0.1, x, x * 3).masked_fill(x < -0.5, 7.0).mean((1, 2)),
    lambda m, x: x.var(1) + x.std(-1).sum(1, keepdim=True) + x.amax(1).unsqueeze(0).squeeze(0),
    lambda m, x: x.permute(0, 2, 3, 1)[:, ::2, 1:].reshape(x.shape[0], -1) / 2 - x.flatten(1)[:, :18].abs().sqrt(),
    lambda m, x: m.nn.functional.conv1d(x.flatten(2), m.ones(4, 3, 3) / 9, stride=2, padding=1).clamp(-0.2, 0.3),
    lambda m, x: m.nn.functional.silu(m.nn.functional.conv_transpose2d(x, m.ones(3, 2, 2, 2) / 4, stride=2)),
    lambda m, x: m.nn.functional.pad(x, (1, 2, 0, 1), value=0.5).tanh() ** 2,
    lambda m, x: m.matmul(x, x.transpose(-1, -2)).triu(1).argmax(-1),
    lambda m, x: (m.nn.functional.selu(x) + m.nn.functional.elu(x, 0.5) + m.nn.functional.softplus(x, 2)
                  + m.nn.functional.mish(x) + m.nn.functional.hardswish(x) - m.nn.functional.hardsigmoid(x)),
    lambda m, x: m.addcmul(x, x.sigmoid(), (x.abs() + 0.1).rsqrt().clamp(max=2), value=0.5).repeat(1, 1, 2, 1),
    lambda m, x: (x.split(2, 3)[1] * x.split([1, 2], 1)[1].sum(1, keepdim=True)[..., :2] - x.chunk(3, -1)[0]
                  + m.stack(x.unbind(2)[::-1], 2)[..., 1:3]),
]


@pytest.mark.parametrize("fn", OPS)
def test_op_coverage(fn):
    rng = np.random.default_rng(6)
    data = lambda n: rng.standard_normal((n, 3, 4, 4)).astype(np.float32)  # noqa: E731
    _check_model(_lambda(fn), [data(2)], [data(3)], input_names=["x"], dynamic_axes={"x": {0: "n"}})


def test_plain_function():
    x = lantern.randn(2, 3)
    data = _export(lantern, lambda a, b: (a * b).relu() + 1, (x, x * 2), input_names=["a", "b"])
    got = _run(data, x.numpy(), (x * 2).numpy())[0]
    np.testing.assert_allclose(got, ((x * x * 2).relu() + 1).numpy(), atol=1e-6)


def test_warnings_match_torch():
    """The legacy-exporter DeprecationWarning, and the dynamic_axes warnings (unknown name, list form)."""
    def messages(lib, model, x):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.onnx.export(model, (x,), io.BytesIO(), dynamo=False, input_names=["x"],
                            dynamic_axes={"x": [0], "nope": {0: "n"}})
        deprecations = [str(w.message) for w in caught if w.category is DeprecationWarning]
        return deprecations[:1] + [str(w.message) for w in caught if w.category is UserWarning]

    t_model, l_model = _pair(_mlp)
    got = messages(lantern, l_model, lantern.ones(1, 4))
    assert len(got) == 3
    assert got == messages(torch, t_model, torch.ones(1, 4))


def test_outputs_that_are_inputs_or_repeated():
    x = lantern.randn(2, 3)

    def fn(a):
        r = a.relu()
        return a, r, r, r.exp()

    data = _export(lantern, fn, (x,), output_names=["same", "r", "r2", "e"])
    proto = onnx.load_from_string(data)
    assert [o.name for o in proto.graph.output] == ["same", "r", "r2", "e"]
    got = _run(data, x.numpy())
    for g, w in zip(got, (x, x.relu(), x.relu(), x.relu().exp())):
        np.testing.assert_allclose(g, w.numpy(), atol=1e-6)


def test_export_leaves_model_and_inputs_untouched():
    class Scale(lantern.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lantern.nn.Parameter(lantern.ones(3))

        def forward(self, x):
            with lantern.no_grad():
                self.w.mul_(2)
            return x.add_(self.w)

    model, x = Scale(), lantern.zeros(2, 3)
    data = _export(lantern, model, (x,))
    w_after_trace, x_after_trace = model.w.detach().clone(), x.clone()
    np.testing.assert_allclose(_run(data, np.zeros((2, 3), np.float32))[0], np.full((2, 3), 4.0))
    assert model.w.equal(w_after_trace) and x.equal(x_after_trace)
