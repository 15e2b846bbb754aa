"""The standard layers (lantern/nn/modules: linear, conv, pooling, norms, embeddings, reshaping, padding) against
torch: the same weights give the same outputs and gradients on non-contiguous inputs (nn_oracle.check_module),
the same state_dict keys and parameter shapes, the same repr, and the same exception classes.
"""
import numpy as np
import pytest
import torch

import lantern
from nn_oracle import check_module
from oracle import assert_same, check, to_lib

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ints(high, *shape):
    return RNG.integers(0, high, shape).astype(np.int64)


# name: (make(nn), inputs...) — every layer, forward and backward, on non-contiguous float32 inputs
LAYERS = {
    "Identity": (lambda nn: nn.Identity(3, k=1), randn(2, 3)),
    "Linear": (lambda nn: nn.Linear(5, 3), randn(4, 2, 5)),
    "Linear_nobias": (lambda nn: nn.Linear(5, 3, bias=False), randn(4, 5)),
    "Bilinear": (lambda nn: nn.Bilinear(3, 4, 2), randn(5, 3), randn(5, 4)),
    "Conv1d": (lambda nn: nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), randn(2, 4, 9)),
    "Conv1d_same_circular": (lambda nn: nn.Conv1d(2, 3, 4, padding="same", dilation=2, padding_mode="circular"),
                             randn(2, 2, 9)),
    "Conv2d": (lambda nn: nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)), randn(2, 3, 7, 6)),
    "Conv2d_valid_nobias": (lambda nn: nn.Conv2d(2, 2, 3, padding="valid", bias=False), randn(1, 2, 5, 5)),
    "Conv2d_reflect": (lambda nn: nn.Conv2d(2, 4, 3, padding=2, padding_mode="reflect", groups=2), randn(2, 2, 5, 6)),
    "Conv2d_replicate_unbatched": (lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="replicate"),
                                   randn(2, 5, 5)),
    "Conv3d": (lambda nn: nn.Conv3d(2, 2, 2, stride=(1, 2, 1), padding=(1, 0, 0)), randn(1, 2, 3, 4, 3)),
    "ConvTranspose1d": (lambda nn: nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2),
                        randn(2, 4, 5)),
    "ConvTranspose2d": (lambda nn: nn.ConvTranspose2d(3, 2, (2, 3), stride=(2, 1), dilation=(1, 2)),
                        randn(2, 3, 4, 3)),
    "ConvTranspose3d": (lambda nn: nn.ConvTranspose3d(2, 2, 2, stride=2), randn(1, 2, 2, 3, 2)),
    "MaxPool1d": (lambda nn: nn.MaxPool1d(3, 2, padding=1, ceil_mode=True), randn(2, 3, 8)),
    "MaxPool1d_indices": (lambda nn: nn.MaxPool1d(2, return_indices=True), randn(2, 3, 8)),
    "MaxPool2d": (lambda nn: nn.MaxPool2d(3, stride=2, padding=1, dilation=1, ceil_mode=True), randn(2, 3, 7, 8)),
    "MaxPool2d_indices": (lambda nn: nn.MaxPool2d((2, 3), dilation=(1, 2), return_indices=True), randn(1, 2, 6, 9)),
    "MaxPool3d": (lambda nn: nn.MaxPool3d((2, 3, 2), (1, 2, 2), (1, 1, 0), dilation=(2, 1, 1), ceil_mode=True),
                  randn(2, 2, 4, 5, 5)),
    "MaxPool3d_indices": (lambda nn: nn.MaxPool3d(2, return_indices=True), randn(2, 4, 5, 4)),
    "AvgPool3d": (lambda nn: nn.AvgPool3d(3, 2, 1, ceil_mode=True, count_include_pad=False), randn(1, 2, 4, 5, 6)),
    "AvgPool3d_divisor": (lambda nn: nn.AvgPool3d((2, 1, 2), divisor_override=3), randn(2, 4, 3, 4)),
    "AdaptiveAvgPool3d": (lambda nn: nn.AdaptiveAvgPool3d((2, None, 3)), randn(1, 2, 5, 3, 4)),
    "AdaptiveMaxPool3d": (lambda nn: nn.AdaptiveMaxPool3d(2, return_indices=True), randn(2, 3, 5, 4)),
    "LPPool1d": (lambda nn: nn.LPPool1d(2, 3, 2), randn(2, 3, 9)),
    "LPPool2d": (lambda nn: nn.LPPool2d(1.5, (2, 3), ceil_mode=True), np.abs(randn(1, 2, 5, 7)) + 0.1),
    "LPPool3d_inf": (lambda nn: nn.LPPool3d(float("inf"), 2), randn(1, 2, 4, 4, 4)),
    "AvgPool1d": (lambda nn: nn.AvgPool1d(3, 2, padding=1, count_include_pad=False), randn(2, 3, 8)),
    "AvgPool2d": (lambda nn: nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=True), randn(2, 2, 7, 7)),
    "AvgPool2d_divisor": (lambda nn: nn.AvgPool2d(2, divisor_override=3), randn(1, 2, 4, 6)),
    "AdaptiveAvgPool1d": (lambda nn: nn.AdaptiveAvgPool1d(3), randn(2, 3, 7)),
    "AdaptiveAvgPool2d": (lambda nn: nn.AdaptiveAvgPool2d((2, None)), randn(2, 3, 5, 4)),
    "AdaptiveMaxPool1d": (lambda nn: nn.AdaptiveMaxPool1d(4, return_indices=True), randn(2, 3, 9)),
    "AdaptiveMaxPool2d": (lambda nn: nn.AdaptiveMaxPool2d(3), randn(2, 3, 7, 5)),
    "LayerNorm": (lambda nn: nn.LayerNorm((3, 4)), randn(2, 3, 4)),
    "LayerNorm_nobias": (lambda nn: nn.LayerNorm(4, eps=1e-3, bias=False), randn(2, 3, 4)),
    "LayerNorm_noaffine": (lambda nn: nn.LayerNorm(4, elementwise_affine=False), randn(5, 4)),
    "GroupNorm": (lambda nn: nn.GroupNorm(2, 4), randn(3, 4, 5)),
    "GroupNorm_noaffine": (lambda nn: nn.GroupNorm(3, 6, affine=False), randn(2, 6, 2, 2)),
    "RMSNorm": (lambda nn: nn.RMSNorm([3, 4]), randn(2, 3, 4)),
    "RMSNorm_eps": (lambda nn: nn.RMSNorm(4, eps=1e-2, elementwise_affine=False), randn(3, 4)),
    "LocalResponseNorm": (lambda nn: nn.LocalResponseNorm(3, alpha=0.1, beta=0.5, k=2.0), randn(2, 5, 4)),
    "LocalResponseNorm_4d": (lambda nn: nn.LocalResponseNorm(2), randn(2, 4, 3, 3)),
    "InstanceNorm1d": (lambda nn: nn.InstanceNorm1d(3, affine=True), randn(2, 3, 6)),
    "InstanceNorm1d_unbatched": (lambda nn: nn.InstanceNorm1d(3), randn(3, 6)),
    "InstanceNorm2d": (lambda nn: nn.InstanceNorm2d(2, affine=True, track_running_stats=True), randn(2, 2, 3, 4)),
    "InstanceNorm3d": (lambda nn: nn.InstanceNorm3d(2), randn(1, 2, 2, 3, 2)),
    "Flatten": (lambda nn: nn.Flatten(), randn(2, 3, 4)),
    "Flatten_range": (lambda nn: nn.Flatten(0, -2), randn(2, 3, 4)),
    "Unflatten": (lambda nn: nn.Unflatten(1, (2, -1)), randn(3, 6)),
    "PixelShuffle": (lambda nn: nn.PixelShuffle(2), randn(2, 8, 3, 2)),
    "PixelUnshuffle": (lambda nn: nn.PixelUnshuffle(2), randn(1, 2, 4, 6)),
    "Upsample_nearest": (lambda nn: nn.Upsample(scale_factor=2), randn(1, 2, 3, 3)),
    "Upsample_linear": (lambda nn: nn.Upsample(size=7, mode="linear", align_corners=True), randn(1, 2, 4)),
    "Upsample_bicubic": (lambda nn: nn.Upsample(scale_factor=(1.5, 2), mode="bicubic"), randn(1, 1, 4, 3)),
    "UpsamplingNearest2d": (lambda nn: nn.UpsamplingNearest2d(size=(5, 4)), randn(1, 2, 3, 3)),
    "UpsamplingBilinear2d": (lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), randn(1, 2, 3, 3)),
    "CosineSimilarity": (lambda nn: nn.CosineSimilarity(dim=0), randn(4, 3), randn(4, 3)),
    "PairwiseDistance": (lambda nn: nn.PairwiseDistance(p=1.5, keepdim=True), randn(4, 3), randn(4, 3)),
    "ZeroPad1d": (lambda nn: nn.ZeroPad1d((1, 2)), randn(2, 3)),
    "ZeroPad2d": (lambda nn: nn.ZeroPad2d((1, 0, 2, 1)), randn(1, 2, 3)),
    "ZeroPad3d": (lambda nn: nn.ZeroPad3d(1), randn(1, 2, 2, 2)),
    "ConstantPad1d": (lambda nn: nn.ConstantPad1d(2, -1.5), randn(2, 3)),
    "ConstantPad2d": (lambda nn: nn.ConstantPad2d((0, 1, 2, 0), 3.0), randn(2, 2, 3)),
    "ConstantPad3d": (lambda nn: nn.ConstantPad3d((1, 0, 0, 1, 1, 1), 0.5), randn(1, 2, 2, 3)),
    "ReflectionPad1d": (lambda nn: nn.ReflectionPad1d((2, 1)), randn(2, 3, 4)),
    "ReflectionPad2d": (lambda nn: nn.ReflectionPad2d(1), randn(1, 2, 3, 3)),
    "ReflectionPad3d": (lambda nn: nn.ReflectionPad3d((1, 0, 1, 0, 0, 1)), randn(1, 1, 2, 3, 3)),
    "ReplicationPad1d": (lambda nn: nn.ReplicationPad1d(3), randn(2, 3, 2)),
    "ReplicationPad2d": (lambda nn: nn.ReplicationPad2d((1, 2, 0, 1)), randn(1, 2, 3, 3)),
    "ReplicationPad3d": (lambda nn: nn.ReplicationPad3d(1), randn(1, 1, 2, 2, 2)),
    "CircularPad1d": (lambda nn: nn.CircularPad1d((1, 2)), randn(2, 3, 4)),
    "CircularPad2d": (lambda nn: nn.CircularPad2d(1), randn(1, 2, 3, 3)),
    "CircularPad3d": (lambda nn: nn.CircularPad3d((1, 0, 0, 1, 1, 0)), randn(1, 1, 2, 3, 3)),
    "Embedding": (lambda nn: nn.Embedding(10, 3), ints(10, 4, 5)),
    "Embedding_padding": (lambda nn: nn.Embedding(10, 3, padding_idx=-2, scale_grad_by_freq=True),
                          np.array([[8, 1, 8], [2, 1, 8]])),
    "EmbeddingBag_mean_2d": (lambda nn: nn.EmbeddingBag(10, 3), ints(10, 4, 3)),
    "EmbeddingBag_sum_offsets": (lambda nn: nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2),
                                 np.array([1, 2, 2, 5, 9, 2, 0]), np.array([0, 2, 2, 5])),
    "EmbeddingBag_max_last_offset": (lambda nn: nn.EmbeddingBag(10, 3, mode="max", include_last_offset=True),
                                     np.array([1, 3, 7, 5, 9, 4]), np.array([0, 1, 1, 4])),
    # input past the last offset: PyTorch's last bag stops there only for sum/mean sums without padding_idx
    "EmbeddingBag_sum_tail": (lambda nn: nn.EmbeddingBag(6, 2, mode="sum", include_last_offset=True),
                              np.array([1, 2, 3, 4, 0, 5]), np.array([0, 2, 4])),
    "EmbeddingBag_mean_tail_padding": (lambda nn: nn.EmbeddingBag(6, 2, include_last_offset=True, padding_idx=3),
                                       np.array([1, 2, 3, 4, 0, 5]), np.array([0, 2, 4])),
    "EmbeddingBag_mean_padding": (lambda nn: nn.EmbeddingBag(6, 2, padding_idx=0),
                                  np.array([0, 0, 1, 2, 0, 3]), np.array([0, 2, 4])),
}


