"""The one list of deliberate differences from PyTorch 2.13: behaviour lantern keeps on purpose, each with its
reason and the test that pins both libraries' answers (so the entry goes stale loudly if either side changes).

Everything else is compared exactly by the oracle (tests/oracle.py); a test must not loosen a comparison silently,
it names its entry here instead: `assert DIFFERENCES["complex products at the end of a contiguous run"]`.
"""

DIFFERENCES = {
    "matrix_exp in half precision":
        "torch 2.13 evaluates matrix_exp of a bfloat16/float16 matrix in that precision, where its Taylor "
        "approximant overflows to nan on matrices of moderate norm; lantern computes it in double precision and "
        "rounds (the accurate value). Dtypes agree. Test: test_amp.py::test_autocast_output_dtype_matches_torch "
        "(the matrix_exp cases compare dtypes only).",
    "in-place inverse hyperbolic functions under autograd":
        "torch 2.13 has no derivative for acosh_, asinh_ and atanh_ (and their arc* aliases): it raises "
        "NotImplementedError when they write into a tensor autograd records; lantern differentiates them as acosh, "
        "asinh and atanh. Test: test_census_torch.py::test_inplace_function_under_autograd.",
    "ldexp gradient for negative integer exponents":
        "torch 2.13 multiplies ldexp's incoming gradient by 2**other computed in the integer dtype of other, so the "
        "gradient is 0 where other is a negative integer; lantern gives 2**other, the derivative (gradcheck agrees). "
        "Values agree. Test: test_missing_functions.py::test_ldexp_gradient_for_negative_exponents.",
    "complex products at the end of a contiguous run":
        "torch 2.13's CPU loop multiplies contiguous complex operands in vector registers with the schoolbook product "
        "(each of ac, bd, ad, bc rounded) and strided ones with a fused multiply-add, as NumPy does; lantern follows "
        "both. The last few elements of a contiguous run (fewer than one vector step: up to 7 complex64 or 3 "
        "complex128) torch finishes with compiled code whose rounding lantern does not copy: there lantern keeps the "
        "schoolbook product, so where ac and bd (or ad and bc) cancel the answers differ. Test: "
        "test_complex_extremal.py::test_product_at_the_end_of_a_contiguous_run.",
    "linalg_det gradient of a singular matrix":
        "torch 2.13 answers 0 for the gradient of det at this singular matrix; the adjugate (what lantern gives, "
        "checked by gradcheck) is not 0. Test: test_linalg_extra.py (the 'singular' linalg_det case).",
    "in-place writes into expanded memory":
        "torch lets fill_(number) and zero_() write one element through several stride-0 positions; lantern "
        "refuses every in-place write into shared memory (the foundation issue, pytorch#4664). Test: "
        "test_shape_ops.py::test_inplace_into_expanded_always_refused.",
    "MultiheadAttention batch_first output layout":
        "lantern computes batch-first attention without transposing, so its output is a contiguous (N, L, E) tensor; "
        "torch computes in (L, N, E) and returns a transposed view (strides (E, N*E, 1)). Values and gradients "
        "agree. Test: test_nn_transformer.py::test_multihead_attention_matches_torch (batch_first cases) and "
        "test_multihead_attention_fully_masked_rows.",
    "dtype checks on the meta device":
        "lantern's meta functions make every dtype check, so a meta tensor refuses what the CPU refuses "
        "(bitwise_not of a float); torch's meta kernels leave those checks to the device kernels and accept. "
        "Test: test_meta_device.py (DTYPE_CHECKED_ON_CPU_ONLY).",
    "isinf/isfinite of an empty integer tensor":
        "torch answers isinf/isfinite of an integer tensor with zeros_like/ones_like(self), which keep the input's "
        "strides even when it is empty (a stride-0 empty input gives stride 0); lantern runs them as pointwise ops, "
        "whose empty outputs are row-major as TensorIterator's are. Test: test_pointwise.py::"
        "test_unary_zero_dim_and_empty.",
    "prod(dim=None)":
        "torch's prod has two overloads, prod(*, dtype) and prod(int dim, keepdim, *, dtype), so x.prod(dim=None) is "
        "a TypeError there; lantern declares one prod with an optional dim and reads dim=None as the full product. "
        "Test: test_reductions.py::test_prod_dim_none_is_accepted.",
    "layout of empty pointwise results":
        "an empty result of a pointwise op is row-major in lantern (as torch's TensorIterator makes most of them: "
        "abs, neg, sin, x + x of a transposed empty tensor); torch keeps the input's order on a few paths (abs of a "
        "complex tensor, x * 2). Test: test_linalg_extra.py::test_svd (|U| of an empty complex batch).",
    "FFT over an empty batch":
        "torch 2.13's CPU FFT (MKL) raises 'MKL FFT error: ... Inconsistent configuration parameters' when the "
        "dims it does not transform hold no elements (torch.fft.fft(torch.ones(0, 4))); lantern returns the empty "
        "result of the right shape and dtype. Test: test_fft.py::test_empty_batch.",
    "precision of torch.special's Bessel kernels":
        "torch's bessel_j0/j1/y0/y1 are less accurate than SciPy's, which lantern computes with up to x = 5 (float64 "
        "errors up to 4e-7 for j0 near x = 5; torch's own OpInfos compare them with "
        "SciPy at 1e-5); the tests compare at that precision. Test: test_special_functions.py::"
        "test_unary_values_match_torch.",
    "last digits of float32 special functions":
        "torch computes float32 special functions in float32 with its own approximations, and its compiled "
        "polynomial recurrences contract a * q - b * p into fused multiply-adds; lantern's SciPy kernels and NumPy's "
        "separately rounded steps differ from it by several ulp (rtol 1e-4; more for degrees in the hundreds). "
        "Test: test_special_functions.py::test_polynomial_values_match_torch (FLOAT32_COMPUTED).",
    "float32 Laguerre polynomials of degrees in the millions":
        "torch's laguerre_polynomial_l loops n times in C; lantern hands degrees past 16384 to SciPy's compiled "
        "loop, which sums in float64: where the value stays finite in float32 (L_4988429(0.5)), lantern's is the "
        "float64 value rounded and torch's float32 loop has drifted (0.0083 where the true value is -0.0157). "
        "float64 values agree to ~1e-10. Test: test_special_aten_forms.py::test_laguerre_degrees_in_the_millions.",
    "orthogonal polynomials at x = NaN":
        "torch's chebyshev_polynomial_u/w (and shifted), laguerre_polynomial_l and legendre_polynomial_p return an "
        "uninitialized value for x = NaN and n >= 2 (0, -5.5e303, ... from call to call); lantern returns NaN. "
        "Test: test_special_functions.py::test_polynomials_of_nan_are_nan.",
    "reverse-over-forward through jvps of auxiliary outputs":
        "torch 2.13's forward formulas for linalg.det, linalg.slogdet, linalg.solve and native_batch_norm read "
        "auxiliary outputs (the LU factors, the saved mean and invstd) that autograd treats as constants, so the "
        "gradient of their tangents (reverse-over-forward, jacfwd(jacfwd(det))) is wrong: torch's own gradcheck of "
        "(x, t) -> tangent fails. lantern derives these tangents from the backward formulas (the double vjp), which "
        "are twice differentiable; its gradcheck passes and its first-order tangents equal torch's. Test: "
        "test_forward_ad_derived.py::test_reverse_over_forward_matches_finite_differences_where_torchs_does_not.",
}
