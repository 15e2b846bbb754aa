"""vmap's batching rules for indexing, in-place ops with dims, out= variants and the nn backward kernels, against
torch.vmap / torch.func on the same functions; each case also runs with the fallback's warning as an error, so a
rule (not the per-example fallback) computed it."""
import warnings

import numpy as np
import pytest

import lantern
from oracle import check, raises_like

RNG = np.random.default_rng(21)


def rand(*shape):
    """Non-contiguous float64 values of this shape (a transposed array)."""
    return RNG.standard_normal(shape[::-1]).T


def index(*values):
    return np.array(values, dtype=np.int64)


def check_without_fallback(fn, *inputs, atol=None, rtol=None):
    """check(fn, ...), lantern's side with the fallback's warning as an error (torch takes its fallback for some)."""
    def run(m, *args):
        with warnings.catch_warnings():
            warnings.filterwarnings("error" if m is lantern else "ignore", "There is a performance drop", UserWarning)
            return fn(m, *args)
    check(run, *inputs, strides=False, aliasing=False, atol=atol, rtol=rtol)


def assigned(t, key, value):
    t[key] = value
    return t


def vmap(m, f, in_dims=0):
    return m.func.vmap(f, in_dims=in_dims)


# ---- advanced indexing: any mix of batched self, indices and values -------------------------------------------------
I = index([0, 2], [3, 3], [1, 0])                   # a batch of 3 examples' indices into a dim of 4
INDEXING = {
    "index_put of batched values into unbatched zeros":
        (lambda m, v, i: vmap(m, lambda r: m.zeros(4, dtype=r.dtype).index_put((i[0],), r, True))(v), (3, 2)),
    "index_put of batched indices": (lambda m, v, i: vmap(m, lambda j: v[0].sum().expand(4).index_put(
        (j,), m.tensor(5., dtype=v.dtype)))(i), (3, 2)),
    "index_put all batched": (lambda m, v, i: vmap(m, lambda s, j, r: s.index_put((j,), r, True))(
        m.zeros(3, 4, dtype=v.dtype), i, v), (3, 2)),
    "index_put of broadcast indices": (lambda m, v, i: vmap(m, lambda j, r: m.zeros(2, 4, dtype=r.dtype).index_put(
        (m.tensor([[1], [0]]), j), r, True))(i, v), (3, 2, 2)),
    "index_put_ into batched self, unbatched values": (lambda m, v, i: vmap(m, lambda s: s.clone().index_put_(
        (i[0],), v[0, 0], True))(v.new_zeros(3, 4) + v[:, :1]), (3, 2)),
    "setitem of a batched tensor at unbatched indices": (lambda m, v, i: vmap(m, lambda s: assigned(
        s.clone(), i[2], 0.))(v.repeat(1, 2)), (3, 2)),
    "index of batched self": (lambda m, v, i: vmap(m, lambda s: s[i[1]])(v), (3, 4)),
    "index of batched indices": (lambda m, v, i: vmap(m, lambda j: v[0][j])(i), (3, 4)),
    "index with a whole dim first": (lambda m, v, i: vmap(m, lambda s, j: s[:, j])(v, i), (3, 2, 4)),
    "index with indices apart": (lambda m, v, i: vmap(m, lambda s, j: s[j, :, j])(v, i), (3, 4, 2, 4)),
    "index with an unbatched mask": (lambda m, v, i: vmap(m, lambda s: s[m.tensor([True, False, True, True])])(v),
                                     (3, 4, 2)),
    "index_add with a batched index": (lambda m, v, i: vmap(m, lambda j, r: m.ones(4, 2, dtype=r.dtype).index_add(
        0, j, r, alpha=2))(i, v), (3, 2, 2)),
    "index_add batched self, batched index": (lambda m, v, i: vmap(m, lambda s, j: s.index_add(0, j, s[:2]))(v, i),
                                              (3, 4)),
    "index_copy with a batched index": (lambda m, v, i: vmap(m, lambda j, r: m.zeros(2, 4, dtype=r.dtype).index_copy(
        1, j, r))(i[:, :1], v), (3, 2, 1)),
    "masked_fill with a batched value": (lambda m, v, i: vmap(m, lambda s, r: s.masked_fill(s > 0, r[0]))(v, v[:, 1:]),
                                         (3, 4)),
    "masked_fill of an unbatched tensor, batched mask": (lambda m, v, i: vmap(m, lambda r: v[0].masked_fill(r > 0, 1.))
                                                         (v), (3, 4)),
    "masked_scatter all batched": (lambda m, v, i: vmap(m, lambda s, r: s.masked_scatter(s > 0, r * 10))(v, v), (3, 4)),
    "masked_scatter of an unbatched source": (lambda m, v, i: vmap(m, lambda s: s.masked_scatter(s < 0, v[0] * 10))(v),
                                              (3, 4)),
    "scatter of a batched index into unbatched self": (lambda m, v, i: vmap(m, lambda j: m.zeros(4, dtype=v.dtype)
                                                       .scatter(0, j, v[0]))(i), (3, 2)),
    "scatter_add mixed": (lambda m, v, i: vmap(m, lambda s, j: s.scatter_add(0, j, v[0]), in_dims=(None, 0))(
        v[1].repeat(2), i), (3, 2)),
    "scatter_reduce all batched": (lambda m, v, i: vmap(m, lambda s, j, r: s.scatter_reduce(0, j, r, "amax"))(
        v.repeat(1, 2), i, v), (3, 2)),
}


