"""The forward derivatives of the ops declared in the other op modules: PyTorch's `result:` lines of
derivatives.yaml, one table (lantern/ops/forward_derivative.py says what the kinds mean).

A formula reads the arguments (primal values), each differentiable argument's tangent `<arg>_t` (zeros where it has
none; 0 for a number), the output `result` (or the outputs by name) and the backward helpers. For a pointwise
function of one real input, J is diagonal, so the tangent is the backward formula with `grad` replaced by `self_t`
(relu: `where_zero(result > 0, self_t)`). A multi-output op's formula gives a tuple, None for an output with no
tangent (an index).

>>> from lantern.ops.registry import get
>>> get("sin").derivative.forward.text
'self_t * self.cos()'
"""
from . import registry
from .call_by_name import call_op as _op
from .derivative_helpers import pow_backward_exponent
from .forward_derivative import derived, forward_formula, linear, unsupported
from .op_kinds import AliasKind

# ---- views: the tangent of a view is the same view of the tangent ----
linear(*sorted(op.name for op in registry.REGISTRY.values()
               if op.schema.alias is AliasKind.VIEW and op.derivative is not None
               and not op.derivative.nondifferentiable and op.name != "values"))

# ---- linear in their differentiable inputs ----
linear("neg", "conj_physical", "rad2deg", "deg2rad", "add", "sub", "rsub", "where", "sum", "mean", "cumsum",
       "_unsafe_view", "clone", "cat", "stack", "flip", "roll", "repeat", "diag_embed", "trace", "tril", "triu",
       "index.Tensor", "gather", "index_select", "take", "masked_select", "masked_scatter", "index_add",
       "index_copy", "index_put_", "scatter.src", "scatter_add", "slice_scatter", "select_scatter",
       "diagonal_scatter", "as_strided_scatter", "unfold_backward", "im2col", "col2im", "avg_pool2d",
       "avg_pool2d_backward", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward", "_upsample",
       "_upsample_backward", "_upsample_aa", "_upsample_aa_backward", "embedding", "embedding_dense_backward",
       "_fft_c2c", "_fft_r2c", "_fft_c2r", "_to_copy", "_mha_unpack", "nll_loss_backward")

