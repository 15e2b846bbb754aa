"""torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True): torch.amp.autocast('cpu', ...), with
PyTorch's FutureWarning."""

from ...amp import autocast_mode as _autocast_mode
from ...core import dtype as _dtypes
from ...core import user_warnings

__all__ = ["autocast"]


class autocast(_autocast_mode.autocast):
    def __init__(self, enabled=True, dtype=_dtypes.bfloat16, cache_enabled=True):
        user_warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
