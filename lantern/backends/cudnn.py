"""torch.backends.cudnn's switches, so that PyTorch programs which set them run unchanged.

lantern has no cuDNN: the flags are kept (a program may read back what it set) and change nothing.

>>> import lantern.backends.cudnn as cudnn
>>> cudnn.benchmark = True
>>> cudnn.is_available(), cudnn.version(), cudnn.benchmark
(False, None, True)
>>> cudnn.benchmark = False
"""
from ..core import dtype as _dt
from .flags import flags_context as _flags_context, set_module_flags as _set_module_flags

enabled = True
benchmark = False
benchmark_limit = None
deterministic = False
allow_tf32 = True
fp32_precision = "none"
depthwise_kernel = "auto"
_FLAGS = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32", "fp32_precision",
          "depthwise_kernel")

CUDNN_TENSOR_DTYPES = {_dt.float16, _dt.float32, _dt.float64}


def is_available():
    """False: lantern's CUDA backend (CuPy) does not use cuDNN."""
    return False


def version():
    """cuDNN's version: None, there is none."""
    return None


def is_acceptable(tensor):
    """Whether cuDNN could take this tensor: never without CUDA."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none", _depthwise_kernel=None):
    """Set the flags given (None keeps one); returns the old values as a tuple. benchmark_limit stays None: as in
    PyTorch, it is only set where cuDNN is available."""
    return _set_module_flags(globals(), _FLAGS, (_enabled, _benchmark, None, _deterministic, _allow_tf32,
                                                 _fp32_precision, _depthwise_kernel))


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """A context with these flags set, restoring the old ones after."""
    return _flags_context(globals(), _FLAGS, (enabled, benchmark, None, deterministic, allow_tf32, fp32_precision,
                                              depthwise_kernel))
