"""lantern: PyTorch's internals, rebuilt in readable Python over NumPy.

    import lantern as torch
    x = torch.arange(48).view(6, 8)[1:5:2, 1:4]
    x.stride(), x.storage_offset()          # ((16, 1), 9)

The layers (see README.md): core (dtype, device, storage, allocator, dispatch keys) -> ops (one record per
operator) -> backends (CPU/NumPy, Meta, CUDA) -> autograd -> Tensor -> nn/optim/data -> jit.
"""
import numpy as _np

# PyTorch is silent on float overflow and division by zero (it just produces inf/nan); so is lantern.
_np.seterr(all="ignore")

from .core.dtype import (  # noqa: E402,F401
    bfloat16, bool, complex32, complex64, complex128, dtype, finfo, float16, float32, float64, get_default_dtype, iinfo,
    int8, int16, int32, int64, set_default_dtype, uint8, uint16, uint32, uint64,
)
from .core.quantized_dtypes import (  # noqa: E402,F401
    per_channel_affine, per_channel_affine_float_qparams, per_channel_symmetric, per_tensor_affine,
    per_tensor_symmetric, qint8, qint32, qscheme, quint2x4, quint4x2, quint8,
)
from .core.device import device, get_default_device, set_default_device  # noqa: E402,F401
from .core.layout import (  # noqa: E402,F401
    channels_last, channels_last_3d, contiguous_format, layout, memory_format, preserve_format, strided,
    sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr,
)
from .core.promotion import can_cast, promote_types  # noqa: E402,F401
from .core.size import Size  # noqa: E402,F401
from .core.storage import UntypedStorage  # noqa: E402,F401
from .core.reference import is_reference_mode, reference_mode, set_reference_mode  # noqa: E402,F401

from .ops import special_functions as _special_functions, special_polynomials as _special_polynomials  # noqa: E402,F401
from .ops import (  # noqa: E402,F401  (importing an ops module registers its ops)
    pointwise_unary as _pointwise_unary, pointwise_arithmetic as _pointwise_arithmetic,
    pointwise_binary as _pointwise_binary, pointwise_ternary as _pointwise_ternary, reduction as _reduction,
    reduction_var as _reduction_var, reduction_sums as _reduction_sums,
    reduction_order_statistics as _reduction_order_statistics, reduction_counting as _reduction_counting,
    views as _views, linalg_products as _linalg_products,
    linalg_solvers as _linalg_solvers, linalg_norms as _linalg_norms, linalg_decompositions as _linalg_decompositions,
    linalg as _linalg_ops, shape as _shape,
    factory as _factory, indexing as _indexing, indexing_gather_scatter as _indexing_gather_scatter,
    indexing_slices as _indexing_slices, indexing_masks as _indexing_masks, random as _random_ops,
    random_discrete as _random_discrete,
    view_scatter as _view_scatter,
    tensor_shape as _tensor_shape, tensor_shape_diagonals as _tensor_shape_diagonals,
    tensor_shape_products as _tensor_shape_products, sorting as _sorting, scan as _scan, nn_conv as _nn_conv,
    nn_padding as _nn_padding,
    nn_pooling as _nn_pooling, nn_fold as _nn_fold, nn_sampling as _nn_sampling,
    nn_activation as _nn_activation, nn_activation_softmax as _nn_activation_softmax, nn_norm as _nn_norm,
    nn_misc as _nn_misc, nn_loss as _nn_loss,
    nn_loss_classification as _nn_loss_classification, nn_loss_margin as _nn_loss_margin,
    nn_extra as _nn_extra, nn_attention as _nn_attention, sparse_coo as _sparse_coo, sparse_math as _sparse_math,
    sparse_csr as _sparse_csr, sparse_csr_products as _sparse_csr_products, hash_tensor as _hash_tensor,
    random_distributions as _random_distributions, fft as _fft_ops,
    spectral_windows as _spectral_windows, stft as _stft,
)
from .backends import cpu as _cpu_backend, meta as _meta_backend  # noqa: E402,F401
from . import backends, cuda, xpu, mps, accelerator  # noqa: E402,F401  (a CPU build's accelerator surface)
from .backends.precision import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: E402,F401
from .backends.cpu_threads import (  # noqa: E402,F401
    get_num_interop_threads, get_num_threads, init_num_threads, set_flush_denormal, set_num_interop_threads,
    set_num_threads,
)

