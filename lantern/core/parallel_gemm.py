"""A large matrix product split into blocks that run at once on lantern's intra-op pool.

With more than one intra-op thread (and fast paths on), lantern holds BLAS to one thread for the whole process
(core/intra_op.py says why: OpenBLAS's idle threads spin for ~0.1 s after each threaded call and starve the pool).
A large GEMM then gets its cores from the pool instead: `matmul(a, b, out)` computes a @ b as one BLAS call per
block of rows of `a` (or of columns of `b` when `a` has few rows, or of the batch for a batched product), each
block writing its own part of `out`. Each element is the same dot product, summed by the same one-thread BLAS
kernel, so for float32 above WORK_PER_BLOCK the blocks give the bits of one call (the parity test holds them to
that; OpenBLAS's own threads do not). OpenBLAS's float64 kernels round the elements at a block's edge differently
(as they do at the edges of its own threads' blocks), so a float64 product can differ in the last bit.

>>> import numpy as np
>>> a, b = np.ones((4, 3), np.float32), np.ones((3, 2), np.float32)
>>> matmul(a, b).tolist()
[[3.0, 3.0], [3.0, 3.0], [3.0, 3.0], [3.0, 3.0]]
"""
import numpy as np

from . import intra_op
from .reference import mode, specialisation

# The least multiply-adds (m·n·k) worth a block of its own: about 100 µs of one core's GEMM, several times what
# handing a block to a worker costs.
WORK_PER_BLOCK = 1 << 22


def matmul(a, b, out=None):
    """a @ b for NumPy arrays (2-D, or 3-D with one batch size), split over the intra-op threads when large."""
    if _splits(a, b, out):
        return matmul_on_pool(a, b, out)
    return np.matmul(a, b, out=out)


def _splits(a, b, out):
    if intra_op.num_threads() == 1 or not mode.fast:    # read first: the first read holds BLAS to one thread
        return False
    if a.ndim != b.ndim or a.ndim not in (2, 3) or a.dtype.kind != "f" or b.dtype != a.dtype:
        return False
    if out is not None and out.dtype != a.dtype:
        return False
    if a.ndim == 3 and a.shape[0] != b.shape[0]:
        return False
    work = a.size * b.shape[-1]
    return work >= 2 * WORK_PER_BLOCK


@specialisation(replaces="parallel_gemm.matmul's one BLAS call np.matmul(a, b, out=out)",
                when="fast paths on, lantern.get_num_threads() > 1, real floating 2-D or equal-batch 3-D "
                     "operands (and out) of one dtype, m·n·k ≥ 2 × WORK_PER_BLOCK",
                parity_test="tests/test_intra_op_gemm.py::test_blocks_give_the_bits_of_one_call")
def matmul_on_pool(a, b, out=None):
    """a @ b as one BLAS call per block (batch entries, rows of a, or columns of b), the blocks on the pool."""
    if out is None:
        out = np.empty(a.shape[:-1] + b.shape[-1:], a.dtype)
    work = a.size * b.shape[-1]
    if a.ndim == 3 and a.shape[0] >= intra_op.num_threads():
        def block(start, stop):
            np.matmul(a[start:stop], b[start:stop], out=out[start:stop])
        count = a.shape[0]
    elif a.shape[-2] >= b.shape[-1]:
        def block(start, stop):
            np.matmul(a[..., start:stop, :], b, out=out[..., start:stop, :])
        count = a.shape[-2]
    else:
        def block(start, stop):
            np.matmul(a, b[..., start:stop], out=out[..., start:stop])
        count = b.shape[-1]
    intra_op.parallel_chunks(count, block, grain=-(-WORK_PER_BLOCK * count // work))
    return out
