"""Which ops autocast runs in which precision on the CPU: PyTorch's CPU autocast policy, op by op.

The lists were learned from PyTorch 2.13's behaviour (each op run under `torch.autocast("cpu")` on float32 and on
lower-precision inputs); tests/test_amp.py holds them to torch, op by op. A name is a registered op
(lantern.ops.registry), a composite, or a Python function of lantern.nn.functional; the policy applies where that
op is called, and the ops it calls inside run with autocast off, as in PyTorch (whose Autocast kernel excludes its
own key before it calls the op).

- LOWER_PRECISION: floating inputs are cast to the region's dtype (bfloat16 or float16) — the matrix products and
  convolutions, which are fast and accurate enough in low precision.
- FLOAT32: floating inputs are cast to float32 — losses, products and norms of many elements, pooling and padding
  ops whose backward accumulates, linear algebra.
- PROMOTE: inputs are cast to the widest floating type among them (cat, stack, index_copy); mixing the two
  lower-precision types (bfloat16 with float16) is an error there.
Every other op runs on its inputs as they are, and autocast still sees the ops it calls. float64 inputs are never
cast, nor integer ones.

>>> policy_of("mm"), policy_of("mse_loss"), policy_of("cat"), policy_of("add")
('lower_precision', 'float32', 'promote', None)
"""

LOWER_PRECISION = frozenset({
    "mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul",
    "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "prelu", "scaled_dot_product_attention", "linalg.vecdot",
})

FLOAT32 = frozenset({
    # losses
    "mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "nll_loss", "cross_entropy", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "poisson_nll_loss", "soft_margin_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss", "multi_margin_loss",
    "multilabel_margin_loss", "triplet_margin_loss", "ctc_loss",
    # reductions over many elements
    "prod", "trace", "cdist", "quantile", "nanquantile",
    # pooling, unpooling and sampling
    "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "grid_sample", "grid_sampler_2d", "grid_sampler_3d", "fractional_max_pool2d", "fractional_max_pool3d",
    # complex numbers built from real ones
    "polar", "view_as_complex",
    # linear algebra: the torch.linalg functions ("linalg.<name>") and the registered ops beneath them
    "svd", "inverse", "linalg.cholesky", "linalg.cholesky_ex", "linalg.eigh", "linalg.eigvalsh", "linalg.inv",
    "linalg.inv_ex", "linalg.solve", "linalg.svd", "linalg.svdvals", "linalg.qr", "linalg.lstsq",
    "linalg.matrix_rank", "linalg_svd", "linalg_cholesky_ex", "linalg_eigh", "linalg_qr", "linalg_inv_ex",
    "linalg_solve", "linalg.eig", "linalg.eigvals", "linalg_eig", "linalg.cond", "linalg.householder_product",
    "linalg.tensorinv", "linalg.tensorsolve", "cholesky", "cholesky_inverse", "cholesky_solve", "geqrf", "orgqr",
    "ormqr", "qr", "lu", "lu_solve", "triangular_solve", "pinverse",
    # spectral ops: torch.fft's functions (by their ATen names, fft_<name>; not the Hermitian n-d ones) and stft/istft
    "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2",
    "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft", "stft", "istft",
})

PROMOTE = frozenset({"cat", "stack", "index_copy"})

# pad is float32 only in the modes PyTorch computes with its reflection_pad / replication_pad ops
_FLOAT32_PAD_MODES = ("reflect", "replicate")


def policy_of(name):
    """'lower_precision', 'float32', 'promote' or None (run as is) for the op `name`."""
    if name in LOWER_PRECISION:
        return "lower_precision"
    if name in FLOAT32:
        return "float32"
    if name in PROMOTE:
        return "promote"
    return None


def call_policy(name, args, kwargs):
    """The policy of one call of `name`: policy_of(name), except for ops whose policy depends on an argument."""
    if name == "pad":
        mode = kwargs.get("mode", args[2] if len(args) > 2 else "constant")
        return "float32" if mode in _FLOAT32_PAD_MODES else None
    return policy_of(name)


# every name with a policy: the composites and Python functions among them get the Autocast stage in front
FUNCTIONS = LOWER_PRECISION | FLOAT32 | PROMOTE | {"pad"}
