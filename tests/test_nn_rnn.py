"""RNN, LSTM, GRU, the cells and nn.utils.rnn against torch: same weights, same inputs, same outputs and grads."""
import warnings

import numpy as np
import pytest
import torch

import lantern
from nn_oracle import check_module, same_weights
from oracle import assert_same, check, raises_like, to_lib

pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")

rng = np.random.default_rng(0)
X = rng.standard_normal((5, 3, 4)).astype(np.float32)          # (seq, batch, feature)
LENGTHS = [3, 5, 2]                                            # unsorted: the packed paths sort them


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _same_error(fn):
    """Both libraries raise the same exception class with the same message (dtypes named by their library)."""
    expected, got = raises_like(fn)
    assert got == expected.replace("torch.", "lantern.")


def _lib(module):
    return torch if isinstance(module, torch.nn.Module) else lantern


def _rnn(mode, *args, **kwargs):
    return lambda nn: getattr(nn, mode)(*args, **kwargs)


# ---- the layers over padded input ----

@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_layers(mode, num_layers, bidirectional, batch_first):
    x = X.transpose(1, 0, 2).copy() if batch_first else X
    check_module(_rnn(mode, 4, 6, num_layers, batch_first=batch_first, bidirectional=bidirectional), x)


@pytest.mark.parametrize("make", [
    _rnn("RNN", 4, 6, 2, nonlinearity="relu"), _rnn("RNN", 4, 6, 1, "relu", False),   # positional nonlinearity
    _rnn("LSTM", 4, 6, bias=False), _rnn("GRU", 4, 6, 2, bias=False, bidirectional=True),
    _rnn("LSTM", 4, 6, 2, proj_size=3), _rnn("LSTM", 4, 6, 2, proj_size=2, bidirectional=True, batch_first=True),
    _rnn("LSTM", 4, 6, proj_size=3, bias=False),
])
def test_layer_options(make):
    check_module(make, X)


@pytest.mark.parametrize("mode", ["RNN", "GRU"])
def test_given_hidden_state(mode):
    h0 = rng.standard_normal((4, 3, 5)).astype(np.float32)
    check_module(_rnn(mode, 4, 5, 2, bidirectional=True), X, h0)


@pytest.mark.parametrize("proj", [0, 3])
def test_lstm_given_state(proj):
    h0 = rng.standard_normal((2, 3, proj or 5)).astype(np.float32)
    c0 = rng.standard_normal((2, 3, 5)).astype(np.float32)
    check_module(_rnn("LSTM", 4, 5, 2, proj_size=proj), X, h0, c0, call=lambda m, x, h, c: m(x, (h, c)))


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_unbatched(mode):
    x = X[:, 0]
    check_module(_rnn(mode, 4, 5, 2, bidirectional=True), x)
    h0 = rng.standard_normal((4, 5)).astype(np.float32)
    if mode == "LSTM":
        check_module(_rnn(mode, 4, 5, 2, bidirectional=True), x, h0, h0, call=lambda m, x, h, c: m(x, (h, c)))
    else:
        check_module(_rnn(mode, 4, 5, 2, bidirectional=True, batch_first=True), x, h0)


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_empty_batch(mode):
    check_module(_rnn(mode, 4, 5, bidirectional=True), X[:, :0])


def test_float64_and_double_backward():
    """The fused recurrence's own backward under create_graph: gradients of gradients match torch."""
    results = []
    for lib in (torch, lantern):
        torch.manual_seed(0)
        tm = torch.nn.LSTM(3, 4, bidirectional=True, proj_size=2).double()
        m = tm if lib is torch else lantern.nn.LSTM(3, 4, bidirectional=True, proj_size=2).double()
        if lib is lantern:
            same_weights(tm, m)
        x = to_lib(lib, X[:, :2, :3].astype(np.float64)).requires_grad_(True)
        out, (h, c) = m(x)
        (g,) = lib.autograd.grad((out * out).sum() + h.sum() + (c * c).sum(), x, create_graph=True)
        (g * g).sum().backward()
        results.append([out, g, x.grad] + [p.grad for p in m.parameters()])
    assert_same(results[1], results[0], atol=1e-10, rtol=1e-10, strides=False)