# torch leaves the weight-gradient rows of indices past the last offset uninitialised (garbage memory)
FORWARD_ONLY = {"EmbeddingBag_sum_tail"}


@pytest.mark.parametrize("name", LAYERS)
def test_layer_matches_torch(name):
    make, *inputs = LAYERS[name]
    check_module(make, *inputs, atol=1e-5, rtol=1e-4, grad=name not in FORWARD_ONLY)


def test_embedding_bag_per_sample_weights():
    inputs = np.array([1, 2, 2, 4, 1]), np.array([0, 3]), randn(5)
    check_module(lambda nn: nn.EmbeddingBag(6, 3, mode="sum"), *inputs, call=lambda m, i, o, w: m(i, o, w))
    check_module(lambda nn: nn.EmbeddingBag(6, 3, mode="sum", padding_idx=2), np.array([[1, 2], [2, 4]]), randn(2, 2),
                 call=lambda m, i, w: m(i, per_sample_weights=w))


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("dims", [2, 3, 4, 5])
def test_batchnorm_running_stats_over_steps(dims, momentum):
    """A few training steps update running_mean/var and num_batches_tracked as torch does; eval then uses them."""
    cls = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d", 5: "BatchNorm3d"}[dims]
    shape = (4, 3, 5, 2, 2)[:dims]

    def make(nn):
        return getattr(nn, cls)(3, momentum=momentum)
    tm, lm = check_module(make, randn(*shape))
    for _ in range(2):
        x = randn(*shape) * 3 + 1
        assert_same(lm(to_lib(lantern, x)), tm(to_lib(torch, x)), atol=1e-5, rtol=1e-4, strides=False)
    for name, buf in tm.named_buffers():
        assert_same(dict(lm.named_buffers())[name], buf, atol=1e-6, rtol=1e-5, path=name)
    tm.eval()
    lm.eval()
    x = randn(*shape)
    assert_same(lm(to_lib(lantern, x)), tm(to_lib(torch, x)), atol=1e-5, rtol=1e-4, strides=False)


