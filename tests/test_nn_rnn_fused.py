"""The fused recurrence (lantern/ops/nn_rnn.py behind nn.RNN / LSTM / GRU): exact against torch in float64, free of
per-step lantern calls, and replaced by the step equations as ops where it cannot run (traces, meta, float16)."""
import functools
import io

import numpy as np
import pytest
import torch

import lantern
from lantern.core import intra_op
from lantern.core.intra_op import one_blas_thread
from lantern.ops import nn_rnn, numba_kernels
from nn_oracle import check_module, same_weights

pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")]

rng = np.random.default_rng(7)
X = rng.standard_normal((6, 3, 4))                     # (seq, batch, feature), float64


def _double(mode, *args, **kwargs):
    return lambda nn: getattr(nn, mode)(*args, **kwargs).double()


@pytest.mark.parametrize("make", [
    _double("LSTM", 4, 5), _double("LSTM", 4, 5, 2, bidirectional=True), _double("LSTM", 4, 5, proj_size=3),
    _double("LSTM", 4, 5, 2, proj_size=2, bidirectional=True, bias=False),
    _double("GRU", 4, 5, bidirectional=True), _double("GRU", 4, 5, 2, bias=False),
    _double("RNN", 4, 5, bidirectional=True), _double("RNN", 4, 5, 2, nonlinearity="relu", bidirectional=True),
])
def test_float64_values_and_gradients_match_torch(make):
    """Outputs, h_n (and c_n) and the gradients of inputs and every weight, to float64 rounding."""
    _, lm = check_module(make, X, atol=1e-12, rtol=1e-10)
    out, _ = lm(lantern.tensor(X, requires_grad=True))
    assert type(out.grad_fn).__name__ in ("_RecurrenceBackward", "CatBackward0")   # fused (and joined directions)


@pytest.mark.parametrize("make", [
    lambda nn: nn.LSTM(4, 5, 2, bidirectional=True), lambda nn: nn.LSTM(4, 5, batch_first=True),
    lambda nn: nn.GRU(4, 5, 2, bidirectional=True), lambda nn: nn.GRU(4, 5, bias=False, batch_first=True),
])
def test_float32_values_and_gradients_match_torch(make):
    """In float32 (the compiled steps where numba is installed): outputs, states and every gradient, to float32
    rounding, over both directions and stacked layers."""
    check_module(make, X.astype(np.float32), atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_given_state_float64(mode):
    h0 = rng.standard_normal((2, 3, 5))
    if mode == "LSTM":
        c0 = rng.standard_normal((2, 3, 5))
        check_module(_double(mode, 4, 5, bidirectional=True), X, h0, c0, atol=1e-12, rtol=1e-10,
                     call=lambda m, x, h, c: m(x, (h, c)))
    else:
        check_module(_double(mode, 4, 5, bidirectional=True), X, h0, atol=1e-12, rtol=1e-10)


def test_gradcheck_through_the_fused_node():
    lantern.manual_seed(0)
    m = lantern.nn.LSTM(2, 3, proj_size=2, bidirectional=True).double()
    x = lantern.randn(4, 2, 2, dtype=lantern.float64, requires_grad=True)
    h = lantern.randn(2, 2, 2, dtype=lantern.float64, requires_grad=True)
    c = lantern.randn(2, 2, 3, dtype=lantern.float64, requires_grad=True)
    assert lantern.autograd.gradcheck(lambda x, h, c: m(x, (h, c))[0], (x, h, c))
    assert lantern.autograd.gradcheck(lambda x: lantern.nn.functional.relu(m(x)[1][1]), (x,))


def _op_count(module, steps):
    module.zero_grad()
    trace = io.StringIO()
    x = lantern.randn(steps, 2, 3)
    with lantern.debug.trace_dispatch(stream=trace):
        out, _ = module(x)
        out.sum().backward()
    return sorted(line.split()[0] for line in trace.getvalue().splitlines() if not line.startswith("backward:"))


@pytest.mark.parametrize("make", [lambda: lantern.nn.LSTM(3, 4), lambda: lantern.nn.GRU(3, 4),
                                  lambda: lantern.nn.RNN(3, 4)])
def test_no_lantern_call_per_step(make):
    """Forward and backward make the same dispatcher calls for 3 steps as for 30: the time loop runs on arrays."""
    module = make()
    assert _op_count(module, 3) == _op_count(module, 30)


def test_backward_twice_with_retain_graph_doubles_the_gradients():
    """The backward kernels leave what the node saved untouched."""
    lantern.manual_seed(0)
    for m in (lantern.nn.LSTM(3, 4, proj_size=2), lantern.nn.GRU(3, 4), lantern.nn.RNN(3, 4)):
        out, _ = m(lantern.randn(5, 2, 3))
        loss = (out * out).sum()
        loss.backward(retain_graph=True)
        first = [p.grad.clone() for p in m.parameters()]
        loss.backward()
        for g, p in zip(first, m.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), 2 * g.numpy(), rtol=1e-6, atol=1e-7)