# ---- elementwise math: f'(x) * x_t ----
for name, text in {
    "abs": "(conj(self_t) * self.sgn()).real if self.is_complex() else self_t * self.sgn()",
    "reciprocal": "-self_t * result * result",
    "square": "self_t * 2 * self",
    "sqrt": "self_t / (2 * result)",
    "rsqrt": "-0.5 * self_t * result * result * result",
    "exp": "self_t * result",
    "exp2": "self_t * result * LN2",
    "expm1": "self_t * (result + 1)",
    "log": "self_t / self",
    "log2": "self_t / (self * LN2)",
    "log10": "self_t / (self * LN10)",
    "log1p": "self_t / (self + 1)",
    "sin": "self_t * self.cos()",
    "cos": "-self_t * self.sin()",
    "tan": "self_t * (1 + result * result)",
    "asin": "self_t * (1 - self * self).rsqrt()",
    "acos": "-self_t * (1 - self * self).rsqrt()",
    "atan": "self_t / (1 + self * self)",
    "sinh": "self_t * self.cosh()",
    "cosh": "self_t * self.sinh()",
    "tanh": "self_t * (1 - result * result)",
    "asinh": "self_t * (self * self + 1).rsqrt()",
    "acosh": "self_t * (self * self - 1).rsqrt()",
    "atanh": "self_t / (1 - self * self)",
    "sigmoid": "self_t * result * (1 - result)",
    "erf": "self_t * TWO_OVER_SQRT_PI * (-self * self).exp()",
    "erfc": "-self_t * TWO_OVER_SQRT_PI * (-self * self).exp()",
    "erfinv": "self_t * HALF_SQRT_PI * result.square().exp()",
    "lgamma": "self_t * self.digamma()",
    "digamma": "self_t * polygamma(1, self)",
    "polygamma": "self_t * polygamma(n + 1, self)",
    "special_entr": "self_t * -(1 + self.log())",
    "frac": "self_t",
    "nextafter": "self_t",
    "nan_to_num": "self_t * self.isfinite()",
    "sign": "zeros_like(result)", "floor": "zeros_like(result)", "ceil": "zeros_like(result)",
    "trunc": "zeros_like(result)", "round": "zeros_like(result)",
    # ---- binary ----
    "mul": "self_t * other + self * other_t",
    "div": "(self_t - other_t * result) / other if rounding_mode is None else zeros_like(result)",
    "remainder": "self_t - other_t * self.div(other, rounding_mode='floor')",
    "fmod": "self_t - other_t * self.div(other, rounding_mode='trunc')",
    "atan2": "(self_t * other - other_t * self) / (self * self + other * other)",
    "hypot": "(self * self_t + other * other_t) / result",
    "maximum": "other_t + ((self > other).to(result.dtype) + (self == other).to(result.dtype) * 0.5)"
               " * (self_t - other_t)",
    "minimum": "other_t + ((self < other).to(result.dtype) + (self == other).to(result.dtype) * 0.5)"
               " * (self_t - other_t)",
    "logaddexp": "self_t / (1 + (other - self).exp()) + other_t / (1 + (self - other).exp())",
    "logaddexp2": "self_t / (1 + (other - self).exp2()) + other_t / (1 + (self - other).exp2())",
    "lerp": "self_t + weight * (end_t - self_t) + weight_t * (end - self)",
    "addcmul": "self_t + value * (tensor1_t * tensor2 + tensor1 * tensor2_t)",
    "addcdiv": "self_t + value * (tensor1_t / tensor2 - tensor1 * tensor2_t / (tensor2 * tensor2))",
    # ---- matrix products: the product rule ----
    "mm": "self_t.mm(mat2) + self.mm(mat2_t)",
    "bmm": "self_t.bmm(mat2) + self.bmm(mat2_t)",
    "mv": "self_t.mv(vec) + self.mv(vec_t)",
    "dot": "self_t.dot(tensor) + self.dot(tensor_t)",
    "addmm": "self_t * beta + (mat1_t.mm(mat2) + mat1.mm(mat2_t)) * alpha",
    "addmv": "self_t * beta + (mat_t.mv(vec) + mat.mv(vec_t)) * alpha",
    "baddbmm": "self_t * beta + (batch1_t.bmm(batch2) + batch1.bmm(batch2_t)) * alpha",
    "addbmm": "self_t * beta + (batch1_t.bmm(batch2) + batch1.bmm(batch2_t)).sum(0) * alpha",
    "linalg_inv_ex": "(-inverse.matmul(A_t).matmul(inverse), None)",
    # ---- softmax ----
    "softmax": "result * (self_t - (self_t * result).sum(dim, keepdim=True))",
    "log_softmax": "self_t - (self_t * result.exp()).sum(dim, keepdim=True)",
    # ---- pointwise activations: the backward with grad = self_t ----
    "relu": "where_zero(result > 0, self_t)",
    "leaky_relu": "_where(self > 0, self_t, self_t * negative_slope)",
    "elu": "_elu_grad(self_t, self, alpha, scale, input_scale)",
    "celu": "_elu_grad(self_t, self, alpha, 1, 1 / alpha)",
    "gelu": "_gelu_grad(self_t, self, approximate)",
    "silu": "_silu_grad(self_t, self)",
    "softplus": "_where(self * beta > threshold, self_t, self_t * (self * beta).sigmoid())",
    "hardtanh": "where_zero((self > min_val) & (self < max_val), self_t)",
    "hardsigmoid": "where_zero((self > -3) & (self < 3), self_t / 6)",
    "hardswish": "_hardswish_grad(self_t, self)",
    "mish": "_mish_grad(self_t, self)",
    "softshrink": "where_zero((self.abs() <= lambd).logical_not(), self_t)",
    "hardshrink": "where_zero(self.abs() > lambd, self_t)",
    "threshold": "where_zero(self > threshold, self_t)",
    "log_sigmoid": "self_t * (-self).sigmoid()",
    "_normal_cdf": "self_t * (self * self * -0.5).exp() * _INV_SQRT_2PI",
    # ---- convolution: linear in input and bias, and in weight ----
    "convolution": "_op('convolution', input_t, weight, bias_t, stride, padding, dilation, transposed, output_padding,"
                   " groups) + _op('convolution', input, weight_t, None, stride, padding, dilation, transposed,"
                   " output_padding, groups)",
    # ---- the value is replaced: the tangent of what is written ----
    "constant_pad_nd": "_op('constant_pad_nd', self_t, pad, 0)",
    "scatter.value": "self_t.scatter(dim, index, 0)",
    "index_fill.int_Scalar": "self_t.index_fill(dim, index, 0)",
    "masked_fill.Scalar": "self_t.masked_fill(mask, 0)",
    "copy_": "src_t",
    "fill_": "zeros_like(self)",
    "zero_": "zeros_like(self)",
    "elu_": "_elu_grad(self_t, self, alpha, scale, input_scale)",
    "polygamma_": "self_t * polygamma(n + 1, self)",
    "eq_": "zeros_like(result)", "ne_": "zeros_like(result)", "lt_": "zeros_like(result)",
    "le_": "zeros_like(result)", "gt_": "zeros_like(result)", "ge_": "zeros_like(result)",
    "frexp.Tensor": "(self_t / exponent.to(self_t.dtype).exp2(), None)",
    "fake_quantize_per_tensor_affine_cachemask": "(self_t * mask, None)",
    "fake_quantize_per_channel_affine_cachemask": "(self_t * mask, None)",
}.items():
    forward_formula(name, text)