@pytest.mark.parametrize("kw", [dict(track_running_stats=False), dict(affine=False), dict(bias=False),
                                dict(momentum=0.5, eps=1e-3)], ids=str)
@pytest.mark.parametrize("train", [True, False])
def test_batchnorm_options(kw, train):
    tm, lm = check_module(lambda nn: nn.BatchNorm2d(2, **kw), randn(3, 2, 2, 2), train=train)
    for name, buf in tm.named_buffers():
        assert_same(dict(lm.named_buffers())[name], buf, atol=1e-6, rtol=1e-5, path=name)


def test_instance_norm_running_stats():
    def make(nn):
        return nn.InstanceNorm1d(3, momentum=0.3, track_running_stats=True)
    x = randn(2, 3, 5)
    tm, lm = check_module(make, x)
    for name, buf in tm.named_buffers():
        assert_same(dict(lm.named_buffers())[name], buf, atol=1e-6, rtol=1e-5, path=name)
    check_module(make, x, train=False)


# ---- structure: state_dict keys, parameter shapes and requires_grad, buffers, repr -----------------------------

STRUCTURE = {name: make for name, (make, *_) in LAYERS.items()} | {
    "BatchNorm1d": lambda nn: nn.BatchNorm1d(4),
    "BatchNorm2d_untracked": lambda nn: nn.BatchNorm2d(4, track_running_stats=False, momentum=None),
    "BatchNorm3d_noaffine": lambda nn: nn.BatchNorm3d(4, affine=False, eps=1e-3),
    "InstanceNorm2d_tracked": lambda nn: nn.InstanceNorm2d(3, track_running_stats=True, bias=False, affine=True),
    "Conv2d_same_str": lambda nn: nn.Conv2d(2, 4, 3, padding="same", bias=False, padding_mode="zeros"),
    "ConvTranspose2d_full": lambda nn: nn.ConvTranspose2d(4, 6, 3, 2, 1, 1, groups=2, bias=False, dilation=2),
    "Embedding_options": lambda nn: nn.Embedding(5, 2, padding_idx=1, max_norm=1.0, norm_type=1.0,
                                                 scale_grad_by_freq=True),
    "EmbeddingBag_options": lambda nn: nn.EmbeddingBag(5, 2, max_norm=2.0, norm_type=3, mode="max",
                                                       padding_idx=-1),
    "Upsample_size": lambda nn: nn.Upsample(size=(3, 4), mode="bilinear", align_corners=False),
    "MaxPool2d_tuple": lambda nn: nn.MaxPool2d((2, 3), (1, 2), (1, 0), dilation=2, ceil_mode=True),
    "AvgPool1d_default": lambda nn: nn.AvgPool1d([2], padding=1),
    "MaxUnpool2d": lambda nn: nn.MaxUnpool2d((2, 3), padding=1),
    "MaxUnpool3d": lambda nn: nn.MaxUnpool3d(2, stride=1),
    "LPPool2d_stride": lambda nn: nn.LPPool2d(2, 3, stride=(1, 2)),
}


