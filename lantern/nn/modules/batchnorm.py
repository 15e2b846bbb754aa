"""BatchNorm1d/2d/3d (torch.nn.modules.batchnorm), and _NormBase, which InstanceNorm shares.

Each channel (dim 1) is normalised by the batch's mean and biased variance in training, or by running_mean and
running_var in evaluation. Training also updates the running statistics in place (inside F.batch_norm) with
factor `momentum`, or, when momentum is None, with 1 / num_batches_tracked (a cumulative moving average).
With track_running_stats=False there are no buffers and the batch statistics are used in both modes.

>>> import lantern
>>> bn = lantern.nn.BatchNorm1d(3, momentum=None)
>>> bn
BatchNorm1d(3, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=True)
>>> _ = bn(lantern.tensor([[0., 1., 2.], [2., 3., 6.]]))
>>> bn.running_mean.tolist(), bn.running_var.tolist(), bn.num_batches_tracked.item()
([1.0, 2.0, 4.0], [2.0, 2.0, 8.0], 1)
"""
from ... import _functions as _fns
from ... import distributed, int64, no_grad
from ...utils.backend_registration import _get_privateuse1_backend_name
from .. import functional as F
from ..parameter import UninitializedBuffer, UninitializedParameter
from ._layer_params import affine_params, ones_zeros_
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d"]


class _NormBase(Module):
    """num_features, eps, momentum; weight/bias when affine; running stats and num_batches_tracked when tracked."""

    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        affine_params(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", _fns.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", _fns.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", _fns.zeros((), dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        ones_zeros_(self)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # checkpoints older than version 2 have no num_batches_tracked: it loads as the current count, or 0
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            tracked = self.num_batches_tracked
            state_dict[key] = tracked if tracked is not None and not tracked.is_meta else _fns.zeros((), dtype=int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims_message = ""

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        # batch statistics in training, or in evaluation when there are no running ones to use
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        tracked = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if tracked else None, self.running_var if tracked else None,
                            self.weight, self.bias, use_batch_stats, factor, self.eps)

    def _check_input_dim(self, input):
        if input.dim() not in self._input_dims:
            raise ValueError(f"expected {self._dims_message} input (got {input.dim()}D input)")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) input."""
    _input_dims, _dims_message = (2, 3), "2D or 3D"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) input."""
    _input_dims, _dims_message = (4,), "4D"


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) input."""
    _input_dims, _dims_message = (5,), "5D"


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics are shared across processes while training under torch.distributed.

    Without an initialized process group, or in eval mode, it normalises as BatchNorm does, as torch's does. torch
    shares the statistics on accelerators only: training in a process group on the CPU is its ValueError (after
    counting the batch), and lantern's too; lantern does not share them on an accelerator either."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def forward(self, input):
        if not (self.training and distributed.is_initialized()):
            return super().forward(input)
        self._check_input_dim(input)
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
        accelerator = _get_privateuse1_backend_name()
        if input.device.type not in ("cuda", "hpu", "xpu", accelerator):
            raise ValueError(f"SyncBatchNorm expected input tensor to be on GPU or XPU or {accelerator}")
        raise NotImplementedError("SyncBatchNorm: lantern does not share batch statistics across processes")

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d replaced by a SyncBatchNorm sharing its parameters and buffers."""
        converted = module
        if isinstance(module, _BatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                converted.weight, converted.bias = module.weight, module.bias
            converted.running_mean, converted.running_var = module.running_mean, module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """num_features from the first input's dim 1; weight, bias and running statistics materialized to match."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        super().__init__(0, eps, momentum, False, False, device, dtype)  # placeholders replace what would be made
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _fns.zeros((), dtype=int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with no_grad():
            for name in (("weight", "bias") if self.affine else ()) + \
                    (("running_mean", "running_var") if self.track_running_stats else ()):
                getattr(self, name).materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A BatchNorm1d whose num_features comes from the first input."""
    cls_to_become = BatchNorm1d
    _input_dims, _dims_message = BatchNorm1d._input_dims, BatchNorm1d._dims_message


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A BatchNorm2d whose num_features comes from the first input."""
    cls_to_become = BatchNorm2d
    _input_dims, _dims_message = BatchNorm2d._input_dims, BatchNorm2d._dims_message


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A BatchNorm3d whose num_features comes from the first input."""
    cls_to_become = BatchNorm3d
    _input_dims, _dims_message = BatchNorm3d._input_dims, BatchNorm3d._dims_message
