"""STAGING: derivative formulas, to be moved beside each op's declaration."""
from .derivative import derivative, nondifferentiable, zero_gradient_inplace


def _is_tensor(a):
    return hasattr(a, "dim")


# ---- pointwise unary ----
# Complex gradients follow PyTorch's convention (the conjugate Wirtinger derivative): hence the conj()s.
derivative("abs", self="grad * self.sgn()")
derivative("neg", self="-grad")
derivative("reciprocal", self="-grad * conj(result * result)")
derivative("square", name="PowBackward0", self="grad * 2 * conj(self)")  # square is pow(self, 2) in PyTorch
derivative("sqrt", self="grad / (2 * conj(result))")
derivative("rsqrt", self="-0.5 * grad * conj(result * result * result)")
derivative("exp", self="grad * conj(result)")
derivative("exp2", self="grad * conj(result) * LN2")
derivative("expm1", self="grad * (conj(result) + 1)")
derivative("log", self="grad / conj(self)")
derivative("log2", self="grad / (conj(self) * LN2)")
derivative("log10", self="grad / (conj(self) * LN10)")
derivative("log1p", name="Log1PBackward0", self="grad / (conj(self) + 1)")
derivative("sin", self="grad * conj(self.cos())")
derivative("cos", self="grad * -conj(self.sin())")
derivative("tan", self="grad * conj(1 + result * result)")
derivative("asin", self="grad * conj((1 - self * self).rsqrt())")
derivative("acos", self="-grad * conj((1 - self * self).rsqrt())")
derivative("atan", self="grad / conj(1 + self * self)")
derivative("sinh", self="grad * conj(self.cosh())")
derivative("cosh", self="grad * conj(self.sinh())")
derivative("tanh", self="grad * conj(1 - result * result)")
derivative("asinh", self="grad * conj((self * self + 1).rsqrt())")
derivative("acosh", self="grad * conj((self * self - 1).rsqrt())")
derivative("atanh", self="grad / conj(1 - self * self)")
derivative("sigmoid", self="grad * conj(result * (1 - result))")
for _name in ("sign", "floor", "ceil", "trunc"):
    derivative(_name, self="zeros_like(grad)")
derivative("sgn", self="sgn_backward(grad, self, result)")
derivative("frac", self="grad")
nondifferentiable("bitwise_not", "logical_not", "isnan", "isinf", "isfinite", "signbit")

# ---- pointwise binary ----
derivative("add", self="grad", other="grad if alpha == 1 else grad * conj(alpha)")
derivative("sub", self="grad", other="-grad if alpha == 1 else -grad * conj(alpha)")
derivative("rsub", name=lambda args: "RsubBackward0" if _is_tensor(args[1]) else "RsubBackward1",
           scalar_inputs=("other",), self="-grad if alpha == 1 else -grad * conj(alpha)", other="grad")
derivative("mul", self="grad * conj(other)", other="grad * conj(self)")
derivative("div", name=lambda args: "DivBackward0" if args[2] is None else "DivBackward2",
           self="grad / conj(other) if rounding_mode is None else zeros_like(grad)",
           other="-grad * conj(self / other / other) if rounding_mode is None else zeros_like(grad)")
derivative("remainder", name=lambda args: "RemainderBackward1" if _is_tensor(args[1]) else "RemainderBackward0",
           scalar_inputs=("other",), self="grad", other="-grad * self.div(other, rounding_mode='floor')")
derivative("fmod", name=lambda args: "FmodBackward1" if _is_tensor(args[1]) else "FmodBackward0",
           scalar_inputs=("other",), self="grad", other="-grad * self.div(other, rounding_mode='trunc')")
derivative("atan2", self="grad * other / (self * self + other * other)",
           other="-grad * self / (self * self + other * other)")
derivative("maximum", self="maximum_backward(grad, self, other, True)",
           other="maximum_backward(grad, other, self, True)")