@pytest.mark.parametrize("name", INDEXING)
def test_indexing_under_vmap_matches_torch(name):
    fn, shape = INDEXING[name]
    check_without_fallback(fn, rand(*shape), I)


# torch.vmap's own rules get these wrong (its index_put_ with a whole dim before a batched index transposes the
# values; its index_fill of a batched index into a fresh tensor fills every example's positions in all of them):
# lantern's vmap is checked against torch run one example at a time.
PER_EXAMPLE = {
    "setitem with a whole dim first": (lambda m, s, j, r: assigned(s.clone(), (slice(None), j), r), (2, 4), (2, 2)),
    "index_fill with a batched index and value": (lambda m, s, j, r: m.zeros(4, dtype=r.dtype).index_fill(0, j, r[0]),
                                                  (4,), (2,)),
}


@pytest.mark.parametrize("name", PER_EXAMPLE)
def test_indexing_under_vmap_matches_torch_one_example_at_a_time(name):
    f, self_shape, value_shape = PER_EXAMPLE[name]

    def run(m, s, j, r):
        if m is lantern:
            return vmap(m, lambda *example: f(m, *example))(s, j, r)
        return m.stack([f(m, s[k], j[k], r[k]) for k in range(len(s))])
    check_without_fallback(run, rand(3, *self_shape), I[:, :value_shape[-1]], rand(3, *value_shape))


def test_index_put_gradients_under_vmap_match_torch():
    def f(m, v):
        return vmap(m, m.func.jacrev(lambda r: m.zeros(4, dtype=r.dtype).index_put((m.tensor([0, 0]),), r.sin(),
                                                                                  True)))(v)
    check_without_fallback(f, rand(3, 2))


def test_index_put_into_a_copy_under_two_vmaps_matches_torch():
    def f(m, v, i):
        inner = lambda r, j: m.zeros(4, dtype=r.dtype).index_put((j,), r, True)  # noqa: E731
        return vmap(m, vmap(m, inner, in_dims=(0, None)), in_dims=(None, 0))(v, i)
    check_without_fallback(f, rand(2, 2), I)


INDEXING_ERRORS = {
    "index_put_ into an unbatched tensor": lambda m, v: vmap(m, lambda r: m.zeros(4, dtype=r.dtype).index_put_(
        (m.tensor([0, 2]),), r))(v),
    "index with a batched mask": lambda m, v: vmap(m, lambda r: r[r > 0])(v),
    "index_add_ into an unbatched tensor": lambda m, v: vmap(m, lambda r: m.zeros(4, dtype=r.dtype).index_add_(
        0, m.tensor([0, 2]), r))(v),
}


@pytest.mark.parametrize("name", INDEXING_ERRORS)
def test_indexing_errors_under_vmap_match_torch(name):
    raises_like(INDEXING_ERRORS[name], rand(3, 2), match="vmap")


WHOLE_EXAMPLES = {
    "trace": lambda m, v: vmap(m, m.trace)(v),
    "vdot of a batched and an unbatched vector": lambda m, v: vmap(m, lambda r: m.vdot(r[0], v[0, 1]))(v),
    "max and min of all elements": lambda m, v: vmap(m, lambda r: (r.max(), r.min()))(v),
    "median and nanmedian of all elements": lambda m, v: vmap(m, lambda r: (r.median(), r.nanmedian()))(v),
    "gradient of max": lambda m, v: vmap(m, m.func.grad(lambda r: r.max() * 2))(v),
    "take of batched indices, negative ones too": lambda m, v: vmap(m, lambda r, j: r.take(j), in_dims=(None, 0))(
        v[0], m.tensor([[0, -1], [4, -6], [2, 2]])),
}


@pytest.mark.parametrize("name", WHOLE_EXAMPLES)
def test_whole_example_ops_under_vmap_match_torch(name):
    check_without_fallback(WHOLE_EXAMPLES[name], rand(3, 2, 3))