def _reduced_dims(dim, ndim):
    """A reduction's dims as a tuple (all of them for None or [])."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return tuple(range(ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _var_jvp(self_t, self, dim, correction, keepdim):
    """d var = 2 Σ Re(conj(x - mean) dx) / (N - correction)."""
    dims = _reduced_dims(dim, self.dim())
    n = 1
    for d in dims:
        n *= self.shape[d]
    centered = self - self.mean(dims, keepdim=True)
    product = (centered.conj() * self_t).real if self.is_complex() else centered * self_t  # d |x - mean|²
    if n == 0:  # no elements: the tangent of the nan is 0, as torch's
        return product.sum(dims, keepdim=keepdim)
    return product.sum(dims, keepdim=keepdim) * 2 / (n - (1 if correction is None else correction))


def _mean_jvp(self_t, self, dim, keepdim):
    return self_t.mean(_reduced_dims(dim, self.dim()), keepdim=keepdim)


def _mH(t):
    return t.transpose(-2, -1).conj()


def _cholesky_jvp(A_t, L, upper):
    """dL = L Φ(L⁻¹ dA L⁻ᴴ), Φ taking the lower triangle with the diagonal halved."""
    lower = _mH(L) if upper else L
    gram = _op("linalg_solve_triangular", _mH(lower),
               _op("linalg_solve_triangular", lower, A_t, False, True, False), True, False, False)
    phi = gram.tril(-1) + gram.diagonal(0, -2, -1).diag_embed() * 0.5
    dL = lower.matmul(phi)
    return _mH(dL) if upper else dL


def _eigh_jvp(A_t, eigenvalues, eigenvectors):
    """dλ = diag(Vᴴ dA V); dV = V ((Vᴴ dA V) / (λⱼ - λᵢ)), zero on the diagonal."""
    projected = _mH(eigenvectors).matmul(A_t).matmul(eigenvectors)
    gaps = eigenvalues.unsqueeze(-2) - eigenvalues.unsqueeze(-1) + eigenvalues.new_ones(eigenvalues.shape).diag_embed()
    off = projected / gaps
    off = off - off.diagonal(0, -2, -1).diag_embed()
    d_values = projected.diagonal(0, -2, -1)
    return (d_values.real if d_values.is_complex() else d_values), eigenvectors.matmul(off)


def _pow_jvp(self_t, self, exponent, exponent_t, result):
    """d(a ** b) = b a^(b-1) da (0 where b == 0) + a^b log(a) db (0 where a == 0 <= b), torch's conventions;
    unconjugated, so complex inputs get the holomorphic derivative (the backward helpers conjugate)."""
    tangent = 0
    if hasattr(self, "dim"):
        if not hasattr(exponent, "dim"):
            tangent = self_t * (exponent * self.pow(exponent - 1)) if exponent != 0 else self_t * 0
        else:
            tangent = _op("where", exponent == 0, 0.0, self_t * (exponent * self.pow(exponent - 1)))
    if hasattr(exponent, "dim"):
        tangent = tangent + _pow_exponent_jvp(exponent_t, self, exponent, result)
    return tangent


def _pow_exponent_jvp(exponent_t, self, exponent, result):
    if not hasattr(self, "dim"):
        return pow_backward_exponent(exponent_t, self, exponent, result)
    zero_base = (self == 0) & ((exponent.real if exponent.is_complex() else exponent) >= 0)
    return _op("where", zero_base, 0.0, exponent_t * result * _op("where", zero_base, 1, self).log())


def _real_amax(t, dim):
    """The largest real part along dim, kept: what a log-sum-exp shifts by."""
    return (t.real if t.is_complex() else t).amax(dim, keepdim=True)


def _kept(t, dims, keepdim):
    """A reduction's result t with its reduced dims put back as size 1 (so it broadcasts against the input)."""
    if keepdim:
        return t
    for d in sorted((dims,) if isinstance(dims, int) else dims):
        t = t.unsqueeze(d)
    return t