derivative("minimum", self="maximum_backward(grad, self, other, False)",
           other="maximum_backward(grad, other, self, False)")
derivative("pow", name=lambda args: ("PowBackward1" if _is_tensor(args[1]) else "PowBackward0")
           if _is_tensor(args[0]) else "PowBackward2", scalar_inputs=("self", "exponent"),
           self="pow_backward_self(grad, self, exponent)",
           exponent="pow_backward_exponent(grad, self, exponent, result)")
derivative("clamp", name=lambda args: "ClampBackward0" if _is_tensor(args[1]) or _is_tensor(args[2]) else
           "ClampBackward1", scalar_inputs=(("min", "max"),), self="clamp_backward(grad, self, min, max)",
           min="clamp_bound_backward(grad, self, min, max, True)",
           max="clamp_bound_backward(grad, self, max, min, False)")
derivative("where", self="where_zero(condition, grad)", other="where_zero(condition.logical_not(), grad)")
nondifferentiable("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                  "logical_and", "logical_or", "logical_xor")
zero_gradient_inplace("eq", "ne", "lt", "le", "gt", "ge")

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
derivative("squeeze", name=lambda args: "SqueezeBackward0" if args[1] is None else
           "SqueezeBackward1" if isinstance(args[1], int) else "SqueezeBackward2",
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
derivative("real", self="to_copy_backward(grad, self_meta)")
derivative("imag", self="grad.to(self_meta.dtype) * 1j")
nondifferentiable("view.dtype")

# ---- advanced indexing ----
derivative("index.Tensor", self="index_backward(grad, self_meta, indices)")
derivative("index_put_", self="grad if accumulate else grad.index_put(indices, zeros_like(values_meta))",
           values="index(grad, indices)")

# ---- linear algebra ----
derivative("mm", self="grad.mm(conj(mat2.t()))", mat2="conj(self.t()).mm(grad)")
derivative("bmm", self="grad.bmm(conj(mat2.transpose(1, 2)))", mat2="conj(self.transpose(1, 2)).bmm(grad)")
derivative("dot", self="grad * conj(tensor)", tensor="grad * conj(self)")
derivative("mv", self="grad.unsqueeze(1) * conj(vec).unsqueeze(0)", vec="conj(self.t()).mv(grad)")

# ---- joining and copying ----
derivative("cat", tensors="cat_backward(grad, tensors, dim)")
derivative("stack", tensors="list(grad.unbind(dim))")
derivative("clone", self="grad")
derivative("_to_copy", name="ToCopyBackward0", self="to_copy_backward(grad, self_meta)")
derivative("copy_", name="CopyBackwards", self="zeros_like(grad)", src="to_copy_backward(grad, src_meta)")
derivative("fill_", name="FillBackward2", self="zeros_like(grad)")
derivative("zero_", self="zeros_like(grad)")
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

# ---- random: the samples do not depend smoothly on the parameters, so their gradient is zero (as in PyTorch) ----
for _name, _node in (("uniform_", "UniformBackward0"), ("normal_", "NormalBackward0"),
                     ("exponential_", "ExponentialBackward0"), ("bernoulli", "BernoulliBackward0"),
                     ("bernoulli_.float", "BernoulliBackward2")):
    derivative(_name, name=_node, self="zeros_like(grad)")
derivative("random_.from", name=lambda args: "RandomBackward2" if args[1] is None and args[2] is None else
           "RandomBackward1" if args[1] is None else "RandomBackward0", self="zeros_like(grad)")
derivative("bernoulli_.Tensor", name="BernoulliBackward1", self="zeros_like(grad)", p="zeros_like(p_meta)")
derivative("normal.Tensor_float", name="NormalBackward1", mean="zeros_like(grad)")
derivative("normal.float_Tensor", name="NormalBackward2", std="zeros_like(grad)")
derivative("normal.Tensor_Tensor", name="NormalBackward3", mean="zeros_like(grad)", std="zeros_like(grad)")
