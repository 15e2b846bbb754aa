"""torch's top-level nn functions of the census (torch.cosine_embedding_loss, torch.feature_dropout, torch.gru_cell,
...), compared with torch: values, dtypes, gradients, in-place semantics, the random draws for a seed, errors."""
import warnings

import numpy as np
import pytest

from oracle import check, noncontig, raises_like

rng = np.random.default_rng(2)


def _r(*shape):
    return noncontig(rng.standard_normal(shape))


def _signs(n):
    return np.where(rng.random(n) < 0.5, -1.0, 1.0)


LOSSES = [
    ("cosine_embedding_loss", lambda: (_r(3, 4), _r(3, 4), _signs(3)), (0.2,)),
    ("hinge_embedding_loss", lambda: (_r(3, 4), _signs(12).reshape(3, 4)), (0.5,)),
    ("margin_ranking_loss", lambda: (_r(5), _r(5), _signs(5)), (0.1,)),
    ("poisson_nll_loss", lambda: (_r(3, 4), np.abs(_r(3, 4))), (True, True, 1e-8)),
    ("triplet_margin_loss", lambda: (_r(3, 4), _r(3, 4), _r(3, 4)), (0.7, 2, 1e-6, True)),
]


@pytest.mark.parametrize("reduction", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("name,make,args", LOSSES, ids=[c[0] for c in LOSSES])
def test_losses_with_integer_reduction(name, make, args, reduction):
    inputs = make()
    if name == "poisson_nll_loss" and reduction is None:
        raises_like(lambda lib, *xs: getattr(lib, name)(*xs, *args), *inputs)
        return

    def run(lib, *xs):
        xs = [x.requires_grad_() if x.dtype.is_floating_point else x for x in xs]
        extra = () if reduction is None else (reduction,)
        loss = getattr(lib, name)(*xs, *args, *extra)
        loss.sum().backward()
        return loss, [x.grad for x in xs]
    check(run, *inputs)


def test_loss_reduction_must_be_an_int():
    raises_like(lambda lib, a, b, t: lib.cosine_embedding_loss(a, b, t, 0.0, "mean"), _r(3, 4), _r(3, 4), _signs(3))


def test_ctc_loss():
    log_probs = np.log(rng.dirichlet(np.ones(4), size=(6, 2)))
    targets = np.array([[1, 2], [1, 1]])

    def run(lib, lp, tg, reduction, lengths_as_tensors):
        il, tl = ([6, 5], [2, 2]) if not lengths_as_tensors else (lib.tensor([6, 5]), lib.tensor([2, 2]))
        return lib.ctc_loss(lp, tg, il, tl, 0, *(() if reduction is None else (reduction,)))
    for reduction in (None, 1, 2):
        check(lambda lib, lp, tg: run(lib, lp, tg, reduction, reduction == 2), log_probs, targets)
    check(lambda lib, lp, tg: lib.ctc_loss(lp, tg, [6, 5], [2, 2], 0, 1, True), log_probs, targets)


@pytest.mark.parametrize("name,shape", [("dropout_", (4, 6)), ("alpha_dropout_", (4, 6)),
                                        ("feature_dropout", (3, 4, 5)), ("feature_dropout_", (3, 4, 5)),
                                        ("feature_alpha_dropout", (3, 4, 5)), ("feature_alpha_dropout_", (3, 4, 5))])
@pytest.mark.parametrize("p,train", [(0.4, True), (0.4, False), (0.0, True), (1.0, True)])
def test_dropouts(name, shape, p, train):
    def run(lib, x):
        lib.manual_seed(7)
        result = getattr(lib, name)(x, p, train)
        return result, result is x, x, x._version
    check(run, _r(*shape))


@pytest.mark.parametrize("name", ["dropout_", "alpha_dropout_", "feature_dropout", "feature_alpha_dropout_"])
def test_dropout_errors(name):
    raises_like(lambda lib, x: getattr(lib, name)(x, 1.5, True), _r(3, 4))
    raises_like(lambda lib, x: getattr(lib, name)(x, -0.1, True), _r(3, 4))


def test_feature_dropout_needs_two_dims():
    raises_like(lambda lib, x: lib.feature_dropout(x, 0.5, True), _r(4))


@pytest.mark.parametrize("p,train", [(0.3, True), (0.3, False), (0.0, True), (1.0, True)])
def test_native_dropout(p, train):
    def run(lib, x):
        lib.manual_seed(3)
        leaf = x.requires_grad_()
        out, mask = lib.native_dropout(leaf, p, train)
        out.sum().backward()
        return out, mask, leaf.grad
    check(run, _r(4, 5))


def test_rrelu():
    def run(lib, x, training):
        lib.manual_seed(5)
        leaf = x.requires_grad_()
        y = lib.rrelu(leaf, 0.1, 0.3, training)
        y.sum().backward()
        z = x.detach().clone()
        return y, leaf.grad, lib.rrelu_(z, 0.1, 0.3, training) is z, z, lib.rrelu(x.detach())
    for training in (False, True):
        check(lambda lib, x: run(lib, x, training), _r(3, 4))
    raises_like(lambda lib, x: lib.rrelu(x, 0.5, 0.1), _r(3))


CELLS = [("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("gru_cell", 3), ("lstm_cell", 4)]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("name,gates", CELLS, ids=[c[0] for c in CELLS])
def test_rnn_cells(name, gates, bias):
    hidden = 4
    x, h, c = _r(2, 3), _r(2, hidden), _r(2, hidden)
    w_ih, w_hh, b_ih, b_hh = _r(gates * hidden, 3), _r(gates * hidden, hidden), _r(gates * hidden), _r(gates * hidden)

    def run(lib, x, h, c, w_ih, w_hh, b_ih, b_hh):
        params = [t.requires_grad_() for t in (x, h, c, w_ih, w_hh, b_ih, b_hh)]
        state = (h, c) if name == "lstm_cell" else h
        out = getattr(lib, name)(x, state, w_ih, w_hh, *((b_ih, b_hh) if bias else ()))
        total = sum(o.sum() for o in out) if isinstance(out, tuple) else out.sum()
        total.backward()
        return out, [p.grad for p in params]
    check(run, x, h, c, w_ih, w_hh, b_ih, b_hh)


def test_rnn_cell_errors():
    x, h = _r(2, 3), _r(2, 4)
    raises_like(lambda lib, x, h, w, u: lib.gru_cell(x, h, w, u), x, h, _r(12, 2), _r(12, 4))
    raises_like(lambda lib, x, h, w, u: lib.rnn_tanh_cell(x, h, w, u), x, h, _r(4, 3), _r(4, 5))
    raises_like(lambda lib, x, h, w, u: lib.lstm_cell(x, [h], w, u), x, h, _r(16, 3), _r(16, 4))


def test_norms():
    x = _r(3, 4, 5)

    def run(lib, x):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values = [lib.frobenius_norm(x, [0, 2]), lib.frobenius_norm(x, [1], True), lib.nuclear_norm(x[0]),
                      lib.nuclear_norm(x[0], True), lib.nuclear_norm(x, [1, 2]), lib.nuclear_norm(x, [0, 2], True)]
        return values, len(caught)
    check(run, x)
    for dim in (0, 1, 2, -1, -2):
        for p in (2, 3):
            check(lambda lib, x: lib.norm_except_dim(x, p, dim), x)
    check(lambda lib, x: lib.norm_except_dim(x), x)
    check(lambda lib, x: lib.norm_except_dim(x[0], 2, 1), x)
    raises_like(lambda lib, x: lib.norm_except_dim(x, 2, 5), x)


def test_conv_tbc():
    def run(lib, x, w, b, pad):
        params = [t.requires_grad_() for t in (x, w, b)]
        y = lib.conv_tbc(x, w, b, pad)
        y.sum().backward()
        return y, [p.grad for p in params]
    for pad in (0, 1):
        check(lambda lib, x, w, b: run(lib, x, w, b, pad), _r(5, 2, 3), _r(3, 3, 4), _r(4))
    raises_like(lambda lib, x, w: lib.conv_tbc(x, w, None), _r(5, 2, 3), _r(3, 3, 4))


def test_embedding_renorm_():
    def run(lib, w):
        result = lib.embedding_renorm_(w, lib.tensor([0, 2, 2, 4]), 1.0, 2.0)
        return result is w, w, w._version > 0
    check(run, rng.standard_normal((5, 3)) * 2)
    raises_like(lambda lib, w: lib.embedding_renorm_(w.requires_grad_(), lib.tensor([0]), 1.0, 2.0), _r(5, 3))


def test_affine_grid_generator():
    check(lambda lib, theta: lib.affine_grid_generator(theta, [2, 1, 3, 4], False), _r(2, 2, 3))
    check(lambda lib, theta: lib.affine_grid_generator(theta, [1, 1, 2, 3, 2], True), _r(1, 3, 4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag(mode, include_last_offset, padding_idx, dtype):
    weight = rng.standard_normal((5, 3)).astype(dtype)
    indices = np.array([0, 2, 1, 3, 3, 4, 2])

    def run(lib, weight, indices, offsets, requires_grad):
        weight.requires_grad_(requires_grad)
        result = lib.embedding_bag(weight, indices, offsets, False, mode, False, None, include_last_offset,
                                   padding_idx)
        if requires_grad:
            result[0].sum().backward()
        return result, weight.grad
    # With include_last_offset the last offset is the end of the input: torch's kernels disagree with one another
    # on offsets that stop short of it, and crash on a lone offset.
    for offsets in ([[0, 2, 2, 7], [0, 3, 7]] if include_last_offset else [[0, 2, 2, 5], [0, 3], [0]]):
        for requires_grad in (False, True):
            check(lambda lib, w, i, o: run(lib, w, i, o, requires_grad), weight, indices, np.array(offsets))
    if mode == 0:
        check(lambda lib, w, i, o, p: lib.embedding_bag(w, i, o, False, 0, False, p, include_last_offset, padding_idx),
              weight, indices, np.array([0, 3, 7] if include_last_offset else [0, 3]), rng.random(7).astype(dtype))


def test_embedding_bag_needs_offsets():
    raises_like(lambda lib, w, i: lib.embedding_bag(w, i, None), rng.standard_normal((5, 3)), np.array([[0, 1]]))