# ---- in-place ops with dims, and out= ------------------------------------------------------------------------------
INPLACE = {
    "cumsum_": lambda m, v: vmap(m, lambda r: r.clone().cumsum_(1))(v),
    "cumprod_": lambda m, v: vmap(m, lambda r: r.clone().cumprod_(0))(v),
    "scatter_": lambda m, v: vmap(m, lambda r: r.clone().scatter_(1, m.tensor([[1, 0, 2]]), r[:1] * 2))(v),
    "scatter_add_": lambda m, v: vmap(m, lambda r: r.clone().scatter_add_(0, m.tensor([[1, 1, 0]]), r))(v),
    "scatter_reduce_": lambda m, v: vmap(m, lambda r: r.clone().scatter_reduce_(1, m.tensor([[2, 2, 0]]), r, "sum"))(v),
    "index_add_": lambda m, v: vmap(m, lambda r: r.clone().index_add_(1, m.tensor([2, 0]), r[:, :2]))(v),
    "index_add_ of a batched index": lambda m, v: vmap(m, lambda r, j: r.clone().index_add_(1, j, r[:, :2]))(
        v, m.tensor([[0, 0], [1, 2], [2, 1]])),
    "index_copy_": lambda m, v: vmap(m, lambda r: r.clone().index_copy_(0, m.tensor([1]), r[:1] + 1))(v),
    "index_fill_": lambda m, v: vmap(m, lambda r: r.clone().index_fill_(1, m.tensor([1]), r[0, 0]))(v),
    "masked_fill_": lambda m, v: vmap(m, lambda r: r.clone().masked_fill_(r > 0, r.sum()))(v),
    "masked_scatter_": lambda m, v: vmap(m, lambda r: r.clone().masked_scatter_(r > 0, -r))(v),
    "clamp_ with tensor bounds": lambda m, v: vmap(m, lambda r: r.clone().clamp_(r[0], r[0] + 1))(v),
    "addmm_": lambda m, v: vmap(m, lambda r: r[:, :2].clone().addmm_(r[:, :2], r[:2, :2]))(v),
    "tril_ and triu_": lambda m, v: vmap(m, lambda r: (r.clone().tril_(), r.clone().triu_(1)))(v),
}


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_ops_with_dims_under_vmap_match_torch(name):
    check_without_fallback(INPLACE[name], rand(3, 2, 3))


def test_inplace_gradient_under_vmap_matches_torch():
    check_without_fallback(lambda m, v: vmap(m, m.func.grad(lambda r: (r * 1).cumsum_(0).index_add_(
        0, m.tensor([1, 1]), r.exp()).square().sum()))(v), rand(3, 2))


UNBATCHED_WRITES = {
    "cumsum_": lambda m, v: vmap(m, lambda r: m.zeros(2, dtype=r.dtype).cumsum_(0).add_(r))(v),
    "scatter_": lambda m, v: vmap(m, lambda r: m.zeros(2, dtype=r.dtype).scatter_(0, m.tensor([1, 0]), r))(v),
    "masked_fill_": lambda m, v: vmap(m, lambda r: m.zeros(2, dtype=r.dtype).masked_fill_(r > 0, 1.))(v),
    "masked_scatter_": lambda m, v: vmap(m, lambda r: m.zeros(2, dtype=r.dtype).masked_scatter_(
        m.tensor([True, False]), r))(v),
}


@pytest.mark.parametrize("name", UNBATCHED_WRITES)
def test_inplace_writes_into_unbatched_tensors_refuse_as_torch(name):
    raises_like(UNBATCHED_WRITES[name], rand(3, 2))


OUT_VARIANTS = {
    "add into a batched out": lambda m, v: vmap(m, lambda r: m.add(r, 1, out=r.new_zeros(2)))(v),
    "add into an unbatched out": lambda m, v: vmap(m, lambda r: m.add(r, 1, out=m.zeros(2, dtype=r.dtype)))(v),
    "cumsum": lambda m, v: vmap(m, lambda r: m.cumsum(r, 0, out=r.new_zeros(2)))(v),
    "sum": lambda m, v: vmap(m, lambda r: m.sum(r, 0, out=r.new_zeros(())))(v),
}


@pytest.mark.parametrize("name", OUT_VARIANTS)
def test_out_variants_under_vmap_refuse_as_torch(name):
    raises_like(OUT_VARIANTS[name], rand(3, 2), match="the fallback path doesn't work on out= or view ops")


# ---- the nn backward kernels under the function transforms ---------------------------------------------------------
def _mlp(m, p, x):
    F = m.nn.functional
    h = F.gelu(x @ p["w1"] + p["b1"])
    h = F.silu(h) + h.tanh() + h.sigmoid() + F.relu(h)
    return F.cross_entropy((h @ p["w2"]).unsqueeze(0), m.tensor([1])) + F.log_softmax(h, -1).sum()