def test_weights_changed_in_place_before_backward_raise_as_in_torch():
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.LSTM(3, 4)
        out, _ = m(lib.randn(5, 2, 3))
        with lib.no_grad():
            m.weight_hh_l0.mul_(2)
        out.sum().backward()

    for lib in (torch, lantern):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run(lib)


def test_trace_records_the_step_equations():
    """Under the JIT tracer the recurrence runs as ops, so the trace replays it (here on a longer sequence)."""
    lantern.manual_seed(0)
    m = lantern.nn.LSTM(3, 4)
    traced = lantern.jit.trace(lambda x: m(x)[0], lantern.randn(5, 2, 3))
    assert "aten::sigmoid" in str(traced.graph)
    x = lantern.randn(5, 2, 3)
    np.testing.assert_allclose(traced(x).detach().numpy(), m(x)[0].detach().numpy(), rtol=1e-6, atol=1e-6)


def test_meta_and_float16_take_the_composite_path():
    out, (h, c) = lantern.nn.LSTM(3, 4, device="meta")(lantern.empty(5, 2, 3, device="meta"))
    assert (out.device.type, tuple(out.shape), tuple(h.shape), tuple(c.shape)) == ("meta", (5, 2, 4), (1, 2, 4),
                                                                                   (1, 2, 4))
    torch.manual_seed(0)
    tm = torch.nn.GRU(3, 4)
    lm = lantern.nn.GRU(3, 4)
    same_weights(tm, lm)
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    got = lm.half()(lantern.tensor(x).half())[0]
    assert got.dtype is lantern.float16 and type(got.grad_fn).__name__ != "_RecurrenceBackward"
    np.testing.assert_allclose(got.float().detach().numpy(), tm(torch.tensor(x))[0].detach().numpy(), atol=5e-3)


def _tagger(nn, mode):
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.lstm, self.out = nn.Embedding(20, 6), getattr(nn, mode)(6, 8), nn.Linear(8, 20)

        def forward(self, tokens):
            hidden, _ = self.lstm(self.embed(tokens))
            return self.out(hidden).flatten(0, 1)

    return Tagger()


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_training_steps_match_torch(mode):
    """The benchmark's models (Embedding + LSTM or GRU + Linear, Adam), small, in float32 (the compiled steps
    where numba is installed): the same losses over a few steps."""
    torch.manual_seed(0)
    tm, lm = _tagger(torch.nn, mode), _tagger(lantern.nn, mode)
    same_weights(tm, lm)
    tokens = rng.integers(0, 20, (7, 3))
    targets = rng.integers(0, 20, (21,))
    losses = {}
    for lib, m in ((torch, tm), (lantern, lm)):
        opt = lib.optim.Adam(m.parameters(), lr=0.01)
        x, y = lib.tensor(tokens), lib.tensor(targets)
        losses[lib.__name__] = []
        for _ in range(4):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            losses[lib.__name__].append(loss.item())
    np.testing.assert_allclose(losses["lantern"], losses["torch"], rtol=1e-5)


