"""The seam to MPI (mpi4py): imported on first use, so `import lantern` never loads MPI or needs a launcher.

A tensor's memory goes to MPI as a NumPy array with an MPI datatype. Data that is only moved (broadcast,
gather, send) travels as bytes; data that is reduced travels as elements of the dtype: MPI's own datatype where MPI
has one, otherwise a block of `itemsize` bytes reduced by a user-defined operation that runs lantern's NumPy kernel
(bfloat16, float16, bool).

>>> import numpy as np
>>> from lantern.distributed import mpi
>>> mpi.MPI().Get_version() >= (3, 0)
True
>>> mpi.as_bytes(np.arange(3, dtype=np.int16)).nbytes
6
"""
import functools

import numpy as np

from .reduce_op import RedOpType, combine


@functools.cache
def MPI():
    """The mpi4py.MPI module, which initializes MPI (with thread support) when first imported."""
    from mpi4py import MPI as module
    return module


def as_bytes(array):
    """A contiguous array's memory as a flat uint8 array (the same memory, no copy)."""
    return array.reshape(-1).view(np.uint8)


_NATIVE_TYPES = {"float32": "FLOAT", "float64": "DOUBLE", "int8": "INT8_T", "int16": "INT16_T", "int32": "INT32_T",
                 "int64": "INT64_T", "uint8": "UINT8_T", "uint16": "UINT16_T", "uint32": "UINT32_T",
                 "uint64": "UINT64_T", "complex64": "C_FLOAT_COMPLEX", "complex128": "C_DOUBLE_COMPLEX"}
_NATIVE_OPS = {RedOpType.SUM: "SUM", RedOpType.AVG: "SUM", RedOpType.PREMUL_SUM: "SUM", RedOpType.PRODUCT: "PROD",
               RedOpType.MIN: "MIN", RedOpType.MAX: "MAX", RedOpType.BAND: "BAND", RedOpType.BOR: "BOR",
               RedOpType.BXOR: "BXOR"}


@functools.cache
def reduction(np_dtype, kind):
    """(MPI datatype, MPI operation) that reduce elements of `np_dtype` with the reduction `kind`."""
    native = _NATIVE_TYPES.get(np.dtype(np_dtype).name)
    if native is not None:
        return getattr(MPI(), native), getattr(MPI(), _NATIVE_OPS[kind])
    return _element_type(np.dtype(np_dtype).itemsize), _numpy_operation(np.dtype(np_dtype), kind)


@functools.cache
def _element_type(itemsize):
    """An MPI datatype of `itemsize` contiguous bytes, so MPI never splits an element between two reductions."""
    datatype = MPI().BYTE.Create_contiguous(itemsize)
    datatype.Commit()
    return datatype


@functools.cache
def _numpy_operation(np_dtype, kind):
    """A user-defined MPI operation that folds one buffer of `np_dtype` elements into another with NumPy."""
    def fold(incoming, accumulated, datatype):
        combine(kind, np.frombuffer(accumulated, np_dtype), np.frombuffer(incoming, np_dtype))
    return MPI().Op.Create(fold, commute=True)
