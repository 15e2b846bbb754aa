"""torch.cpu.amp.GradScaler(...): torch.amp.GradScaler('cpu', ...), with PyTorch's FutureWarning."""

from ...amp import grad_scaler as _grad_scaler
from ...core import user_warnings

__all__ = ["GradScaler"]


class GradScaler(_grad_scaler.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        user_warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cpu', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
