"""STAGING: derivative formulas, to be moved beside each op's declaration."""
from .derivative import derivative, nondifferentiable


# ---- pointwise unary ----
derivative("abs", self="grad * self.sgn()")
derivative("neg", self="-grad")
derivative("reciprocal", self="-grad * (result * result)")
derivative("square", self="grad * 2 * self")
derivative("sqrt", self="grad / (2 * result)")
derivative("rsqrt", self="-0.5 * grad * result * result * result")
derivative("exp", self="grad * result")
derivative("exp2", self="grad * result * LN2")
derivative("expm1", self="grad * (result + 1)")
derivative("log", self="grad / self")
derivative("log2", self="grad / (self * LN2)")
derivative("log10", self="grad / (self * LN10)")
derivative("log1p", self="grad / (self + 1)")
derivative("sin", self="grad * self.cos()")
derivative("cos", self="grad * -self.sin()")
derivative("tan", self="grad * (1 + result * result)")
derivative("asin", self="grad / (1 - self * self).sqrt()")
derivative("acos", self="-grad / (1 - self * self).sqrt()")
derivative("atan", self="grad / (1 + self * self)")
derivative("sinh", self="grad * self.cosh()")
derivative("cosh", self="grad * self.sinh()")
derivative("tanh", self="grad * (1 - result * result)")
derivative("asinh", self="grad / (self * self + 1).sqrt()")
derivative("acosh", self="grad / (self * self - 1).sqrt()")
derivative("atanh", self="grad / (1 - self * self)")
derivative("sigmoid", self="grad * result * (1 - result)")
for _name in ("sign", "sgn", "floor", "ceil", "trunc"):
    derivative(_name, self="grad * 0")
derivative("frac", self="grad")
nondifferentiable("bitwise_not", "logical_not", "isnan", "isinf", "isfinite", "signbit")

# ---- pointwise binary ----
derivative("add", self="grad", other="grad if alpha == 1 else grad * alpha")
derivative("sub", self="grad", other="-grad if alpha == 1 else -grad * alpha")
derivative("rsub", name="RsubBackward1", self="-grad if alpha == 1 else -grad * alpha", other="grad")
derivative("mul", self="grad * other", other="grad * self")
derivative("div", self="grad / other if rounding_mode is None else grad * 0",
           other="-grad * self / (other * other) if rounding_mode is None else grad * 0")
derivative("remainder", self="grad", other="-grad * self.div(other, rounding_mode='floor')")
derivative("fmod", self="grad", other="-grad * self.div(other, rounding_mode='trunc')")
derivative("atan2", self="grad * other / (self * self + other * other)",
           other="-grad * self / (self * self + other * other)")
derivative("maximum", self="maximum_backward(grad, self, other, True)",
           other="maximum_backward(grad, other, self, True)")
derivative("minimum", self="maximum_backward(grad, self, other, False)",
           other="maximum_backward(grad, other, self, False)")
derivative("pow", name=lambda args: ("PowBackward1" if hasattr(args[1], "dim") else "PowBackward0")
           if hasattr(args[0], "dim") else "PowBackward2",
           self="pow_backward_self(grad, self, exponent)",
           exponent="pow_backward_exponent(grad, self, exponent, result)")
derivative("clamp", name="ClampBackward1", self="clamp_backward(grad, self, min, max)",
           min="clamp_bound_backward(grad, self, min, max, True)",
           max="clamp_bound_backward(grad, self, max, min, False)")