@pytest.mark.parametrize("mode", ["RNN", "GRU"])
def test_double_backward_rnn_gru(mode):
    results = []
    for lib in (torch, lantern):
        torch.manual_seed(0)
        tm = getattr(torch.nn, mode)(3, 4).double()
        m = tm if lib is torch else getattr(lantern.nn, mode)(3, 4).double()
        if lib is lantern:
            same_weights(tm, m)
        x = to_lib(lib, X[:, :2, :3].astype(np.float64)).requires_grad_(True)
        out, h = m(x)
        (g,) = lib.autograd.grad((out * out).sum(), x, create_graph=True)
        (g * g).sum().backward()
        results.append([g, x.grad] + [p.grad for p in m.parameters()])
    assert_same(results[1], results[0], atol=1e-10, rtol=1e-10, strides=False)


def test_dropout_between_layers():
    check_module(_rnn("LSTM", 4, 5, 3, dropout=0.5), X, train=False)
    # p = 1 zeroes the whole input of the upper layers: deterministic, so train mode can be compared too
    check_module(_rnn("GRU", 4, 5, 2, dropout=1.0), X, train=True)


def test_dropout_is_random_in_training_only():
    m = lantern.nn.LSTM(4, 5, 2, dropout=0.5)
    x = lantern.tensor(X)
    out = m(x)[0]
    assert not out.equal(m(x)[0])
    out.sum().backward()
    assert m.weight_ih_l0.grad is not None
    m.eval()
    assert m(x)[0].equal(m(x)[0])


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_inference_without_grad(mode):
    def call(m, x):
        with _lib(m).no_grad():
            out, hidden = m(x)
        assert not out.requires_grad
        return out, hidden
    check_module(_rnn(mode, 4, 5, 2, bidirectional=True), X, grad=False, call=call)


def test_dropout_warning_and_argument_errors():
    for lib in (torch, lantern):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.GRU(3, 4, dropout=0.5)
        assert [str(w.message) for w in caught] == [
            "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
            "num_layers greater than 1, but got dropout=0.5 and num_layers=1"]
    bad = [lambda nn: nn.RNN(3, 4, nonlinearity="gelu"), lambda nn: nn.GRU(3, 4, proj_size=2),
           lambda nn: nn.RNN(3, 4, proj_size=2), lambda nn: nn.LSTM(3, 4, proj_size=4),
           lambda nn: nn.LSTM(3, 4, proj_size=-1), lambda nn: nn.LSTM(3, 4, dropout=1.5),
           lambda nn: nn.LSTM(3, 4, dropout=True), lambda nn: nn.LSTM(3, 0), lambda nn: nn.LSTM(0, 3),
           lambda nn: nn.LSTM(3, 4, num_layers=0), lambda nn: nn.LSTM(3.0, 4), lambda nn: nn.LSTM(3, 4, bias=1),
           lambda nn: nn.LSTM(3, 4, batch_first=1)]
    for make in bad:
        _same_error(lambda lib: make(lib.nn))


def _forward_error(make, *args):
    def run(lib, *xs):
        torch.manual_seed(0)
        return make(lib.nn)(*xs, *args)
    return run


@pytest.mark.parametrize("make, inputs", [
    (lambda nn: nn.LSTM(3, 4), lambda lib: (lib.ones(5, 2, 3), (lib.ones(1, 3, 4), lib.ones(1, 2, 4)))),
    (lambda nn: nn.LSTM(3, 4), lambda lib: (lib.ones(5, 2, 3), (lib.ones(1, 2, 4), lib.ones(1, 3, 4)))),
    (lambda nn: nn.LSTM(3, 4), lambda lib: (lib.ones(5, 2, 3), (lib.ones(2, 4), lib.ones(1, 3, 4)))),
    (lambda nn: nn.LSTM(3, 4), lambda lib: (lib.ones(5, 3), (lib.ones(1, 1, 4), lib.ones(1, 4)))),
    (lambda nn: nn.LSTM(3, 4), lambda lib: (lib.ones(5, 2, 3, 1),)),
    (lambda nn: nn.LSTM(3, 4), lambda lib: (lib.ones(5, 2, 2),)),
    (lambda nn: nn.LSTM(3, 4), lambda lib: (lib.ones(5, 2, 3, dtype=lib.float64),)),
    (lambda nn: nn.LSTM(3, 4, proj_size=2), lambda lib: (lib.ones(5, 2, 3), (lib.ones(1, 2, 4), lib.ones(1, 2, 4)))),
    (lambda nn: nn.GRU(3, 4, batch_first=True), lambda lib: (lib.ones(2, 5, 3), lib.ones(1, 5, 4))),
    (lambda nn: nn.GRU(3, 4), lambda lib: (lib.ones(2, 5, 3), lib.ones(2, 4))),
    (lambda nn: nn.GRU(3, 4), lambda lib: (lib.ones(5, 3), lib.ones(1, 1, 4))),
    (lambda nn: nn.RNN(3, 4), lambda lib: (lib.ones(5, 3), lib.ones(2, 4))),
    (lambda nn: nn.RNN(3, 4), lambda lib: (lib.ones(3),)),
    (lambda nn: nn.GRU(3, 4), lambda lib: (lib.ones(1, 2, 3, 4),)),
    (lambda nn: nn.LSTM(3, 4), lambda lib: (lib.ones(0, 2, 3),)),
    (lambda nn: nn.GRU(3, 4, batch_first=True), lambda lib: (lib.ones(2, 0, 3),)),
])
def test_forward_errors(make, inputs):
    _same_error(lambda lib: make(lib.nn)(*inputs(lib)))