from . import autograd  # noqa: E402,F401
from .autograd import (  # noqa: E402,F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from .autograd.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402,F401
from .ops import (  # noqa: E402,F401  (more ops: registered before Tensor's methods are bound)
    complex_numbers as _complex_numbers, math_functions as _math_functions, differences as _differences,
    index_functions as _index_functions, split_views as _split_views, split_copies as _split_copies,
    nn_shuffle_pool as _nn_shuffle_pool,
    out_variants as _out_variants, out_overlap as _out_overlap,
)

from .ops import (  # noqa: E402,F401
    quantized as _quantized, quantized_fake as _quantized_fake, quantized_kernels as _quantized_kernels,
    quantized_nn as _quantized_nn,
)
from .ops import forward_formulas as _forward_formulas  # noqa: E402,F401  (every op's forward derivative)

from ._tensor import Tensor  # noqa: E402
from ._construct import as_tensor, asarray, from_numpy, tensor  # noqa: E402,F401
from ._functions import *  # noqa: E402,F401,F403
from ._inplace_functions import *  # noqa: E402,F401,F403
from ._functions import _conj, _neg_view  # noqa: E402,F401  (torch's private conjugate and negative views)
from ._from_memory import frombuffer, from_file, range  # noqa: E402,F401
from ._sym_functions import *  # noqa: E402,F401,F403
from ._toplevel import *  # noqa: E402,F401,F403
from .core.determinism import (  # noqa: E402,F401
    are_deterministic_algorithms_enabled, get_deterministic_debug_mode, is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode, use_deterministic_algorithms,
)
from .core.warn_always import is_warn_always_enabled, set_warn_always  # noqa: E402,F401
from ._tensor_str import get_printoptions, set_printoptions  # noqa: E402,F401
from . import debug, random, linalg, nn, optim, utils, serialization, vision, jit, onnx, inspect, profiler  # noqa: E402,F401,E501
from .utils.backend_registration import _register_device_module  # noqa: E402,F401  (a device from outside)
from .nn.modules.rnn import gru, lstm, rnn_relu, rnn_tanh  # noqa: E402,F401  (what nn.LSTM & co.'s TorchScript calls)
from . import futures  # noqa: E402,F401
from . import _C, overrides  # noqa: E402,F401  (the __torch_function__ protocol: lantern.core.torch_function)
from .jit.language import Future, fork, wait  # noqa: E402,F401  (torch.Future, torch.fork, torch.wait: jit's)
from .testing import FileCheck  # noqa: E402,F401
from ._nn_functions import *  # noqa: E402,F401,F403
from ._jit_names import *  # noqa: E402,F401,F403
from ._sparse_products import *  # noqa: E402,F401,F403
from .storage import LEGACY_STORAGE_CLASSES as _LEGACY_STORAGE_CLASSES, TypedStorage  # noqa: E402,F401
globals().update({_cls.__name__: _cls for _cls in _LEGACY_STORAGE_CLASSES})  # lantern.FloatStorage, LongStorage, ...
from ._streams import Event, Stream  # noqa: E402,F401
from .core.dispatch_keys import DispatchKey  # noqa: E402,F401  (lantern's dispatch keys, by torch's names)
from . import distributed, distributions, func, functional, return_types, special, testing  # noqa: E402,F401
from .func import vmap  # noqa: E402,F401  (torch.vmap is torch.func.vmap)
from . import fft, signal, library  # noqa: E402,F401
from . import hub, quasirandom, types  # noqa: E402,F401
from .utils.dlpack import from_dlpack, to_dlpack  # noqa: E402,F401  (torch.from_dlpack is torch.utils.dlpack's)
from . import amp, cpu  # noqa: E402,F401
from . import multiprocessing  # noqa: E402,F401  (torch.multiprocessing: spawn starts ranks as one MPI job)
from . import _dynamo, compiler  # noqa: E402,F401  (torch.compile over lantern's JIT)
from ._dynamo.eval_frame import compile  # noqa: E402,F401
from .amp import GradScaler, autocast  # noqa: E402,F401
from .amp.grad_scaler import _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_  # noqa: E402,F401
from .amp.state import *  # noqa: E402,F401,F403
from .serialization import *  # noqa: E402,F401,F403
from ._legacy_types import CPU_TYPES as _CPU_TYPES, set_default_tensor_type  # noqa: E402,F401
globals().update(_CPU_TYPES)  # lantern.FloatTensor, LongTensor, ... (legacy typed constructors)
OutOfMemoryError = cuda.OutOfMemoryError
from .random import *  # noqa: E402,F401,F403
from . import sparse  # noqa: E402,F401
from .ops.sparse_coo import sparse_coo_tensor  # noqa: E402,F401
from .ops.sparse_math import spmm  # noqa: E402,F401
from .ops.sparse_csr import sparse_csr_tensor  # noqa: E402,F401
from .ops.quantized import (  # noqa: E402,F401  (frontends over the overloads, and torch's private makers)
    _make_per_channel_quantized_tensor, _make_per_tensor_quantized_tensor, dequantize, quantize_per_tensor,
)
from .ops.random_distributions import _sample_dirichlet, _standard_gamma, _standard_gamma_grad  # noqa: E402,F401,E501
from . import masked  # noqa: E402,F401  (last: it gives every registered op a MaskedTensor kernel)

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
chalf, cfloat, cdouble = complex32, complex64, complex128

from . import version  # noqa: E402
from . import __config__  # noqa: E402  (torch.__config__: show(), parallel_info())
from .torch_version import __version__  # noqa: E402,F401  (a TorchVersion, as torch.__version__)


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off for this thread (lantern.autograd.set_detect_anomaly, as a function)."""
    autograd.set_detect_anomaly(enabled, check_nan)


# `from lantern import *` (and a program's `from torch import *` under lantern.compat) binds the public functions,
# classes and dtypes, as torch's __all__ does, and not the submodules: a program's own `random` or `types` stays its
# own. `slice`, an op torch keeps in torch.ops.aten only, would hide the builtin.
__all__ = [_name for _name, _value in list(globals().items())
           if not _name.startswith("_") and not isinstance(_value, type(version)) and _name != "slice"]