def _extreme_jvp(self_t, self, result, dim, keepdim):
    """amax/amin/max/min: the tangent evenly shared among the elements equal to the extreme (as the gradient)."""
    dims = tuple(d % max(self.dim(), 1) for d in _reduced_dims(dim, self.dim())) if self.dim() else ()
    if not dims:
        return self_t.clone()
    hit = (self == _kept(result, dims, keepdim)).to(self_t.dtype)
    return (self_t * hit).sum(dims, keepdim=keepdim) / hit.sum(dims, keepdim=keepdim)


def _logsumexp_jvp(self_t, self, result, dim, keepdim):
    dims = tuple(d % max(self.dim(), 1) for d in _reduced_dims(dim, self.dim())) if self.dim() else ()
    if not dims:
        return self_t.clone()
    return (self_t * (self - _kept(result, dims, keepdim)).exp()).sum(dims, keepdim=keepdim)


def _selected_jvp(self_t, dim, indices, keepdim):
    """max.dim & co.: the tangent at the selected index."""
    if self_t.dim() == 0:
        return self_t.clone()
    picked = self_t.gather(dim, _kept(indices, dim % self_t.dim(), keepdim))
    return picked if keepdim else picked.squeeze(dim)


def _layer_norm_jvp(input_t, input, normalized_shape, weight, weight_t, bias_t, mean, rstd):
    """x̂ = (x - μ) r: dx̂ = r (dx - mean(dx)) - x̂ mean(x̂ dx) r, over the normalized dims; out = x̂ w + b. The
    tangents of μ and r: mean(dx) and -r² mean(x̂ dx)."""
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    normalized = (input - mean) * rstd
    spread = (normalized * input_t).mean(dims, keepdim=True)
    d_normalized = (input_t - input_t.mean(dims, keepdim=True) - normalized * spread) * rstd
    out_t = d_normalized if weight is None else d_normalized * weight
    if weight_t is not None:
        out_t = out_t + normalized * weight_t
    if bias_t is not None:
        out_t = out_t + bias_t
    return out_t, input_t.mean(dims, keepdim=True), -rstd * rstd * spread


# ---- formulas that call the helpers above ----
_HELPERS = {helper.__name__: helper for helper in (
    _pow_jvp, _real_amax, _extreme_jvp, _logsumexp_jvp, _selected_jvp, _var_jvp, _mean_jvp, _cholesky_jvp,
    _eigh_jvp, _layer_norm_jvp)}