# ---- packed sequences through the layers ----

def _padded(batch_first=False, lengths=LENGTHS):
    """X with the steps past each sequence's length zeroed."""
    x = X.copy()
    for b, n in enumerate(lengths):
        x[n:, b] = 0
    return x.transpose(1, 0, 2).copy() if batch_first else x


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_packed_through_layers(mode, bidirectional, enforce_sorted):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS

    def call(m, x):
        utils = _lib(m).nn.utils.rnn
        out, hidden = m(utils.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted))
        assert isinstance(out, utils.PackedSequence)
        return utils.pad_packed_sequence(out, total_length=6), out, hidden
    check_module(_rnn(mode, 4, 5, 2, bidirectional=bidirectional), _padded(lengths=lengths), call=call)


def test_packed_lstm_with_state_and_projection():
    h0 = rng.standard_normal((4, 3, 2)).astype(np.float32)
    c0 = rng.standard_normal((4, 3, 5)).astype(np.float32)

    def call(m, x, h, c):
        utils = _lib(m).nn.utils.rnn
        out, hidden = m(utils.pack_padded_sequence(x, LENGTHS, batch_first=True, enforce_sorted=False), (h, c))
        return utils.pad_packed_sequence(out, batch_first=True), hidden
    check_module(_rnn("LSTM", 4, 5, 2, proj_size=2, bidirectional=True, batch_first=True), _padded(True), h0, c0,
                 call=call)


def test_packed_gru_with_state():
    h0 = rng.standard_normal((1, 3, 5)).astype(np.float32)

    def call(m, x, h):
        return m(_lib(m).nn.utils.rnn.pack_padded_sequence(x, LENGTHS, enforce_sorted=False), h)
    check_module(_rnn("GRU", 4, 5), _padded(), h0, call=call)


# ---- cells ----

@pytest.mark.parametrize("make", [
    lambda nn: nn.RNNCell(4, 5), lambda nn: nn.RNNCell(4, 5, nonlinearity="relu"),
    lambda nn: nn.RNNCell(4, 5, bias=False), lambda nn: nn.GRUCell(4, 5), lambda nn: nn.GRUCell(4, 5, bias=False),
    lambda nn: nn.LSTMCell(4, 5), lambda nn: nn.LSTMCell(4, 5, bias=False),
])
def test_cells(make):
    x = X[0]
    h = rng.standard_normal((3, 5)).astype(np.float32)
    check_module(make, x)
    check_module(make, x[0])                       # unbatched
    if "LSTM" in type(make(torch.nn)).__name__:
        call = (lambda m, x, h, c: m(x, (h, c)))
        check_module(make, x, h, h * 0.5, call=call)
        check_module(make, x[0], h[0], h[1], call=call)
    else:
        check_module(make, x, h)
        check_module(make, x[0], h[0])


