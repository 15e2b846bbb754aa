"""ReduceOp: how a collective combines the ranks' tensors, and the NumPy kernel of each reduction.

MPI reduces the dtypes it knows (float32, int64, complex128, ...) with its own operations; for the others
(bfloat16, float16, bool) lantern gives MPI a user-defined operation that runs the NumPy kernel below on each pair
of buffers. AVG is a SUM divided by the group's size afterwards; PREMUL_SUM (NCCL's, made by
`_make_nccl_premul_sum(factor)`) scales each rank's input by the factor before a SUM.

>>> from lantern.distributed import ReduceOp
>>> ReduceOp.SUM, ReduceOp.MAX.name
(<RedOpType.SUM: 0>, 'MAX')
>>> import numpy as np
>>> combine(ReduceOp.BXOR, np.array([6, 3]), np.array([5, 5]))
array([3, 6])
"""
import enum

import numpy as np


class RedOpType(enum.Enum):
    """The reductions (torch.distributed.ReduceOp.RedOpType); ReduceOp.SUM and friends are its members."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __str__(self):
        return f"RedOpType.{self.name}"


class ReduceOp:
    """torch.distributed.ReduceOp: a namespace of RedOpType members (ReduceOp.SUM is RedOpType.SUM)."""
    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


class PremulSum:
    """A PREMUL_SUM with its factor: the sum of factor * tensor over the ranks."""

    def __init__(self, factor):
        self.factor = factor
        self.kind = RedOpType.PREMUL_SUM

    def __repr__(self):
        return f"PremulSum(factor={self.factor})"


def _make_nccl_premul_sum(factor):
    """ReduceOp.PREMUL_SUM with a factor (torch.distributed._make_nccl_premul_sum)."""
    return PremulSum(factor)


def kind_of(op):
    """The RedOpType of a reduction argument; torch's TypeError gist for anything else."""
    if isinstance(op, PremulSum):
        return RedOpType.PREMUL_SUM
    if isinstance(op, RedOpType):
        return op
    raise TypeError(f"(): incompatible function arguments: op must be a torch.distributed.ReduceOp, got {op!r}")


_BOOL_KERNELS = {RedOpType.SUM: np.logical_or, RedOpType.PRODUCT: np.logical_and, RedOpType.MIN: np.logical_and,
                 RedOpType.MAX: np.logical_or, RedOpType.BAND: np.logical_and, RedOpType.BOR: np.logical_or,
                 RedOpType.BXOR: np.logical_xor}
_KERNELS = {RedOpType.SUM: np.add, RedOpType.AVG: np.add, RedOpType.PREMUL_SUM: np.add,
            RedOpType.PRODUCT: np.multiply, RedOpType.MIN: np.minimum, RedOpType.MAX: np.maximum,
            RedOpType.BAND: np.bitwise_and, RedOpType.BOR: np.bitwise_or, RedOpType.BXOR: np.bitwise_xor}


def combine(kind, accumulated, incoming):
    """Fold `incoming` into `accumulated` in place (bool sums are ORs, bool products ANDs, as gloo's)."""
    kernels = _BOOL_KERNELS if accumulated.dtype == np.bool_ else _KERNELS
    return kernels[kind](accumulated, incoming, out=accumulated)


def check_supported(kind, dtype, backend, collective="all_reduce"):
    """Raise torch's error for a reduction the dtype or backend does not allow."""
    if dtype.is_complex and kind not in (RedOpType.SUM, RedOpType.AVG, RedOpType.PREMUL_SUM):
        raise ValueError(f"{collective} does not support {kind} on complex tensors")
    if kind in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"Cannot use ReduceOp.{kind.name} with non-integral dtype")
    if kind is RedOpType.AVG and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"result type Float can't be cast to the desired output type {dtype.legacy}")
    if kind is RedOpType.PREMUL_SUM and backend == "gloo":
        raise RuntimeError("Cannot use ReduceOp.PREMUL_SUM with Gloo")