@pytest.mark.parametrize("name", STRUCTURE)
def test_structure_and_repr_match_torch(name):
    torch.manual_seed(0)
    tm, lm = STRUCTURE[name](torch.nn), STRUCTURE[name](lantern.nn)
    assert repr(lm) == repr(tm)
    tstate, lstate = tm.state_dict(), lm.state_dict()
    assert list(lstate) == list(tstate)
    for key, value in tstate.items():
        assert tuple(lstate[key].shape) == tuple(value.shape), key
        assert lstate[key].dtype.name == str(value.dtype).replace("torch.", ""), key
    assert [(n, p.requires_grad) for n, p in lm.named_parameters()] == \
           [(n, p.requires_grad) for n, p in tm.named_parameters()]
    for key in ("running_mean", "running_var", "num_batches_tracked"):  # fresh buffers: zeros, ones, 0
        if key in tstate:
            assert_same(lstate[key], tstate[key], path=key)


def test_embedding_padding_row_and_from_pretrained():
    for lib in (torch, lantern):
        emb = lib.nn.Embedding(6, 3, padding_idx=-2)
        assert emb.padding_idx == 4 and emb.weight[4].abs().sum().item() == 0
    table = randn(4, 3)
    for freeze in (True, False):
        tm = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=freeze, padding_idx=1)
        lm = lantern.nn.Embedding.from_pretrained(lantern.tensor(table), freeze=freeze, padding_idx=1)
        assert lm.weight.requires_grad == tm.weight.requires_grad == (not freeze)
        assert repr(lm) == repr(tm)
        idx = np.array([[1, 3], [0, 1]])
        assert_same(lm(to_lib(lantern, idx)), tm(to_lib(torch, idx)))
        tb = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table), freeze=freeze, mode="sum")
        lb = lantern.nn.EmbeddingBag.from_pretrained(lantern.tensor(table), freeze=freeze, mode="sum")
        assert lb.weight.requires_grad == tb.weight.requires_grad and repr(lb) == repr(tb)
        assert_same(lb(to_lib(lantern, idx)), tb(to_lib(torch, idx)))