@pytest.mark.parametrize("make, inputs", [
    (lambda nn: nn.LSTMCell(3, 4), lambda lib: (lib.ones(2, 5),)),
    (lambda nn: nn.LSTMCell(3, 4), lambda lib: (lib.ones(2, 3), (lib.ones(3, 4), lib.ones(3, 4)))),
    (lambda nn: nn.LSTMCell(3, 4), lambda lib: (lib.ones(2, 3), (lib.ones(2, 5), lib.ones(2, 4)))),
    (lambda nn: nn.LSTMCell(3, 4), lambda lib: (lib.ones(2, 3), (lib.ones(2, 4), lib.ones(2, 5)))),
    (lambda nn: nn.LSTMCell(3, 4), lambda lib: (lib.ones(2, 3), (lib.ones(2, 4, 1), lib.ones(2, 4)))),
    (lambda nn: nn.GRUCell(3, 4), lambda lib: (lib.ones(2, 3), lib.ones(3, 4))),
    (lambda nn: nn.GRUCell(3, 4), lambda lib: (lib.ones(2, 3), lib.ones(2, 5))),
    (lambda nn: nn.GRUCell(3, 4), lambda lib: (lib.ones(2, 3), lib.ones(1, 2, 4))),
    (lambda nn: nn.RNNCell(3, 4), lambda lib: (lib.ones(2, 3, 3),)),
    (lambda nn: nn.RNNCell(3, 4), lambda lib: (lib.ones(3), lib.ones(2, 4))),
    (lambda nn: nn.RNNCell(3, 4), lambda lib: (lib.ones(2, 3), lib.ones(4))),
    (lambda nn: nn.RNNCell(3, 4, nonlinearity="gelu"), lambda lib: (lib.ones(3),)),
])
def test_cell_errors(make, inputs):
    _same_error(lambda lib: make(lib.nn)(*inputs(lib)))


# ---- parameters, names, repr ----

@pytest.mark.parametrize("make", [
    _rnn("LSTM", 3, 4, 2, bidirectional=True, proj_size=2), _rnn("LSTM", 3, 4, bias=False, proj_size=1),
    _rnn("GRU", 3, 4, 2, bias=False), _rnn("RNN", 3, 4, 3, bidirectional=True),
    lambda nn: nn.LSTMCell(3, 4), lambda nn: nn.RNNCell(3, 4, bias=False),
])
def test_parameters_match_torch(make):
    tm, lm = make(torch.nn), make(lantern.nn)
    assert list(lm.state_dict()) == list(tm.state_dict())
    assert [tuple(p.shape) for p in lm.parameters()] == [tuple(p.shape) for p in tm.parameters()]
    if hasattr(tm, "_flat_weights_names"):
        assert lm._flat_weights_names == tm._flat_weights_names
        assert [[tuple(p.shape) for p in ps] for ps in lm.all_weights] == \
            [[tuple(p.shape) for p in ps] for ps in tm.all_weights]
        assert all(a is b for a, b in zip(lm._flat_weights, lm.parameters()))
        assert lm.flatten_parameters() is None
    assert repr(lm) == repr(tm)


def test_init_is_uniform_in_one_over_sqrt_hidden():
    m = lantern.nn.LSTM(30, 64, 2, bidirectional=True)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert np.abs(values).max() <= 1 / 8 and np.abs(values).max() > 0.124
    assert abs(values.mean()) < 0.005 and abs(values.std() - 1 / 8 / 3 ** 0.5) < 0.002


def test_repr():
    assert repr(lantern.nn.LSTM(3, 4, 2, bias=False, batch_first=True, dropout=0.5, bidirectional=True,
                                proj_size=2)) == ("LSTM(3, 4, proj_size=2, num_layers=2, bias=False, batch_first=True,"
                                                  " dropout=0.5, bidirectional=True)")
    assert repr(lantern.nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4)"
    assert repr(lantern.nn.RNNCell(3, 4, bias=False, nonlinearity="relu")) == \
        "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    assert repr(lantern.nn.GRUCell(3, 4)) == "GRUCell(3, 4)"


# ---- nn.utils.rnn ----

def _fields(packed):
    return tuple(packed)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_pad_round_trip(batch_first, enforce_sorted):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS

    def fn(lib, x):
        utils = lib.nn.utils.rnn
        packed = utils.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
        padded = utils.pad_packed_sequence(packed, batch_first=batch_first, padding_value=-1.0, total_length=7)
        return _fields(packed), padded, utils.pad_packed_sequence(packed, batch_first)
    check(fn, _padded(batch_first, lengths), strides=False)


def test_pack_lengths_as_tensor_and_gradients():
    def fn(lib, x):
        x = x.detach().requires_grad_(True)
        utils = lib.nn.utils.rnn
        packed = utils.pack_padded_sequence(x, lib.tensor([5, 3, 2]))
        padded, lengths = utils.pad_packed_sequence(packed)
        (padded * padded).sum().backward()
        return packed.data, padded, lengths, x.grad
    check(fn, X, strides=False)


