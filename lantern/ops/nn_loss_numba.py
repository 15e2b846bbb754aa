"""numba kernels for cross-entropy of class indices on float arrays, the elementwise parts of its forward and its
backward, each a pass over the rows where the NumPy versions (nn_loss_classification._cross_entropy_rows and
_cross_entropy_index_backward_impl) check the targets' range, gather the targets' logits or subtract at them with
fancy indexing and scale the rows, a NumPy call each. The forward's row maxima, exp, row sums and log stay NumPy's
(its SIMD exp and log, and its sums' order, are what give the NumPy version's bits).

Imported only when those specialisations first run (numba takes ~0.5 s to import); kernels are cached on disk. No
fastmath: each product, quotient and difference rounds as NumPy's do, so the results are the NumPy versions' bits.

>>> import numpy as np
>>> probs, out = np.array([[0.25, 0.75], [0.5, 0.5]], np.float32), np.empty((2, 2), np.float32)
>>> cross_entropy_backward(probs, np.array([1, 0]), np.float32(0.5), -100, out), out.tolist()
(True, [[0.125, -0.125], [-0.25, 0.25]])
"""
import numba

_JIT = {"error_model": "numpy", "cache": True, "nogil": True}


@numba.njit(inline="always", **_JIT)
def _is_class(t, classes, ignore_index):
    """Whether target t names a class the loss counts (not ignore_index, in range)."""
    return 0 <= t < classes and t != ignore_index


@numba.njit(**_JIT)
def cross_entropy_backward(probs, target, scale, ignore_index, out):
    """out (rows, classes) = probs · scale, less scale at each row's target class; False, with out partly written,
    as soon as a target is ignore_index or out of range (the NumPy version handles those)."""
    classes = probs.shape[1]
    for i in range(probs.shape[0]):
        t = target[i]
        if not _is_class(t, classes, ignore_index):
            return False
        for j in range(classes):
            out[i, j] = probs[i, j] * scale
        out[i, t] = out[i, t] - scale
    return True


@numba.njit(**_JIT)
def shift_rows(x, target, ignore_index, top, shifted):
    """shifted (rows, classes) = x less each row's top; False as soon as a target is ignore_index or out of range
    (the NumPy version handles those)."""
    classes = x.shape[1]
    for i in range(x.shape[0]):
        if not _is_class(target[i], classes, ignore_index):
            return False
        for j in range(classes):
            shifted[i, j] = x[i, j] - top[i]
    return True


@numba.njit(**_JIT)
def finish_rows(x, target, top, log_sums, sums, exps, losses):
    """losses = log_sums + top - each row's target logit; exps (rows, classes) scaled by 1 / its row's sum, into
    softmax."""
    for i in range(x.shape[0]):
        losses[i] = log_sums[i] + top[i] - x[i, target[i]]
        inverse = exps.dtype.type(1) / sums[i]  # in the dtype, as NumPy divides (a plain 1 / would be float64)
        for j in range(exps.shape[1]):
            exps[i, j] = exps[i, j] * inverse