derivative("where", self="where_zero(condition, grad)", other="where_zero(condition.logical_not(), grad)")
nondifferentiable("floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                  "bitwise_right_shift", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                  "logical_xor")

# ---- reductions ----
derivative("sum", name=lambda args: "SumBackward0" if args[1] is None else "SumBackward1",
           self="sum_backward(grad, self_meta.size, dim, keepdim)")
derivative("mean", name=lambda args: "MeanBackward0" if args[1] is None else "MeanBackward1",
           self="mean_backward(grad, self_meta.size, dim, keepdim)")
derivative("prod", name=lambda args: "ProdBackward0" if args[1] is None else "ProdBackward1",
           self="prod_backward(grad, self, result, dim, keepdim)")
derivative("amax", self="evenly_distribute_backward(grad, self, result, dim, keepdim)")
derivative("amin", self="evenly_distribute_backward(grad, self, result, dim, keepdim)")
derivative("max", name="MaxBackward1", self="evenly_distribute_backward(grad, self, result)")
derivative("min", name="MinBackward1", self="evenly_distribute_backward(grad, self, result)")
derivative("max.dim", name="MaxBackward0", self="value_selecting_backward(grad, dim, indices, self_meta.size, keepdim)")
derivative("min.dim", name="MinBackward0", self="value_selecting_backward(grad, dim, indices, self_meta.size, keepdim)")
nondifferentiable("argmax", "argmin", "any", "all")

# ---- views ----
derivative("view", self="grad.reshape(self_meta.size)")
derivative("t", self="grad.t()")
derivative("transpose", self="grad.transpose(dim0, dim1)")
derivative("permute", self="permute_backward(grad, dims)")
derivative("expand", self="grad.sum_to_size(self_meta.size)")
derivative("squeeze", name=lambda args: "SqueezeBackward0" if args[1] is None else "SqueezeBackward1",
           self="grad.reshape(self_meta.size)")
derivative("unsqueeze", self="grad.squeeze(dim)")
derivative("select", self="select_backward(grad, self_meta, dim, index)")
derivative("slice", self="slice_backward(grad, self_meta, dim, start, end, step)")
derivative("narrow", name="SliceBackward0", self="slice_backward(grad, self_meta, dim, start, start + length, 1)")
derivative("diagonal", self="diagonal_backward(grad, self_meta, offset, dim1, dim2)")
derivative("as_strided", self="as_strided_backward(grad, self_meta, size, stride, storage_offset)")
derivative("unfold", self="unfold_backward(grad, self_meta, dimension, size, step)")
derivative("unflatten", name="ViewBackward0", self="grad.reshape(self_meta.size)")
derivative("alias", self="grad")

# ---- linear algebra ----
derivative("mm", self="grad.mm(mat2.t())", mat2="self.t().mm(grad)")
derivative("bmm", self="grad.bmm(mat2.transpose(1, 2))", mat2="self.transpose(1, 2).bmm(grad)")
derivative("dot", self="grad * tensor", tensor="grad * self")
derivative("mv", self="mv_backward_self(grad, vec)", vec="self.t().mv(grad)")

# ---- joining and copying ----
derivative("cat", tensors="cat_backward(grad, tensors, dim)")
derivative("stack", tensors="list(grad.unbind(dim))")
derivative("clone", self="grad")
derivative("_to_copy", name="ToCopyBackward0", self="grad.to(self_meta.dtype).to(self_meta.device)")
derivative("copy_", name="CopyBackwards", self="grad * 0", src="grad.to(src_meta.dtype)")
derivative("fill_", self="grad * 0")
derivative("zero_", self="grad * 0")
derivative("tril", self="grad.tril(diagonal)")
derivative("triu", self="grad.triu(diagonal)")

# ---- view scatters ----
derivative("slice_scatter", self="grad.slice_scatter(zeros_like(src_meta), dim, start, end, step)",
           src="grad.slice(dim, start, end, step)")
derivative("select_scatter", self="grad.select_scatter(zeros_like(src_meta), dim, index)", src="grad.select(dim, index)")
derivative("diagonal_scatter", self="grad.diagonal_scatter(zeros_like(src_meta), offset, dim1, dim2)",
           src="grad.diagonal(offset, dim1, dim2)")
derivative("as_strided_scatter", self="grad.as_strided_scatter(zeros_like(src_meta), size, stride, storage_offset)",
           src="grad.as_strided(size, stride, storage_offset)")
derivative("unfold_backward", grad_in="grad.unfold(dim, size, step)")