def _lstm_run(forward, backward, inputs, outs, grads, order):
    xw, h0, c0, w_hh = inputs
    acts, cells, tanh_cells, out = outs
    empty = functools.partial(np.empty, dtype=xw.dtype)
    forward(np, empty, xw, h0, c0, w_hh, None, order, acts, cells, tanh_cells, None, out)
    d_out, d_hn, d_cn = grads
    results = [np.empty_like(a) for a in (xw, h0, c0, w_hh)]
    backward(np, empty, (h0, c0, w_hh, None, out, acts, cells, tanh_cells, None), d_out, d_hn, d_cn, order,
             *results, None)
    return outs + results


def _gru_run(forward, backward, inputs, grads, order):
    xw, h0, w_hh, b_hh = inputs
    T, B, G = xw.shape
    acts, hidden, out = (np.empty(s, np.float32) for s in ((T, B, G), (T, B, G), (T, B, G // 3)))
    empty = functools.partial(np.empty, dtype=xw.dtype)
    forward(np, empty, xw, h0, w_hh, b_hh, order, acts, hidden, out)
    d_out, d_hn = grads
    results = [np.empty_like(a) for a in (xw, h0, w_hh)] + [None if b_hh is None else np.empty_like(b_hh)]
    backward(np, empty, (h0, w_hh, out, acts, hidden), d_out, d_hn, order, *results)
    return [acts, hidden, out] + [r for r in results if r is not None]


@pytest.mark.parametrize("reverse", [False, True])
def test_compiled_steps_match_the_readable_kernels(reverse):
    """The numba specialisations of nn_rnn (one kernel per step) give the readable kernels' results, saved
    activations included, to float32 rounding: LSTM and GRU (with and without b_hh), both directions."""
    pytest.importorskip("numba")
    f, T, B, H = np.float32, 6, 3, 5
    gen = np.random.default_rng(11)
    order = list(range(T))[::-1] if reverse else list(range(T))
    lstm_in = [gen.standard_normal(s).astype(f) for s in ((T, B, 4 * H), (B, H), (B, H), (4 * H, H))]
    lstm_grads = [gen.standard_normal(s).astype(f) for s in ((T, B, H), (B, H), (B, H))]
    runs = []
    for forward, backward in ((nn_rnn.lstm_forward, nn_rnn.lstm_backward),
                              (nn_rnn.lstm_forward_compiled, nn_rnn.lstm_backward_compiled)):
        outs = [np.empty(s, f) for s in ((T, 4, B, H), (T, B, H), (T, B, H), (T, B, H))]
        runs.append(_lstm_run(forward, backward, lstm_in, outs, lstm_grads, order))
    for bias in (True, False):
        gru_in = [gen.standard_normal(s).astype(f) for s in ((T, B, 3 * H), (B, H), (3 * H, H))]
        gru_in.append(gen.standard_normal(3 * H).astype(f) if bias else None)
        gru_grads = [gen.standard_normal(s).astype(f) for s in ((T, B, H), (B, H))]
        runs += [_gru_run(nn_rnn.gru_forward, nn_rnn.gru_backward, gru_in, gru_grads, order),
                 _gru_run(nn_rnn.gru_forward_compiled, nn_rnn.gru_backward_compiled, gru_in, gru_grads, order)]
    for readable, compiled in zip(runs[::2], runs[1::2]):
        for want, got in zip(readable, compiled):
            # tanh saturates (1 - tanh^2 = 0) a little earlier in float32's own formula than in NumPy's
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6 * max(1, np.abs(want).max()))


@pytest.mark.parametrize("reverse", [False, True])
def test_compiled_lstm_steps_in_column_blocks_match_the_readable_kernels(monkeypatch, reverse):
    """With the step's products split into column blocks (here uneven ones: 7, 7, 6 columns forward, 2, 2, 1
    backward), the compiled LSTM steps still give the readable kernels' results."""
    pytest.importorskip("numba")
    monkeypatch.setattr(nn_rnn, "_MOST_PER_PRODUCT", 100)
    monkeypatch.setattr(nn_rnn, "_LEAST_WIDTH", 1)
    f, T, B, H = np.float32, 4, 3, 5
    assert [c for c, _ in nn_rnn._column_blocks(np.empty, np.zeros((4 * H, H), f).T, B)] == [
        slice(0, 7), slice(7, 14), slice(14, 20)]
    gen = np.random.default_rng(5)
    order = list(range(T))[::-1] if reverse else list(range(T))
    inputs = [gen.standard_normal(s).astype(f) for s in ((T, B, 4 * H), (B, H), (B, H), (4 * H, H))]
    grads = [gen.standard_normal(s).astype(f) for s in ((T, B, H), (B, H), (B, H))]
    runs = [_lstm_run(forward, backward, inputs, [np.empty(s, f) for s in ((T, 4, B, H),) + 3 * ((T, B, H),)],
                      grads, order)
            for forward, backward in ((nn_rnn.lstm_forward, nn_rnn.lstm_backward),
                                      (nn_rnn.lstm_forward_compiled, nn_rnn.lstm_backward_compiled))]
    for want, got in zip(*runs):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6 * max(1, np.abs(want).max()))


def _at_one_and_two_threads(run):
    """[run() at one thread, run() at two]; the thread count comes back afterwards."""
    before = lantern.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            lantern.set_num_threads(threads)
            results.append(run())
        return results
    finally:
        lantern.set_num_threads(before)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("batch,hidden", [(9, 6), (20, 128), (3, 6)])
def test_lstm_in_row_blocks_matches_the_readable_kernels(batch, hidden, reverse):
    """The LSTM in blocks of rows (9 rows: 5 and 4; 20 rows of 128: 8, 8 and 4; 3 rows: one block) gives the readable
    kernels' values, saved activations and gradients included, to float32 rounding, with h0 and c0 as
    non-contiguous views; and the same bits at one and two threads."""
    pytest.importorskip("numba")
    f, T = np.float32, 5
    gen = np.random.default_rng(batch)
    order = list(range(T))[::-1] if reverse else list(range(T))
    h0, c0 = (gen.standard_normal((hidden, batch)).astype(f).T for _ in range(2))
    inputs = [gen.standard_normal((T, batch, 4 * hidden)).astype(f), h0, c0,
              (gen.standard_normal((4 * hidden, hidden)) / hidden ** 0.5).astype(f)]
    grads = [gen.standard_normal(s).astype(f) for s in ((T, batch, hidden), (batch, hidden), (batch, hidden))]

    def run(forward, backward):
        shapes = ((T, 4, batch, hidden),) + 3 * ((T, batch, hidden),)
        return _lstm_run(forward, backward, inputs, [np.empty(s, f) for s in shapes], grads, order)
    readable = run(nn_rnn.lstm_forward, nn_rnn.lstm_backward)
    in_blocks = _at_one_and_two_threads(lambda: run(nn_rnn.lstm_forward_in_row_blocks,
                                                    nn_rnn.lstm_backward_in_row_blocks))
    for want, one, two in zip(readable, *in_blocks):
        np.testing.assert_array_equal(two, one)
        np.testing.assert_allclose(one, want, rtol=2e-5, atol=2e-6 * max(1, np.abs(want).max()))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("batch,hidden,bias", [(9, 6, True), (20, 128, False), (3, 6, True)])
def test_gru_in_row_blocks_matches_the_readable_kernels(batch, hidden, bias, reverse):
    """The GRU in blocks of rows, as the LSTM above: the readable kernels' values (with and without b_hh, h0 a
    non-contiguous view), the same bits at one and two threads."""
    pytest.importorskip("numba")
    f, T = np.float32, 5
    gen = np.random.default_rng(batch)
    order = list(range(T))[::-1] if reverse else list(range(T))
    inputs = [gen.standard_normal((T, batch, 3 * hidden)).astype(f), gen.standard_normal((hidden, batch)).astype(f).T,
              (gen.standard_normal((3 * hidden, hidden)) / hidden ** 0.5).astype(f),
              gen.standard_normal(3 * hidden).astype(f) if bias else None]
    grads = [gen.standard_normal(s).astype(f) for s in ((T, batch, hidden), (batch, hidden))]
    readable = _gru_run(nn_rnn.gru_forward, nn_rnn.gru_backward, inputs, grads, order)
    in_blocks = _at_one_and_two_threads(lambda: _gru_run(nn_rnn.gru_forward_in_row_blocks,
                                                         nn_rnn.gru_backward_in_row_blocks, inputs, grads, order))
    for want, one, two in zip(readable, *in_blocks):
        np.testing.assert_array_equal(two, one)
        np.testing.assert_allclose(one, want, rtol=2e-5, atol=2e-6 * max(1, np.abs(want).max()))


def test_row_blocks_only_for_hidden_sizes_up_to_128():
    """Larger LSTMs and GRUs keep the step loop: SciPy's BLAS, which the row kernels call, was slower at their
    shapes."""
    assert nn_rnn.row_blocks_apply(np.empty((2, 16, 4 * 128), np.float32), 4)
    assert nn_rnn.row_blocks_apply(np.empty((2, 16, 3 * 128), np.float32), 3)
    assert not nn_rnn.row_blocks_apply(np.empty((2, 16, 4 * 256), np.float32), 4)
    assert not nn_rnn.row_blocks_apply(np.empty((2, 16, 3 * 129), np.float32), 3)


def test_column_blocks_split_only_into_wide_blocks():
    """A step's product is split only where every block keeps _LEAST_WIDTH columns: the LSTM tagger's 16 rows in
    two blocks each way, 64 rows backward (blocks of 16 columns would be slower) in none. The blocks are views of
    W_hh itself, or of one contiguous copy of W_hh^T, with contiguous rows."""
    f = np.float32
    w_hh, empty = np.arange(512 * 128, dtype=f).reshape(512, 128), functools.partial(np.empty, dtype=f)
    forward, backward = nn_rnn._column_blocks(empty, w_hh.T, 16), nn_rnn._column_blocks(empty, w_hh, 16)
    assert [c for c, _ in forward] == [slice(0, 256), slice(256, 512)]
    assert [c for c, _ in backward] == [slice(0, 64), slice(64, 128)]
    assert all(b.strides[1] == 4 and np.array_equal(b, w[:, c]) for w, blocks in ((w_hh.T, forward),
               (w_hh, backward)) for c, b in blocks)
    assert all(np.shares_memory(b, w_hh) for _, b in backward) and not np.shares_memory(forward[0][1], w_hh)
    assert forward[0][1].base is forward[1][1].base
    assert nn_rnn._column_blocks(np.empty, w_hh, 64) == [(slice(None), w_hh)]


@pytest.mark.parametrize("shape", [(3, 130), (7, 64), (1, 1)])
def test_contiguous_copies_in_column_slabs(shape):
    """_contiguous copies a non-contiguous array in slabs of _COPY_WIDTH columns, the last one partial: same
    values, C-contiguous; a contiguous array comes back as itself."""
    w = np.random.default_rng(3).standard_normal(shape[::-1]).astype(np.float32)
    copy = nn_rnn._contiguous(functools.partial(np.empty, dtype=np.float32), w.T)
    assert copy.flags.c_contiguous and np.array_equal(copy, w.T)
    assert nn_rnn._contiguous(np.empty, w) is w


def test_compiled_steps_serve_float32_outside_reference_mode():
    """A float32 LSTM/GRU runs the numba steps (where numba is installed), reference mode the readable ones."""
    xw = np.zeros((2, 1, 4), np.float32)
    assert nn_rnn.compiled_steps_apply(np, xw) == (lantern.core.reference.fast_paths_on() and
                                                   nn_rnn._cells() is not None)
    assert not nn_rnn.compiled_steps_apply(np, xw.astype(np.float64))
    assert not nn_rnn.compiled_steps_apply(np, xw, projected=True)
    with lantern.core.reference.reference_mode():
        assert not nn_rnn.compiled_steps_apply(np, xw)


@pytest.mark.parametrize("mode,hidden,kind", [("LSTM", 8, "in_row_blocks"), ("LSTM", 129, "compiled"),
                                               ("GRU", 8, "in_row_blocks"), ("GRU", 129, "compiled")])
def test_layers_choose_their_kernels(monkeypatch, mode, hidden, kind):
    """nn.LSTM / nn.GRU in float32 run in blocks of rows up to hidden size 128 and the compiled step loop above,
    forward and backward; reference mode runs the readable kernels."""
    pytest.importorskip("numba")
    from lantern.nn.modules import rnn
    called = []
    for step in ("forward", "backward"):
        for variant in ("", "_compiled", "_in_row_blocks"):
            name = f"{mode.lower()}_{step}{variant}"
            original = getattr(rnn, name)
            monkeypatch.setattr(rnn, name, functools.partial(lambda f, n, *a: called.append(n) or f(*a), original,
                                                             name))
    layer = getattr(lantern.nn, mode)(3, hidden)
    layer(lantern.randn(4, 2, 3))[0].sum().backward()
    with lantern.reference_mode():
        layer(lantern.randn(4, 2, 3))[0].sum().backward()
    fast = "" if not lantern.core.reference.fast_paths_on() else f"_{kind}"
    low = mode.lower()
    assert called == [f"{low}_forward{fast}", f"{low}_backward{fast}", f"{low}_forward", f"{low}_backward"]


def test_without_numba_float32_runs_the_readable_kernels(monkeypatch):
    """Without numba, a float32 LSTM trains on the readable NumPy kernels, to the same values."""
    import sys
    lantern.manual_seed(0)
    m = lantern.nn.LSTM(3, 4)
    x = lantern.randn(5, 2, 3)
    with_numba = m(x)[0]
    nn_rnn._cells()
    monkeypatch.setitem(sys.modules, "numba", None)                  # `import numba` now raises ImportError
    monkeypatch.delitem(sys.modules, "lantern.ops.nn_rnn_numba", raising=False)
    monkeypatch.delattr(lantern.ops, "nn_rnn_numba", raising=False)
    monkeypatch.delitem(numba_kernels._LOADED, "lantern.ops.nn_rnn_numba", raising=False)
    assert not nn_rnn.compiled_steps_apply(np, np.zeros((1, 1, 4), np.float32))
    without = m(x)[0]
    without.sum().backward()
    np.testing.assert_allclose(without.detach().numpy(), with_numba.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reference", [False, True], ids=["fast paths", "reference mode"])
def test_compiled_steps_give_back_the_blas_threads(reference):
    """The time loop holds BLAS to one thread and restores the count afterwards, errors included (with fast paths
    on at two threads BLAS runs one thread anyway: intra_op.blas_thread_limit)."""
    before = lantern.get_num_threads()
    lantern.set_num_threads(2)
    try:
        with lantern.reference_mode(reference):
            blas = intra_op.blas_thread_limit()
            m = lantern.nn.GRU(3, 4)
            m(lantern.randn(5, 2, 3))[0].sum().backward()
            assert intra_op._blas_threads() == blas
            with pytest.raises(RuntimeError), one_blas_thread():
                assert intra_op._blas_threads() == 1
                raise RuntimeError("inside the loop")
            assert intra_op._blas_threads() == blas
            assert lantern.get_num_threads() == 2
    finally:
        lantern.set_num_threads(before)
