"""torch's in-place functions (`torch.abs_(x)`, `torch.clamp_(x, 0)`), its NumPy-style aliases (`torch.arccos`,
`torch.fix`) and the functions that are one Tensor method (`torch.detach`, `torch.is_signed`, `torch.get_device`).

Each in-place function is its Tensor method called on the first argument: `torch.abs_(x)` is `x.abs_()`, so it
writes into x, bumps x's version counter and records the same autograd node. ATen gives only some in-place ops a
function form (`torch.add_` does not exist); IN_PLACE_FUNCTIONS names those.

>>> import lantern as torch
>>> x = torch.tensor([-1.5, 2.0])
>>> torch.abs_(x) is x, x.tolist(), x._version
(True, [1.5, 2.0], 1)
>>> torch.arccos(torch.tensor([1.0])).tolist(), torch.fix(torch.tensor([-2.7])).tolist()
([0.0], [-2.0])
"""
from ._functions import _method_frontend
from ._functions import (  # noqa: F401  (torch's NumPy-style names: the same functions)
    acos as arccos, acosh as arccosh, asin as arcsin, asinh as arcsinh, atan as arctan, atanh as arctanh,
    trunc as fix,
)
from .backends import cudnn as _cudnn
from .core.tensor_impl import TensorImpl

# The in-place ops that native_functions.yaml declares with a function variant, beside their Tensor method.
IN_PLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_",
    "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_",
    "gcd_", "i0_", "lcm_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_",
    "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_",
    "tanh_", "trunc_", "xlogy_",
)

# Functions that are nothing but a Tensor method of their first argument.
METHOD_FUNCTIONS = ("detach", "adjoint", "is_signed", "is_inference", "is_same_size", "get_device", "is_distributed")

globals().update({_name: _method_frontend(_name) for _name in IN_PLACE_FUNCTIONS + METHOD_FUNCTIONS})


def cudnn_is_acceptable(input):
    """Whether cuDNN could run on this tensor: lantern has no cuDNN, so never (torch says False for CPU tensors)."""
    if not isinstance(input, TensorImpl):
        raise TypeError(f"cudnn_is_acceptable(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return _cudnn.is_acceptable(input)


__all__ = [*IN_PLACE_FUNCTIONS, *METHOD_FUNCTIONS, "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh",
           "fix", "cudnn_is_acceptable"]