def test_embedding_max_norm_renormalises_the_weight_in_place():
    def make(nn):
        return nn.Embedding(6, 3, max_norm=0.5)
    tm, lm = check_module(make, np.array([[0, 2], [2, 5]]), grad=False)
    assert_same(lm.weight, tm.weight)
    tb, lb = check_module(lambda nn: nn.EmbeddingBag(6, 3, max_norm=0.5, mode="sum"), np.array([[0, 2], [3, 5]]),
                          grad=False)
    assert_same(lb.weight, tb.weight)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_inverts_max_pool(n):
    """MaxUnpool{n}d(pooled, indices) puts each maximum back (gradients flow to the pooled values), also with an
    output_size; bad output sizes raise what torch raises."""
    x = randn(2, 3, *(4,) * n)

    def pool_then_unpool(output_size):
        def call(m, x):
            nn = torch.nn if isinstance(x, torch.Tensor) else lantern.nn
            pooled, indices = getattr(nn, f"MaxPool{n}d")(2, return_indices=True)(x)
            return m(pooled, indices, output_size)
        return call
    for size in (None, (4,) * n, [2, 3] + [5] * n):
        tm, lm = check_module(lambda nn: getattr(nn, f"MaxUnpool{n}d")(2), x, call=pool_then_unpool(size))
        assert repr(lm) == repr(tm)
    _same_error(lambda lib: getattr(lib.nn, f"MaxUnpool{n}d")(2)(
        *getattr(lib.nn, f"MaxPool{n}d")(2, return_indices=True)(to_lib(lib, x)), (7,) * n))


