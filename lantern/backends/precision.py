"""The float32 matmul precision setting (torch.set_float32_matmul_precision) and the TF32 switch tied to it.

'highest' asks for full float32 matmuls; 'high' and 'medium' allow TF32 or bfloat16 inner products on hardware that
has them, and `torch.backends.cuda.matmul.allow_tf32` reads and writes the same setting. lantern computes float32
matmuls in float32 with NumPy whatever the setting (as PyTorch's CPU kernels do); the setting is kept so that a
program reads back what it set.

>>> lantern.get_float32_matmul_precision()
'highest'
>>> lantern.set_float32_matmul_precision('high'); lantern.backends.cuda.matmul.allow_tf32
True
>>> lantern.set_float32_matmul_precision('highest')
"""
from ..core import user_warnings

PRECISIONS = ("highest", "high", "medium")
_PRECISION = ["highest"]
_EVER_SET = [False]  # matmul.fp32_precision reads 'none' until a program sets the precision, then 'ieee' or 'tf32'


def set_float32_matmul_precision(precision):
    """'highest', 'high' or 'medium'; anything else warns and changes nothing, as in PyTorch."""
    if precision not in PRECISIONS:
        user_warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _PRECISION[0] = precision
    _EVER_SET[0] = True


def get_float32_matmul_precision():
    return _PRECISION[0]


def fp32_precision():
    """The setting in the newer spelling (torch.backends.cuda.matmul.fp32_precision): 'tf32' when reduced
    precision is allowed, 'ieee' when full precision was asked for, 'none' when nothing was set."""
    if _PRECISION[0] != "highest":
        return "tf32"
    return "ieee" if _EVER_SET[0] else "none"
