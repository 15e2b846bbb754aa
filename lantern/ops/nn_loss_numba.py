"""numba kernels for cross-entropy of class indices on float arrays, the elementwise parts of its forward and its
backward, each a pass over the rows where the NumPy versions (nn_loss_classification._cross_entropy_rows and
_cross_entropy_index_backward_impl) check the targets' range, gather the targets' logits or subtract at them with
fancy indexing and scale the rows, a NumPy call each; on short rows the forward's row maxima too. Its exp, row sums
and log stay NumPy's (its SIMD exp and log, and its sums' order, are what give the NumPy version's bits).

A row whose target is ignore_index reads class 0 and is scaled by zero, as the NumPy versions do (so a nan or inf
in it still makes the result nan, bit for bit theirs).

Imported only when those specialisations first run (numba takes ~0.5 s to import); kernels are cached on disk. No
fastmath: each product, quotient and difference rounds as NumPy's do, so the results are the NumPy versions' bits.

>>> import numpy as np
>>> probs, out = np.array([[0.25, 0.75], [0.5, 0.5]], np.float32), np.empty((2, 2), np.float32)
>>> target = np.array([1, -100])
>>> kept_rows(target, 2, -100), cross_entropy_backward(probs, target, -100, np.float32(0.5), np.float32(0), out)
(1, None)
>>> out.tolist()
[[0.125, -0.125], [0.0, 0.0]]
"""
import numba

_JIT = {"error_model": "numpy", "cache": True, "nogil": True}


@numba.njit(**_JIT)
def kept_rows(target, classes, ignore_index):
    """How many targets name a class (the others are ignore_index); -1 as soon as one is out of range (the NumPy
    version raises for it)."""
    kept = 0
    for t in target:
        if t != ignore_index:
            if not 0 <= t < classes:
                return -1
            kept += 1
    return kept


@numba.njit(inline="always", **_JIT)
def _read_class(t, ignore_index):
    """The class a row reads: its target, or 0 where the target is ignore_index (that row then scaled by zero)."""
    return 0 if t == ignore_index else t


@numba.njit(**_JIT)
def cross_entropy_backward(probs, target, ignore_index, scale, ignored_scale, out):
    """out (rows, classes) = probs · s, less s at each row's class, s being scale for a kept row and ignored_scale
    (zero times the gradient) for an ignored one; targets already checked by kept_rows."""
    for i in range(probs.shape[0]):
        t = target[i]
        s = ignored_scale if t == ignore_index else scale
        for j in range(probs.shape[1]):
            out[i, j] = probs[i, j] * s
        c = _read_class(t, ignore_index)
        out[i, c] = out[i, c] - s


@numba.njit(inline="always", **_JIT)
def _row_max(x, i):
    """The largest of row i, or its first nan, as np.maximum.reduce gives it (max is exact): up to the sign of a zero,
    which neither the loss nor softmax shows, and of a nan in a row holding nans of both signs (NumPy's pick then
    depends on its SIMD layout)."""
    top = x[i, 0]
    for j in range(1, x.shape[1]):
        v = x[i, j]
        if v != v:
            return v
        if v > top:
            top = v
    return top


@numba.njit(**_JIT)
def shift_rows(x, top, find_top, shifted):
    """shifted (rows, classes) = x less each row's top; with find_top, top is found here first (a scalar loop that
    beats NumPy's maximum.reduce on short rows, not on long ones)."""
    for i in range(x.shape[0]):
        if find_top:
            top[i] = _row_max(x, i)
        for j in range(x.shape[1]):
            shifted[i, j] = x[i, j] - top[i]


@numba.njit(**_JIT)
def finish_rows(x, target, ignore_index, top, log_sums, sums, exps, losses):
    """losses = log_sums + top - each row's target logit (times zero where ignored); exps (rows, classes) scaled by
    1 / its row's sum, into softmax. Targets already checked by kept_rows."""
    zero = losses.dtype.type(0)
    for i in range(x.shape[0]):
        t = target[i]
        loss = log_sums[i] + top[i] - x[i, _read_class(t, ignore_index)]
        losses[i] = loss * zero if t == ignore_index else loss
        inverse = exps.dtype.type(1) / sums[i]  # in the dtype, as NumPy divides (a plain 1 / would be float64)
        for j in range(exps.shape[1]):
            exps[i, j] = exps[i, j] * inverse