@pytest.mark.parametrize("cls", ["ConvTranspose1d", "ConvTranspose2d"])
def test_conv_transpose_output_size(cls):
    n = 1 if cls.endswith("1d") else 2
    x = randn(2, 4, *(3,) * n)
    for size in ([8] * n, [2, 2] + [7] * n):
        check_module(lambda nn: getattr(nn, cls)(4, 2, 3, stride=2, dilation=1), x,
                     call=lambda m, x: m(x, output_size=size))
    for size in ([10] * n, [7] * (n + 1)):
        _same_error(lambda lib: getattr(lib.nn, cls)(4, 2, 3, stride=2)(to_lib(lib, x), output_size=size))


def test_reset_parameters_and_init_bounds():
    """Default inits are those of torch: U(±1/sqrt(fan_in)) for Linear/Conv weights and biases, N(0,1) embeddings,
    ones/zeros for norms."""
    lin = lantern.nn.Linear(400, 300)
    bound = 1 / 400 ** 0.5
    for p in (lin.weight, lin.bias):
        assert p.abs().max().item() <= bound and p.abs().max().item() > 0.9 * bound
    assert abs(lin.weight.std().item() - bound / 3 ** 0.5) < 0.02 * bound
    conv = lantern.nn.Conv2d(16, 32, 3, groups=2)
    bound = 1 / (8 * 9) ** 0.5
    assert conv.weight.abs().max().item() <= bound and conv.bias.abs().max().item() <= bound
    emb = lantern.nn.Embedding(500, 100)
    assert abs(emb.weight.mean().item()) < 0.02 and abs(emb.weight.std().item() - 1) < 0.02
    bil = lantern.nn.Bilinear(50, 30, 20)
    assert bil.weight.abs().max().item() <= 1 / 50 ** 0.5
    bn = lantern.nn.BatchNorm1d(3)
    bn.weight.data.fill_(2)
    bn.running_mean.fill_(5)
    bn.reset_parameters()
    assert bn.weight.tolist() == [1.0] * 3 and bn.running_mean.tolist() == [0.0] * 3


def test_bilinear_in1_features_zero_error():
    _same_error(lambda lib: lib.nn.Bilinear(0, 3, 2))


def test_module_on_other_dtype():
    check_module(lambda nn: nn.Conv1d(2, 3, 3, dtype=torch.float64 if nn is torch.nn else lantern.float64),
                 RNG.standard_normal((2, 2, 5)), atol=1e-10)


# ---- constructor and input errors: the same exception class as torch ------------------------------------------

def _same_error(fn):
    caught = []
    for lib in (torch, lantern):
        try:
            fn(lib)
        except Exception as e:
            caught.append(type(e))
        else:
            raise AssertionError(f"{lib.__name__} raised nothing")
    assert issubclass(caught[1], caught[0]), caught