def test_pad_sequence():
    seqs = [rng.standard_normal((n, 2)).astype(np.float32) for n in (2, 5, 3)]
    for batch_first in (False, True):
        for side in ("left", "right"):
            check(lambda lib, *s: lib.nn.utils.rnn.pad_sequence(s, batch_first, 1.5, side), *seqs)
    check(lambda lib, *s: lib.nn.utils.rnn.pad_sequence(list(s)), *[s[:, 0] for s in seqs])
    check(lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2, dtype=lib.int64), lib.ones(3, dtype=lib.int64)],
                                                    padding_value=2.5))
    check(lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(3, 2), lib.ones(2, 2, dtype=lib.float64)]))
    check(lambda lib: lib.nn.utils.rnn.pad_sequence(lib.arange(6.).view(2, 3)))
    check(lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(0, 2), lib.ones(1, 2)]))


def test_pad_sequence_gradients():
    def fn(lib, a, b):
        a, b = a.requires_grad_(True), b.requires_grad_(True)
        out = lib.nn.utils.rnn.pad_sequence([a, b], batch_first=True, padding_side="left")
        (out * out).sum().backward()
        return out, a.grad, b.grad
    check(fn, X[:2, 0], X[:4, 1], strides=False)


def test_pack_unpack_unpad_sequence():
    seqs = [rng.standard_normal((n, 2)).astype(np.float32) for n in LENGTHS]
    check(lambda lib, *s: _fields(lib.nn.utils.rnn.pack_sequence(s, enforce_sorted=False)), *seqs)
    check(lambda lib, *s: lib.nn.utils.rnn.unpack_sequence(lib.nn.utils.rnn.pack_sequence(s, False)), *seqs,
          strides=False)
    sorted_seqs = sorted(seqs, key=len, reverse=True)
    check(lambda lib, *s: _fields(lib.nn.utils.rnn.pack_sequence(s)), *sorted_seqs)
    for batch_first in (False, True):
        check(lambda lib, x: lib.nn.utils.rnn.unpad_sequence(x, lib.tensor(LENGTHS), batch_first), _padded(batch_first),
              strides=False)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(3, 2, 4), [2, 3]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(3, 2, 4), [3, 0]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(3, 2, 4), [3, 0], enforce_sorted=False),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(3, 2, 4), [3, 2, 1]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(3, 2, 4), [3, 2], batch_first=True),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(3, 2, 4), [[3, 2]]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(3, 2, 4), lib.tensor(3)),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(0, 2), [0, 0]),
    lambda lib: lib.nn.utils.rnn.pad_sequence([]),
    lambda lib: lib.nn.utils.rnn.pad_sequence(5),
    lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3), lib.ones(3, 4)]),
    lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3), lib.ones(3, 3)], padding_side="mid"),
    lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3), 5]),
    lambda lib: lib.nn.utils.rnn.pad_packed_sequence(lib.nn.utils.rnn.pack_sequence([lib.ones(3), lib.ones(2)]),
                                                     total_length=2),
    lambda lib: lib.nn.utils.rnn.PackedSequence(lib.ones(3)),
])
def test_utils_errors(fn):
    _same_error(fn)


def test_pad_sequence_rejects_0d_tensors():
    raises_like(lambda lib: lib.nn.utils.rnn.pad_sequence([lib.tensor(1.), lib.ones(3)]))


def test_packed_sequence_object():
    utils = lantern.nn.utils.rnn
    packed = utils.pack_sequence([lantern.ones(2), lantern.ones(3)], enforce_sorted=False)
    assert packed._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert packed.batch_sizes.dtype is lantern.int64 and packed.sorted_indices.dtype is lantern.int64
    assert packed.to(lantern.float32) is packed and not packed.is_cuda
    double = packed.double()
    assert double.data.dtype is lantern.float64 and double.batch_sizes is packed.batch_sizes
    assert double.sorted_indices.tolist() == [1, 0] and double.unsorted_indices.tolist() == [1, 0]
    built = utils.PackedSequence((packed.data, packed.batch_sizes))
    assert built.sorted_indices is None and built.unsorted_indices is None
    assert utils.PackedSequence(packed.data, packed.batch_sizes, lantern.tensor([2, 0, 1])).unsorted_indices.tolist() \
        == [1, 2, 0]
    assert utils.invert_permutation(None) is None
    assert repr(utils.pack_sequence([lantern.tensor([1, 2]), lantern.tensor([3])])) == \
        repr(torch.nn.utils.rnn.pack_sequence([torch.tensor([1, 2]), torch.tensor([3])])).replace("torch", "lantern")
