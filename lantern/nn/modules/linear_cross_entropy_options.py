"""nn.LinearCrossEntropyOptions (torch.nn.modules.linear_cross_entropy_options): how linear_cross_entropy chunks
its batch. lantern reads batch_chunk_size (None: one chunk); the other fields are PyTorch's accumulation and
chunk-size policies, checked as PyTorch checks them and kept for the repr.

>>> lantern.nn.LinearCrossEntropyOptions(batch_chunk_size=4).batch_chunk_size
4
"""
import dataclasses

from ...core import dtype as dt

__all__ = ["LinearCrossEntropyOptions"]

_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")
_ACC_DTYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """Options of linear_cross_entropy's chunked path: batch_chunk_size rows at a time."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: dt.dtype | None = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r} (one of {', '.join(_ACC_POLICIES)})")
        if self.chunking_method not in (None, "auto") and not _is_aspect_ratio(self.chunking_method):
            raise ValueError(f"invalid chunking_method: {self.chunking_method!r} (None, 'auto' or "
                             "'aspect_ratio[:k]' with k a positive integer)")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in _ACC_DTYPES:
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, torch.float32, "
                             f"torch.float64}}, got {self.acc_dtype!r}")


def _is_aspect_ratio(method):
    name, colon, factor = method.partition(":")
    factor = factor if colon else "1"
    return name == "aspect_ratio" and factor.isdigit() and int(factor) > 0
