"""torch.backends.cuda as PyTorch's CPU build has it: the cuBLAS/cuFFT/attention switches a program sets before
training. lantern has no CUDA, so they select nothing; they keep what a program sets and read back as in torch.

>>> import lantern.backends.cuda as cuda_backend
>>> cuda_backend.matmul.allow_tf32 = True       # nanoGPT's first line of set-up
>>> cuda_backend.matmul.allow_tf32, cuda_backend.is_built(), cuda_backend.flash_sdp_enabled()
(True, False, True)
>>> cuda_backend.matmul.allow_tf32 = False
"""
import contextlib
import enum

from ..core.absent_device import unbound
from ..core.device import not_compiled_error
from . import precision as _precision
from ..core import user_warnings

__all__ = ["is_built", "cuFFTPlanCacheAttrContextProp", "cuFFTPlanCache", "cuFFTPlanCacheManager", "cuBLASModule",
           "preferred_linalg_library", "preferred_blas_library", "cublas_workspace_size", "cublaslt_workspace_size",
           "blas_workspace_size", "preferred_rocm_fa_library", "is_ck_sdpa_available", "cufft_plan_cache", "matmul",
           "SDPAParams", "enable_cudnn_sdp", "cudnn_sdp_enabled", "enable_flash_sdp", "flash_sdp_enabled",
           "enable_mem_efficient_sdp", "mem_efficient_sdp_enabled", "math_sdp_enabled", "enable_math_sdp",
           "allow_fp16_bf16_reduction_math_sdp", "fp16_bf16_reduction_math_sdp_allowed",
           "is_flash_attention_available", "can_use_flash_attention", "can_use_efficient_attention",
           "can_use_cudnn_attention", "sdp_kernel"]


def is_built():
    """Whether this build has CUDA: no."""
    return False