for name, text in {
    "var.correction": "_var_jvp(self_t, self, dim, correction, keepdim)",
    "std.correction": "_var_jvp(self_t, self, dim, correction, keepdim) / (2 * result)",
    "var_mean.correction": "(_var_jvp(self_t, self, dim, correction, keepdim), _mean_jvp(self_t, self, dim, keepdim))",
    "std_mean.correction": "(_var_jvp(self_t, self, dim, correction, keepdim) / (2 * result0),"
                           " _mean_jvp(self_t, self, dim, keepdim))",
    "linalg_cholesky_ex": "(_cholesky_jvp(A_t, L, upper), None)",
    "linalg_eigh": "_eigh_jvp(A_t, eigenvalues, eigenvectors)",
    "pow": "_pow_jvp(self_t, self, exponent, exponent_t, result)",
    "native_layer_norm": "_layer_norm_jvp(input_t, input, normalized_shape, weight, weight_t, bias_t, result1,"
                         " result2)",
    "amax": "_extreme_jvp(self_t, self, result, dim, keepdim)",
    "amin": "_extreme_jvp(self_t, self, result, dim, keepdim)",
    "max": "_extreme_jvp(self_t, self, result, None, False)",
    "min": "_extreme_jvp(self_t, self, result, None, False)",
    "max.dim": "(_selected_jvp(self_t, dim, indices, keepdim), None)",
    "min.dim": "(_selected_jvp(self_t, dim, indices, keepdim), None)",
    "logsumexp": "_logsumexp_jvp(self_t, self, result, dim, keepdim)",
    "logcumsumexp": "(self_t * (self - _real_amax(self, dim)).exp()).cumsum(dim)"
                    " * (_real_amax(self, dim) - result).exp()",
}.items():
    forward_formula(name, text, helpers=_HELPERS)

# ---- random samples: their value does not move with their parameters' tangents ----
for name in ("uniform_", "normal_", "exponential_", "geometric_", "cauchy_", "log_normal_", "random_.from",
             "bernoulli", "bernoulli_.float", "bernoulli_.Tensor", "poisson", "normal.Tensor_float",
             "normal.float_Tensor", "normal.Tensor_Tensor"):
    forward_formula(name, "zeros_like(result)")

# ---- derived from the backward formulas (the double vjp) ----
derived("sgn", "logit", "i0", "sinc", "special_i1", "special_i1e", "special_i0e", "special_erfcx",
        "special_log_ndtr", "special_ndtri", "special_xlog1py", "special_zeta", "igamma", "igammac", "mvlgamma",
        "xlogy", "copysign", "fmax", "fmin", "clamp", "clamp_min", "clamp_max", "angle",
        "prod", "aminmax", "nansum", "median.all", "nanmedian.all", "median.dim",
        "nanmedian.dim", "mode", "kthvalue", "sort", "topk", "cummax", "cummin", "cumprod",
        "linalg_vector_norm", "vdot", "cdist",
        "linalg_det", "linalg_slogdet", "linalg_solve", "linalg_svd",
        "linalg_qr", "linalg_pinv", "linalg_solve_triangular", "_cholesky_solve_helper", "_cholesky_inverse_helper",
        "linalg_lu_factor_ex", "lu_unpack", "linalg_lu", "linalg_lu_solve", "linalg_eig", "linalg_matrix_exp",
        "index_fill.int_Tensor", "masked_fill.Tensor", "scatter_reduce",
        "max_pool2d_with_indices", "adaptive_max_pool2d", "glu", "_prelu_kernel",
        "_softmax_backward_data", "_log_softmax_backward_data", "_layer_norm_input_backward",
        "native_batch_norm", "mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
        "binary_cross_entropy_with_logits", "nll_loss", "_cross_entropy_index", "_cross_entropy_index_backward",
        "_standard_gamma")

# ---- sparse layouts: no forward AD ----
unsupported("values", "_sparse_addmm", "_sparse_sum", "_sparse_softmax", "_sparse_log_softmax",
            "_sparse_csr_tensor_unsafe", "_to_sparse_csr", "_csr_to_coo", "_sparse_mm_reduce_impl",
            "sparse_sampled_addmm", "_sparse_coo_tensor_with_dims_and_tensors", "_to_dense", "_to_sparse",
            "_coalesce", "sparse_mask")