def _cnn(m, p, x):
    F = m.nn.functional
    h = F.relu(F.conv2d(x.reshape(1, 1, 6, 6), p["c"], p["cb"]))
    h = F.max_pool2d(h, 2) + F.avg_pool2d(h, 2) + F.adaptive_avg_pool2d(h, 2)
    h = h + F.interpolate(h[..., :1, :1], scale_factor=2.0)
    return F.nll_loss(F.log_softmax(h.flatten(1) @ p["l"], -1), m.tensor([2]))


def _block(m, p, x):
    """A transformer block: learned positions (embedding), layer norm, softmax attention, a GELU MLP."""
    F = m.nn.functional
    x = x.reshape(3, 4) + F.embedding(m.tensor([0, 1, 2]), p["pos"])
    h = F.layer_norm(x, (4,), p["ln"], p["ln_b"])
    x = x + F.softmax((h @ p["wq"]) @ (h @ p["wk"]).T / 2, -1) @ (h @ p["wv"])
    return (x + F.gelu(F.layer_norm(x, (4,)) @ p["w1"]) @ p["w1"].T).square().mean()


MODELS = {"mlp": (_mlp, {"w1": (4, 5), "b1": (5,), "w2": (5, 3)}, 4),
          "cnn": (_cnn, {"c": (2, 1, 3, 3), "cb": (2,), "l": (8, 3)}, 36),
          "transformer block": (_block, {"wq": (4, 4), "wk": (4, 4), "wv": (4, 4), "ln": (4,), "ln_b": (4,),
                                         "pos": (3, 4), "w1": (4, 6)}, 12)}
TRANSFORMS = {
    "vmap of jacrev": lambda m, f, p, xs: m.func.vmap(m.func.jacrev(f), in_dims=(None, 0))(p, xs),
    "jacrev of jacrev": lambda m, f, p, xs: m.func.jacrev(m.func.jacrev(lambda x: f(p, x)))(xs[0]),
    "hessian": lambda m, f, p, xs: m.func.hessian(lambda x: f(p, x))(xs[0]),
    "vmap of grad of grad": lambda m, f, p, xs: m.func.vmap(m.func.grad(
        lambda x: m.func.grad(lambda t: f(p, t))(x).square().sum()))(xs),
}


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("model", MODELS)
def test_nn_backward_kernels_under_transforms_match_torch_without_fallback(model, transform):
    f, shapes, features = MODELS[model]
    params = {k: rand(*s) for k, s in shapes.items()}

    def run(m, xs, *values):
        p = dict(zip(params, values))
        return TRANSFORMS[transform](m, lambda q, x: f(m, q, x), p, xs)
    check_without_fallback(run, rand(2, features), *params.values(), atol=1e-10, rtol=1e-7)


BACKWARD_KERNELS = {
    "embedding_dense_backward with padding_idx": lambda m, w, x: m.func.jacrev(
        lambda t: m.nn.functional.embedding(m.tensor([[0, 2], [2, 1]]), t, padding_idx=2, scale_grad_by_freq=True))(
        w[0]),
    "embedding of batched tables, its backward": lambda m, w, x: m.func.vmap(m.func.jacrev(
        lambda t: m.nn.functional.embedding(m.tensor([[0, 2], [2, 2]]), t).sum(0)))(w),
    "embedding of batched tables, batched indices": lambda m, w, x: m.func.vmap(
        lambda t, i: m.nn.functional.embedding(i, t))(w, m.tensor([[0, 1], [2, 2], [1, 0]])),
    "nll_loss_backward with weights and ignore_index": lambda m, w, x: m.func.vmap(m.func.jacrev(
        lambda s: m.nn.functional.nll_loss(s, m.tensor([0, 2, 1]), weight=m.tensor([1., 2., 3.], dtype=s.dtype),
                                           ignore_index=1)))(w),
    "cross_entropy backward, sum": lambda m, w, x: m.func.vmap(m.func.jacrev(
        lambda s: m.nn.functional.cross_entropy(s, m.tensor([0, 2, 1]), reduction="sum")))(w),
    "avg_pool2d backward without a batch dim": lambda m, w, x: m.func.vmap(m.func.jacrev(
        lambda t: m.nn.functional.avg_pool2d(t, 2)))(x),
    "layer_norm backward, per-example weight": lambda m, w, x: m.func.vmap(m.func.jacrev(
        lambda t, g: m.nn.functional.layer_norm(t, (3,), g), argnums=(0, 1)))(w, w[:, 0]),
    "select_scatter and diagonal_scatter": lambda m, w, x: m.func.vmap(m.func.jacrev(
        lambda t: t[1] * t.diagonal().sum()))(w),
}


@pytest.mark.parametrize("name", BACKWARD_KERNELS)
def test_nn_backward_kernels_under_vmap_match_torch(name):
    check_without_fallback(BACKWARD_KERNELS[name], rand(3, 3, 3), rand(3, 2, 4, 4))