ERRORS = {
    "conv_groups_zero": lambda lib: lib.nn.Conv2d(2, 2, 3, groups=0),
    "conv_in_groups": lambda lib: lib.nn.Conv2d(3, 2, 3, groups=2),
    "conv_out_groups": lambda lib: lib.nn.Conv1d(2, 3, 3, groups=2),
    "conv_bad_padding_str": lambda lib: lib.nn.Conv2d(2, 2, 3, padding="full"),
    "conv_same_strided": lambda lib: lib.nn.Conv2d(2, 2, 3, stride=2, padding="same"),
    "conv_bad_mode": lambda lib: lib.nn.Conv1d(2, 2, 3, padding_mode="mirror"),
    "convT_mode": lambda lib: lib.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"),
    "conv_wrong_channels": lambda lib: lib.nn.Conv2d(3, 2, 3)(lib.zeros(1, 2, 5, 5)),
    "bn1d_dims": lambda lib: lib.nn.BatchNorm1d(3)(lib.zeros(2, 3, 4, 5)),
    "bn2d_dims": lambda lib: lib.nn.BatchNorm2d(3)(lib.zeros(2, 3, 4)),
    "bn3d_dims": lambda lib: lib.nn.BatchNorm3d(3)(lib.zeros(2, 3, 4, 4)),
    "bn_one_value": lambda lib: lib.nn.BatchNorm1d(3)(lib.zeros(1, 3)),
    "in1d_dims": lambda lib: lib.nn.InstanceNorm1d(3)(lib.zeros(2, 3, 4, 5)),
    "in2d_affine_channels": lambda lib: lib.nn.InstanceNorm2d(3, affine=True)(lib.zeros(2, 4, 3, 3)),
    "groupnorm_divisible": lambda lib: lib.nn.GroupNorm(4, 6),
    "layernorm_shape": lambda lib: lib.nn.LayerNorm(4)(lib.zeros(2, 3)),
    "rmsnorm_shape": lambda lib: lib.nn.RMSNorm(4)(lib.zeros(2, 3)),
    "lrn_dims": lambda lib: lib.nn.LocalResponseNorm(2)(lib.zeros(2, 3)),
    "embedding_padding_high": lambda lib: lib.nn.Embedding(5, 2, padding_idx=5),
    "embedding_padding_low": lambda lib: lib.nn.Embedding(5, 2, padding_idx=-6),
    "embedding_weight_shape": lambda lib: lib.nn.Embedding(5, 2, _weight=lib.zeros(4, 2)),
    "embedding_pretrained_1d": lambda lib: lib.nn.Embedding.from_pretrained(lib.zeros(4)),
    "embedding_index_range": lambda lib: lib.nn.Embedding(5, 2)(lib.tensor([5])),
    "embedding_float_index": lambda lib: lib.nn.Embedding(5, 2)(lib.tensor([1.0])),
    "bag_padding_high": lambda lib: lib.nn.EmbeddingBag(5, 2, padding_idx=7),
    "bag_mode": lambda lib: lib.nn.EmbeddingBag(5, 2, mode="min")(lib.tensor([[1]])),
    "bag_offsets_2d": lambda lib: lib.nn.EmbeddingBag(5, 2)(lib.tensor([[1]]), lib.tensor([0])),
    "bag_offsets_missing": lambda lib: lib.nn.EmbeddingBag(5, 2)(lib.tensor([1, 2])),
    "bag_offsets_start": lambda lib: lib.nn.EmbeddingBag(5, 2)(lib.tensor([1, 2]), lib.tensor([1])),
    "bag_offsets_end": lambda lib: lib.nn.EmbeddingBag(5, 2)(lib.tensor([1, 2]), lib.tensor([0, 3])),
    "bag_index_range": lambda lib: lib.nn.EmbeddingBag(5, 2)(lib.tensor([1, 7]), lib.tensor([0])),
    "bag_3d": lambda lib: lib.nn.EmbeddingBag(5, 2)(lib.zeros(1, 1, 1, dtype=lib.int64)),
    "bag_psw_mean": lambda lib: lib.nn.EmbeddingBag(5, 2)(lib.tensor([1]), lib.tensor([0]), lib.ones(1)),
    "bag_psw_shape": lambda lib: lib.nn.EmbeddingBag(5, 2, mode="sum")(lib.tensor([1]), lib.tensor([0]),
                                                                       lib.ones(2)),
    "bag_max_freq": lambda lib: lib.nn.EmbeddingBag(5, 2, mode="max", scale_grad_by_freq=True)(lib.tensor([[1]])),
    "unflatten_type": lambda lib: lib.nn.Unflatten(1, 6),
    "unflatten_elem": lambda lib: lib.nn.Unflatten(1, (2, 3.0)),
    "pixelshuffle_channels": lambda lib: lib.nn.PixelShuffle(2)(lib.zeros(1, 3, 2, 2)),
    "circular_dims": lambda lib: lib.nn.CircularPad2d(1)(lib.zeros(3, 3)),
    "reflection_too_wide": lambda lib: lib.nn.ReflectionPad1d(3)(lib.zeros(1, 2, 3)),
    "maxpool_pad_too_big": lambda lib: lib.nn.MaxPool2d(2, padding=2)(lib.zeros(1, 1, 4, 4)),
    "maxpool3d_dims": lambda lib: lib.nn.MaxPool3d(2)(lib.zeros(1, 4, 4)),
    "maxpool3d_pad_too_big": lambda lib: lib.nn.MaxPool3d(2, padding=(2, 0, 0))(lib.zeros(1, 1, 4, 4, 4)),
    "avgpool3d_dims": lambda lib: lib.nn.AvgPool3d(2)(lib.zeros(1, 4, 4)),
    "avgpool3d_divisor_zero": lambda lib: lib.nn.AvgPool3d(2, divisor_override=0)(lib.zeros(1, 1, 4, 4, 4)),
    "adaptive3d_dims": lambda lib: lib.nn.AdaptiveAvgPool3d(2)(lib.zeros(4, 4)),
    "adaptivemax3d_dims": lambda lib: lib.nn.AdaptiveMaxPool3d(2)(lib.zeros(3, 4, 4)),
    "unpool_indices_shape": lambda lib: lib.nn.MaxUnpool2d(2)(lib.zeros(1, 2, 2, 2), lib.zeros(1, 2, 2, 1,
                                                                                                dtype=lib.int64)),
    "unpool_index_range": lambda lib: lib.nn.MaxUnpool1d(2)(lib.zeros(1, 2, 2), lib.full((1, 2, 2), 9,
                                                                                         dtype=lib.int64)),
    "unpool_output_size_len": lambda lib: lib.nn.MaxUnpool2d(2)(lib.zeros(1, 2, 2, 2), lib.zeros(1, 2, 2, 2,
                                                                                                  dtype=lib.int64),
                                                                (4, 4, 4)),
    "linear_shape": lambda lib: lib.nn.Linear(3, 2)(lib.zeros(2, 4)),
    "upsample_no_size": lambda lib: lib.nn.Upsample()(lib.zeros(1, 1, 2, 2)),
}


@pytest.mark.parametrize("name", ERRORS)
def test_error_matches_torch(name):
    _same_error(ERRORS[name])


def test_old_checkpoints_load_as_in_torch():
    """A BatchNorm state_dict without num_batches_tracked (version < 2) loads; an untracked InstanceNorm refuses
    unversioned running stats with torch's message."""
    msgs = []
    for lib in (torch, lantern):
        bn = lib.nn.BatchNorm1d(2)
        state = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
        bn.load_state_dict(state)
        assert bn.num_batches_tracked.item() == 0
        inorm = lib.nn.InstanceNorm1d(2)
        with pytest.raises(RuntimeError) as info:
            inorm.load_state_dict({"running_mean": lib.zeros(2), "running_var": lib.ones(2)})
        msgs.append(str(info.value))
    assert msgs[1] == msgs[0]


def test_functional_extras_in_top_namespace():
    check(lambda m, x: m.max_pool3d(x, 2, 1), randn(1, 2, 3, 4, 3), strides=False)
    check(lambda m, x: m.rms_norm(x, [3], eps=1e-3), randn(2, 3))