class cuBLASModule:
    """`torch.backends.cuda.matmul`: cuBLAS switches. allow_tf32 is the float32 matmul precision seen as a flag."""

    _reductions = {"allow_fp16_reduced_precision_reduction": True, "allow_bf16_reduced_precision_reduction": True,
                   "allow_fp16_accumulation": False}

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _precision.get_float32_matmul_precision() != "highest"
        if name == "fp32_precision":  # the newer spelling of the same setting
            return _precision.fp32_precision()
        if name in self._reductions:
            return self._reductions[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _precision.set_float32_matmul_precision("high" if value else "highest")
        elif name == "fp32_precision":
            _precision.set_float32_matmul_precision("high" if value == "tf32" else "highest")
        elif name in self._reductions:
            self._reductions[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


class cuFFTPlanCache:
    """The cuFFT plan cache of one CUDA device; every property needs CUDA."""

    def __init__(self, device_index):
        self.device_index = device_index

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise not_compiled_error("CUDA")

    def clear(self):
        raise not_compiled_error("CUDA")


class cuFFTPlanCacheAttrContextProp:
    """A property of the cuFFT plan cache (size, max_size) read through CUDA."""

    def __init__(self, getter, setter):
        self.getter, self.setter = getter, setter

    def __get__(self, obj, objtype):
        return self.getter(obj.device_index)

    def __set__(self, obj, val):
        self.setter(obj.device_index, val)


class cuFFTPlanCacheManager:
    """`torch.backends.cuda.cufft_plan_cache`: one cache per CUDA device (of which there are none)."""

    def __getitem__(self, device):
        index = device if isinstance(device, int) else getattr(device, "index", 0) or 0
        raise RuntimeError(f"cufft_plan_cache: expected 0 <= device index < 0, but got device with index {index}")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise not_compiled_error("CUDA")

    def clear(self):
        raise not_compiled_error("CUDA")


matmul = cuBLASModule()
cufft_plan_cache = cuFFTPlanCacheManager()


# ---- preferred libraries: choices PyTorch names; only the ones a CPU build "has" can be selected -----------------

class _LinalgBackend(enum.IntEnum):
    Default = 0
    Cusolver = 1
    Magma = 2


class _BlasBackend(enum.IntEnum):
    Default = 0
    Cublas = 1
    Cublaslt = 2
    Ck = 3


class _ROCmFABackend(enum.IntEnum):
    Default = 0
    AOTriton = 1
    Ck = 2


_LIBRARIES = {"linalg": [_LinalgBackend.Default], "blas": [_BlasBackend.Cublas], "rocm_fa": [_ROCmFABackend.Default]}


def _preferred(kind, enum_type, names, missing, backend):
    if backend is not None:
        if isinstance(backend, str):
            if backend not in names:
                raise RuntimeError(f"Unknown input value. Choose from: {', '.join(names)}.")
            backend = enum_type(names.index(backend))
        if backend in missing:
            raise RuntimeError(f"Cannot set preferred backend to {missing[backend]} if PyTorch has not been compiled "
                               f"with {missing[backend]}.")
        _LIBRARIES[kind][0] = backend
    return _LIBRARIES[kind][0]


def preferred_linalg_library(backend=None):
    """The library CUDA linear algebra would use; without CUDA only 'default' can be chosen."""
    return _preferred("linalg", _LinalgBackend, ["default", "cusolver", "magma"],
                      {_LinalgBackend.Cusolver: "cuSOLVER", _LinalgBackend.Magma: "MAGMA"}, backend)


def preferred_blas_library(backend=None):
    """The library CUDA matmuls would use (cuBLAS unless changed)."""
    return _preferred("blas", _BlasBackend, ["default", "cublas", "cublaslt", "ck"],
                      {_BlasBackend.Cublaslt: "cuBLASLt", _BlasBackend.Ck: "CK"}, backend)


def preferred_rocm_fa_library(backend=None):
    """The ROCm flash-attention library (a setting only, on a CPU build)."""
    return _preferred("rocm_fa", _ROCmFABackend, ["default", "aotriton", "ck"], {}, backend)


cublas_workspace_size = unbound("CUDA", "cublas_workspace_size", "_cuda_getCublasWorkspaceSize",
                                "Report the cuBLAS workspace size.", __name__)
cublaslt_workspace_size = unbound("CUDA", "cublaslt_workspace_size", "_cuda_getCublasLtWorkspaceSize",
                                  "Report the cuBLASLt workspace size.", __name__)
blas_workspace_size = unbound("CUDA", "blas_workspace_size", "_cuda_getCublasWorkspaceSize",
                              "Report the BLAS workspace size.", __name__)


def is_ck_sdpa_available():
    """Whether ROCm's Composable Kernel attention is built in: no."""
    return False


# ---- scaled_dot_product_attention's kernel switches: kept and read back; lantern always runs the math kernel ------

class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_SDP_ENABLED = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
                "fp16_bf16_reduction_math": False}


def enable_flash_sdp(enabled):
    _SDP_ENABLED["flash"] = bool(enabled)


def flash_sdp_enabled():
    return _SDP_ENABLED["flash"]


def enable_mem_efficient_sdp(enabled):
    _SDP_ENABLED["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled():
    return _SDP_ENABLED["mem_efficient"]


def enable_math_sdp(enabled):
    _SDP_ENABLED["math"] = bool(enabled)


def math_sdp_enabled():
    return _SDP_ENABLED["math"]


def enable_cudnn_sdp(enabled):
    _SDP_ENABLED["cudnn"] = bool(enabled)


def cudnn_sdp_enabled():
    return _SDP_ENABLED["cudnn"]


def allow_fp16_bf16_reduction_math_sdp(enabled):
    _SDP_ENABLED["fp16_bf16_reduction_math"] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed():
    return _SDP_ENABLED["fp16_bf16_reduction_math"]


def is_flash_attention_available():
    """Whether the flash-attention kernel is built in: no."""
    return False


class SDPAParams:
    """The arguments of one scaled_dot_product_attention call, as the can_use_* checks take them."""

    def __init__(self, query, key, value, attn_mask, dropout, is_causal, enable_gqa):
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout, self.is_causal, self.enable_gqa = dropout, is_causal, enable_gqa


def _can_use(kind):
    def check(params, debug=False):
        if not isinstance(params, SDPAParams):
            raise TypeError(f"_can_use_{kind}(): incompatible function arguments (expected SDPAParams, got "
                            f"{type(params).__name__})")
        if debug:
            user_warnings.warn(f"{kind.replace('_', ' ')} needs CUDA, which this build does not have.", stacklevel=2)
        return False
    check.__name__ = f"can_use_{kind}"
    check.__doc__ = f"Whether the {kind.replace('_', ' ')} kernel could run this call: never without CUDA."
    return check


can_use_flash_attention = _can_use("flash_attention")
can_use_efficient_attention = _can_use("efficient_attention")
can_use_cudnn_attention = _can_use("cudnn_attention")


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """Deprecated context selecting the attention kernels for its block (torch.nn.attention.sdpa_kernel now)."""
    user_warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated "
                  "signature.", FutureWarning, stacklevel=3)
    before = dict(_SDP_ENABLED)
    _SDP_ENABLED.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                        cudnn=enable_cudnn)
    try:
        yield {}
    finally:
        _SDP_ENABLED.update(before)
