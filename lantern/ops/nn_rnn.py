"""Array kernels of the fused recurrences behind nn.RNN, nn.LSTM and nn.GRU: one direction of one layer over a
padded, time-major batch, forward and backpropagation through time.

The layer has already made the input projection of every step in one matmul (xw = x W_ih^T + biases, shape
(T, B, gates)); a kernel runs only the recurrence. Per step that is one h @ W_hh^T (against a contiguous copy of
W_hh^T) and a few in-place ufuncs on buffers allocated once, with no tensor objects made. The backward computes
every factor that does not depend on the recurrence for all steps at once, leaves only d h_{t-1} = d gates_t @ W_hh
(and a few ufuncs) in its loop, and gets the weight gradients as one matmul over all steps. Kernels are written
against `xp` (NumPy; CuPy has the same calls) and fill arrays their caller allocated; `empty(shape)` gives them their
scratch arrays (the layer passes one backed by lantern's caching allocator: fresh NumPy memory of this size would
page-fault on every call). For float32 NumPy arrays with numba installed, compiled specialisations at the end of
this file run each step's elementwise work as one numba kernel (nn_rnn_numba.py).
nn/modules/rnn.py's `_Recurrence` wraps them as one autograd node; double backward there reruns the step equations
as lantern ops.

The LSTM keeps its gate activations gate-major (see the LSTM section), for contiguous elementwise work.

>>> import numpy as np
>>> T, B, H = 2, 1, 1
>>> xw, w_hh, zero = np.ones((T, B, 4 * H)), np.zeros((4 * H, H)), np.zeros((B, H))
>>> acts, cells, tanh_cells = np.empty((T, 4, B, H)), np.empty((T, B, H)), np.empty((T, B, H))
>>> out = np.empty((T, B, H))
>>> lstm_forward(np, np.empty, xw, zero, zero, w_hh, None, [0, 1], acts, cells, tanh_cells, None, out)
>>> s, g = 1 / (1 + np.exp(-1)), np.tanh(1)       # every gate sees 1: i = f = o = sigmoid(1), g = tanh(1)
>>> c = s * (s * g) + s * g                       # c_1 = f c_0 + i g with c_0 = i g
>>> bool(np.isclose(cells[1, 0, 0], c)), bool(np.isclose(out[1, 0, 0], s * np.tanh(c)))
(True, True)
"""

import numpy as np

from ..core import parallel_gemm
from ..core.intra_op import one_blas_thread, parallel_items
from ..core.reference import mode, specialisation
from .numba_kernels import optional_kernels

__all__ = ["lstm_forward", "lstm_backward", "gru_forward", "gru_backward", "rnn_forward", "rnn_backward",
           "compiled_steps_apply", "lstm_forward_compiled", "lstm_backward_compiled", "gru_forward_compiled",
           "gru_backward_compiled", "row_blocks_apply", "lstm_forward_in_row_blocks",
           "lstm_backward_in_row_blocks", "gru_forward_in_row_blocks", "gru_backward_in_row_blocks"]


def _sigmoid_(xp, a):
    """a = 1 / (1 + exp(-a)) in place (overflow of exp gives inf and then the exact limit 0)."""
    xp.negative(a, out=a)
    xp.exp(a, out=a)
    a += 1
    xp.reciprocal(a, out=a)


def _transposed(empty, w):
    """A contiguous copy of w^T, the right operand of a step's matmul: OpenBLAS multiplies a few rows by a
    transposed view at about half the speed (16x128 @ 128x512: ~56 against ~28 microseconds)."""
    w_t = empty(w.shape[::-1])
    w_t[...] = w.T
    return w_t


def _previous(empty, seq, first, reverse):
    """The state each step started from: seq moved one step along the processing order, `first` at the first
    processed step (a new array)."""
    prev = empty(seq.shape)
    if reverse:
        prev[:-1] = seq[1:]
        prev[-1] = first
    else:
        prev[1:] = seq[:-1]
        prev[0] = first
    return prev


def _weight_grad(xp, empty, d_gates, states, first, reverse, out):
    """out = sum over steps of d_gates_t^T @ h_{t-1} (with h_{-1} = first) as one matmul over all steps."""
    rows = d_gates.shape[2]
    previous = _previous(empty, states, first, reverse)
    (parallel_gemm.matmul if xp is np else xp.matmul)(d_gates.reshape(-1, rows).T,
                                                      previous.reshape(-1, states.shape[2]), out=out)


# ---- LSTM ----
# A step's gate activations are kept gate-major, (4, B, H), so that every gate block is one contiguous run of
# memory (NumPy's ufuncs are several times slower per call on the column blocks of a (B, 4H) array, which they
# walk row by row), in the order i, f, o, g (PyTorch's weights are i, f, g, o): one sigmoid covers three blocks, a
# tanh the fourth. The sigmoid gates' pre-activations are stored negated, which saves the negation inside the
# sigmoid. States, outputs and gradients stay in PyTorch's (B, n) rows.

def lstm_forward(xp, empty, xw, h0, c0, w_hh, w_hr, order, acts, cells, tanh_cells, raw, out):
    """Run the LSTM recurrence over the steps in `order` (forward or reversed).

    Inputs: xw (T, B, 4H) in PyTorch's gate order i, f, g, o; h0 (B, P), c0 (B, H); w_hh (4H, P); w_hr (P, H) or
    None. Fills out (T, B, P) with h_t, acts (T, 4, B, H) with sigmoid(i), sigmoid(f), sigmoid(o), tanh(g) (that
    order), cells (T, B, H) with c_t, tanh_cells with tanh(c_t) and raw (only with w_hr) with o * tanh(c_t)."""
    steps, batch, gates = xw.shape
    H = gates // 4
    x_blocks = xw.reshape(steps, batch, 4, H).transpose(0, 2, 1, 3)
    xp.negative(x_blocks[:, :2], out=acts[:, :2])
    xp.negative(x_blocks[:, 3], out=acts[:, 2])
    acts[:, 3] = x_blocks[:, 2]
    w_t = empty((w_hh.shape[1], gates))                     # W_hh^T, its blocks in acts' order and signs
    xp.negative(w_hh[:2 * H].T, out=w_t[:, :2 * H])
    xp.negative(w_hh[3 * H:].T, out=w_t[:, 2 * H:3 * H])
    w_t[:, 3 * H:] = w_hh[2 * H:3 * H].T
    w_hr_t = None if w_hr is None else _transposed(empty, w_hr)
    recurrent = empty((batch, gates))
    recurrent_blocks = recurrent.reshape(batch, 4, H).transpose(1, 0, 2)
    input_gated = empty((batch, H))
    h, c = h0, c0
    for t in order:
        a = acts[t]
        xp.matmul(h, w_t, out=recurrent)
        a += recurrent_blocks
        sig = a[:3]                                         # sigmoid(x) = 1 / (1 + exp(-x)), -x already there
        xp.exp(sig, out=sig)
        sig += 1
        xp.reciprocal(sig, out=sig)
        g = xp.tanh(a[3], out=a[3])
        c_t = xp.multiply(a[1], c, out=cells[t])
        c_t += xp.multiply(a[0], g, out=input_gated)
        h = xp.multiply(a[2], xp.tanh(c_t, out=tanh_cells[t]), out=out[t] if raw is None else raw[t])
        if w_hr_t is not None:
            h = xp.matmul(h, w_hr_t, out=out[t])
        c = c_t


def lstm_backward(xp, empty, saved, d_out, d_hn, d_cn, order, d_xw, d_h0, d_c0, d_w_hh, d_w_hr):
    """Backpropagation through time for lstm_forward.

    saved: (h0, c0, w_hh, w_hr, out, acts, cells, tanh_cells, raw) as lstm_forward left them; d_out (T, B, P),
    d_hn (B, P), d_cn (B, H). Fills d_xw (T, B, 4H, PyTorch's gate order), d_h0, d_c0, and d_w_hh, d_w_hr where
    they are not None."""
    h0, c0, w_hh, w_hr, out, acts, cells, tanh_cells, raw = saved
    steps, batch, H = cells.shape
    reverse = order[0] != 0
    i, f, o, g = acts[:, 0], acts[:, 1], acts[:, 2], acts[:, 3]
    # d pre-activation = factor * d c for i, f, g and factor * d(o tanh c) for o: every factor, for all steps at
    # once, gate-major in PyTorch's gate order
    factors = empty((steps, 4, batch, H))
    slopes = xp.subtract(1, acts[:, :3], out=empty((steps, 3, batch, H)))
    slopes *= acts[:, :3]                                   # sigmoid' of i, f, o
    xp.multiply(slopes[:, 0], g, out=factors[:, 0])
    first, body, previous = (-1, slice(None, -1), slice(1, None)) if reverse else (0, slice(1, None), slice(None, -1))
    xp.multiply(slopes[body, 1], cells[previous], out=factors[body, 1])     # f' * c_{t-1}
    xp.multiply(slopes[first, 1], c0, out=factors[first, 1])
    tanh_slope = xp.multiply(g, g, out=factors[:, 2])
    xp.subtract(1, tanh_slope, out=tanh_slope)
    tanh_slope *= i
    xp.multiply(slopes[:, 2], tanh_cells, out=factors[:, 3])
    to_cell = xp.multiply(tanh_cells, tanh_cells, out=empty(cells.shape))
    # d c_t / d(o tanh c_t) = o (1 - tanh^2 c_t)
    xp.subtract(1, to_cell, out=to_cell)
    to_cell *= o
    cell_factors, out_factors = factors[:, :3], factors[:, 3]
    d_blocks = d_xw.reshape(steps, batch, 4, H).transpose(0, 2, 1, 3)
    d_hs = None if w_hr is None else empty(d_out.shape)    # every d h_t, for d W_hr
    d_h = empty(d_hn.shape)
    d_c = d_c0
    d_c[...] = d_cn
    through = empty((batch, H))
    recurrent = d_hn                                        # what reaches h_t from the later steps
    d_raw = None if w_hr is None else empty((batch, H))
    back = order[::-1]
    for k, t in enumerate(back):
        d_h = xp.add(d_out[t], recurrent, out=d_h if d_hs is None else d_hs[t])
        if w_hr is None:
            d_raw = d_h
        else:
            xp.matmul(d_h, w_hr, out=d_raw)
        d_c += xp.multiply(d_raw, to_cell[t], out=through)
        xp.multiply(d_c, cell_factors[t], out=d_blocks[t, :3])
        xp.multiply(d_raw, out_factors[t], out=d_blocks[t, 3])
        d_c *= f[t]
        if k == 0:
            recurrent = empty(d_hn.shape)
        xp.matmul(d_xw[t], w_hh, out=recurrent if k + 1 < len(back) else d_h0)
    if d_w_hh is not None:
        _weight_grad(xp, empty, d_xw, out, h0, reverse, d_w_hh)
    if d_w_hr is not None:
        xp.matmul(d_hs.reshape(-1, d_hs.shape[2]).T, raw.reshape(-1, H), out=d_w_hr)


# ---- GRU ----

def gru_forward(xp, empty, xw, h0, w_hh, b_hh, order, acts, hidden, out):
    """Run the GRU recurrence (gates r, z, n) over the steps in `order`.

    Inputs: xw (T, B, 3H) = x W_ih^T + b_ih; h0 (B, H); w_hh (3H, H); b_hh (3H,) or None. Fills acts with
    r, z, n, hidden with h_{t-1} W_hh^T + b_hh and out with h_t."""
    H = out.shape[2]
    w_t = _transposed(empty, w_hh)
    h = h0
    for t in order:
        hid, a, x = hidden[t], acts[t], xw[t]
        xp.matmul(h, w_t, out=hid)
        if b_hh is not None:
            hid += b_hh
        r_z = xp.add(x[:, :2 * H], hid[:, :2 * H], out=a[:, :2 * H])
        _sigmoid_(xp, r_z)
        n = xp.multiply(a[:, :H], hid[:, 2 * H:], out=a[:, 2 * H:])
        n += x[:, 2 * H:]
        xp.tanh(n, out=n)
        h_t = xp.subtract(h, n, out=out[t])
        h_t *= a[:, H:2 * H]
        h_t += n
        h = h_t


def gru_backward(xp, empty, saved, d_out, d_hn, order, d_xw, d_h0, d_w_hh, d_b_hh):
    """Backpropagation through time for gru_forward.

    saved: (h0, w_hh, out, acts, hidden). Fills d_xw (T, B, 3H), d_h0, and d_w_hh, d_b_hh where not None."""
    h0, w_hh, out, acts, hidden = saved
    steps, batch, H = out.shape
    reverse = order[0] != 0
    r, z, n = acts[..., :H], acts[..., H:2 * H], acts[..., 2 * H:]
    z_slope = xp.subtract(1, z, out=empty(z.shape))
    to_n = xp.multiply(n, n, out=empty(n.shape))             # d n_pre / d h_t = (1 - z)(1 - n^2)
    xp.subtract(1, to_n, out=to_n)
    to_n *= z_slope
    z_slope *= z
    to_z = _previous(empty, out, h0, reverse)                # d z_pre / d h_t = (h_{t-1} - n) z (1 - z)
    to_z -= n
    to_z *= z_slope
    to_r = xp.subtract(1, r, out=empty(r.shape))             # d r_pre / d n_pre = (h W_hn^T + b_hn) r (1 - r)
    to_r *= r
    to_r *= hidden[..., 2 * H:]
    d_hidden = empty(hidden.shape)
    d_xn = d_xw[..., 2 * H:]
    d_hr, d_hz, d_hn_gate = d_hidden[..., :H], d_hidden[..., H:2 * H], d_hidden[..., 2 * H:]
    d_h = empty(d_out.shape)
    d_h[...] = d_out
    d_h[order[-1]] += d_hn
    carried, recurrent = empty(d_hn.shape), empty(d_hn.shape)
    back = order[::-1]
    for k, t in enumerate(back):
        dh = d_h[t]
        dn = xp.multiply(dh, to_n[t], out=d_xn[t])
        xp.multiply(dh, to_z[t], out=d_hz[t])
        xp.multiply(dn, to_r[t], out=d_hr[t])
        xp.multiply(dn, r[t], out=d_hn_gate[t])
        target = d_h[back[k + 1]] if k + 1 < len(back) else d_h0
        if k + 1 < len(back):
            target += xp.multiply(dh, z[t], out=carried)
        else:
            xp.multiply(dh, z[t], out=target)
        target += xp.matmul(d_hidden[t], w_hh, out=recurrent)
    d_xw[..., :2 * H] = d_hidden[..., :2 * H]
    _gru_parameter_grads(xp, empty, d_hidden, out, h0, reverse, d_w_hh, d_b_hh)


def _gru_parameter_grads(xp, empty, d_hidden, out, h0, reverse, d_w_hh, d_b_hh):
    """d W_hh and d b_hh (where not None) from the gradient of every step's hidden term d_hidden (T, B, 3H)."""
    if d_w_hh is not None:
        _weight_grad(xp, empty, d_hidden, out, h0, reverse, d_w_hh)
    if d_b_hh is not None:
        d_hidden.reshape(-1, d_hidden.shape[2]).sum(0, out=d_b_hh)


# ---- Elman RNN ----

def rnn_forward(xp, empty, xw, h0, w_hh, relu, order, out):
    """h_t = tanh(xw_t + h_{t-1} W_hh^T) (relu with `relu`) over the steps in `order`, written to out."""
    w_t = _transposed(empty, w_hh)
    h = h0
    for t in order:
        h_t = xp.matmul(h, w_t, out=out[t])
        h_t += xw[t]
        if relu:
            xp.maximum(h_t, 0, out=h_t)
        else:
            xp.tanh(h_t, out=h_t)
        h = h_t


def rnn_backward(xp, empty, saved, d_out, d_hn, order, relu, d_xw, d_h0, d_w_hh):
    """Backpropagation through time for rnn_forward. saved: (h0, w_hh, out). Fills d_xw (the pre-activations'
    gradient), d_h0 and d_w_hh where not None."""
    h0, w_hh, out = saved
    reverse = order[0] != 0
    slope = empty(out.shape)
    if relu:
        xp.greater(out, 0, out=slope)
    else:
        xp.multiply(out, out, out=slope)
        xp.subtract(1, slope, out=slope)
    d_h = empty(d_out.shape)
    d_h[...] = d_out
    d_h[order[-1]] += d_hn
    recurrent = empty(d_hn.shape)
    back = order[::-1]
    for k, t in enumerate(back):
        dp = xp.multiply(d_h[t], slope[t], out=d_xw[t])
        if k + 1 < len(back):
            d_h[back[k + 1]] += xp.matmul(dp, w_hh, out=recurrent)
        else:
            xp.matmul(dp, w_hh, out=d_h0)
    if d_w_hh is not None:
        _weight_grad(xp, empty, d_xw, out, h0, reverse, d_w_hh)


# ---- compiled steps: the same recurrences with each step's elementwise work in one numba kernel ----
# Per step, NumPy's matmul (BLAS held to one thread: a step's product is too small to share, and between products a
# second BLAS thread spins on the core the loop needs) and then one call of a kernel of nn_rnn_numba.py in place of
# a dozen ufunc calls; the backward needs no precomputed factors. They save what the readable kernels save, in the
# same layouts, so either backward runs after either forward.

def _cells():
    """lantern.ops.nn_rnn_numba, or None without numba (numba_kernels.py)."""
    return optional_kernels("nn_rnn_numba")


# OpenBLAS multiplies a step's few rows by a matrix faster in products of at most ~2^19 multiply-adds and 64 or
# more columns, measured on the LSTM's 16 rows: 16x128 by 128x512 as two products of 256 columns 23-29 against
# 28-35 microseconds, 16x512 by 512x128 as two of 64 columns 19-27 against 28-38 (each element is one dot product
# either way; below ~10^6 multiply-adds OpenBLAS can take its small-matrix kernels, which do not pack the right
# operand). Narrower blocks were slower (64x512 by 512x128 in blocks of 16 columns: 170 against 115).
_MOST_PER_PRODUCT = 1 << 19
_LEAST_WIDTH = 64


def _column_blocks(empty, w, rows):
    """w's columns as blocks of at most _MOST_PER_PRODUCT multiply-adds with `rows` rows, where that leaves each at
    least _LEAST_WIDTH columns (else w whole): a list of (columns, block), columns a slice of w's columns and block
    that slice of _contiguous(w), a view (BLAS reads its row stride as fast as a contiguous block's)."""
    w = _contiguous(empty, w)
    count = max(1, -(-rows * w.size // _MOST_PER_PRODUCT))
    if w.shape[1] < count * _LEAST_WIDTH:
        return [(slice(None), w)]
    width = -(-w.shape[1] // count)
    return [(slice(start, min(start + width, w.shape[1])), w[:, start:start + width])
            for start in range(0, w.shape[1], width)]


_COPY_WIDTH = 64


def _contiguous(empty, w):
    """w if C-contiguous, else a C-contiguous copy made _COPY_WIDTH columns at a time: W_hh^T (128 x 512 float32,
    a transposed view) copied whole takes NumPy ~100 microseconds, in slabs of 64 columns ~35-55."""
    if w.flags.c_contiguous:
        return w
    copy = empty(w.shape)
    for start in range(0, w.shape[1], _COPY_WIDTH):
        copy[:, start:start + _COPY_WIDTH] = w[:, start:start + _COPY_WIDTH]
    return copy


def _blocked_matmul(xp, a, blocks, out):
    """out = a @ w for w given as _column_blocks, one product per block."""
    for columns, block in blocks:
        xp.matmul(a, block, out=out[:, columns])


def compiled_steps_apply(xp, xw, projected=False):
    """Whether the compiled specialisations serve a recurrence over the array xw: float32 NumPy arrays, no LSTM
    projection, numba installed, and not reference mode."""
    return mode.fast and xp is np and xw.dtype == np.float32 and not projected and _cells() is not None


@specialisation(replaces="nn_rnn.lstm_forward", ops=("lstm",),
                when="float32 NumPy arrays, no LSTM projection, numba installed (compiled_steps_apply)",
                parity_test="tests/test_nn_rnn_fused.py::test_compiled_steps_match_the_readable_kernels")
def lstm_forward_compiled(xp, empty, xw, h0, c0, w_hh, w_hr, order, acts, cells, tanh_cells, raw, out):
    """lstm_forward (same arguments and results; w_hr and raw are None) with one numba kernel per step, and each
    step's product in column blocks of W_hh^T (_column_blocks)."""
    cell = _cells().lstm_cell_forward
    recurrent = empty(xw.shape[1:])
    products = [(block, recurrent[:, columns]) for columns, block in _column_blocks(empty, w_hh.T, xw.shape[1])]
    h, c = h0, c0
    with one_blas_thread():
        for t in order:
            for block, part in products:
                xp.matmul(h, block, out=part)
            h_t, c_t = out[t], cells[t]
            cell(xw[t], recurrent, c, acts[t], c_t, tanh_cells[t], h_t)
            h, c = h_t, c_t


@specialisation(replaces="nn_rnn.lstm_backward", ops=("lstm",),
                when="float32 NumPy arrays, no LSTM projection, numba installed (compiled_steps_apply)",
                parity_test="tests/test_nn_rnn_fused.py::test_compiled_steps_match_the_readable_kernels")
def lstm_backward_compiled(xp, empty, saved, d_out, d_hn, d_cn, order, d_xw, d_h0, d_c0, d_w_hh, d_w_hr):
    """lstm_backward (same arguments and results; no projection) with one numba kernel per step, and each
    step's product in column blocks of W_hh (_column_blocks)."""
    h0, c0, w_hh, _, out, acts, cells, tanh_cells, _ = saved
    cell = _cells().lstm_cell_backward
    w_blocks = _column_blocks(empty, w_hh, d_hn.shape[0])
    d_c0[...] = d_cn                                        # from here on: what reaches the current step's c
    recurrent = empty(d_hn.shape)                           # what reaches h_t from the later steps
    recurrent[...] = d_hn
    back = order[::-1]
    with one_blas_thread():
        for k, t in enumerate(back):
            last = k + 1 == len(back)
            cell(d_out[t], recurrent, acts[t], c0 if last else cells[back[k + 1]], tanh_cells[t], d_c0, d_xw[t])
            _blocked_matmul(xp, d_xw[t], w_blocks, d_h0 if last else recurrent)
    if d_w_hh is not None:
        _weight_grad(xp, empty, d_xw, out, h0, order[0] != 0, d_w_hh)


# ---- the LSTM and GRU in blocks of rows ----

# A step's product is too small to share between threads (handing it to another costs about as much as it takes),
# but the batch's rows never meet in the recurrence: for a small LSTM or GRU (hidden size up to 128) the compiled
# kernels run every step for one block of rows at a time, in a numba kernel that calls BLAS itself and holds no
# GIL, and at two or more threads the threads take the blocks. The blocks depend only on the shapes, never on the
# thread count, so neither do the bits (BLAS may round a row differently in products of different row counts). The
# weight gradients stay one product over all steps and rows.

# The largest hidden size run this way. With an LSTM of hidden size 256 the kernel's BLAS (SciPy's, which numba
# calls) took 1.25-1.3x the time of NumPy's products in the step loop; with 128 or less the blocks took the step
# loop's 0.65-0.88x (LSTM) and 0.69-0.87x (GRU) at two threads, 0.86-0.97x and 0.91-0.98x at one (the whole layer,
# forward and backward, 32 steps, hidden sizes 32 to 128, batches of 8 to 64).
_LARGEST_HIDDEN = 128
_LEAST_ROWS = 4   # per block: fewer rows make each step's product a matrix-vector product, with the same overhead


def row_blocks_apply(xw, gate_count):
    """Whether the compiled kernels over the array xw (T, B, gate_count · H) run in blocks of rows."""
    return xw.shape[2] // gate_count <= _LARGEST_HIDDEN


def _row_blocks(batch, gates, hidden):
    """[(first, stop), ...] covering the batch's rows: halves where each keeps _LEAST_ROWS rows, and no more rows
    in one than make a step's product (rows x hidden by hidden x gates) 2^19 multiply-adds (_MOST_PER_PRODUCT; more
    was slower).

    >>> _row_blocks(6, 512, 128), _row_blocks(9, 512, 128), _row_blocks(20, 512, 128), _row_blocks(0, 512, 128)
    ([(0, 6)], [(0, 5), (5, 9)], [(0, 8), (8, 16), (16, 20)], [])
    """
    rows = batch if batch < 2 * _LEAST_ROWS else -(-batch // 2)
    rows = max(1, min(rows, max(_LEAST_ROWS, _MOST_PER_PRODUCT // (gates * hidden))))   # 1: an empty batch
    return [(first, min(first + rows, batch)) for first in range(0, batch, rows)]


def _in_row_blocks(batch, gates, hidden, kernel):
    """kernel(first, stop) for every block of rows, the blocks shared between the threads."""
    def run(taken):
        for first, stop in taken:
            kernel(first, stop)
    with one_blas_thread():
        parallel_items(_row_blocks(batch, gates, hidden), run)


@specialisation(replaces="nn_rnn.lstm_forward_compiled", ops=("lstm",),
                when="as lstm_forward_compiled, with hidden size ≤ 128 (row_blocks_apply)",
                parity_test="tests/test_nn_rnn_fused.py::test_lstm_in_row_blocks_matches_the_readable_kernels")
def lstm_forward_in_row_blocks(xp, empty, xw, h0, c0, w_hh, w_hr, order, acts, cells, tanh_cells, raw, out):
    """lstm_forward_compiled (same arguments and results), all steps for one block of rows at a time."""
    kernel = _cells().lstm_rows_forward
    h0, c0, w_t = _contiguous(empty, h0), _contiguous(empty, c0), _contiguous(empty, w_hh.T)
    steps = xp.asarray(order)
    _in_row_blocks(xw.shape[1], xw.shape[2], w_hh.shape[1], lambda first, stop: kernel(
        first, stop, xw, h0, c0, w_t, steps, acts, cells, tanh_cells, out,
        xp.empty((stop - first, xw.shape[2]), xw.dtype)))


@specialisation(replaces="nn_rnn.lstm_backward_compiled", ops=("lstm",),
                when="as lstm_backward_compiled, with hidden size ≤ 128 (row_blocks_apply)",
                parity_test="tests/test_nn_rnn_fused.py::test_lstm_in_row_blocks_matches_the_readable_kernels")
def lstm_backward_in_row_blocks(xp, empty, saved, d_out, d_hn, d_cn, order, d_xw, d_h0, d_c0, d_w_hh, d_w_hr):
    """lstm_backward_compiled (same arguments and results), all steps back for one block of rows at a time; then
    the weight gradient over all of them."""
    h0, c0, w_hh, _, out, acts, cells, tanh_cells, _ = saved
    kernel = _cells().lstm_rows_backward
    c0, w_hh = _contiguous(empty, c0), _contiguous(empty, w_hh)
    steps = xp.asarray(order)

    def block(first, stop):
        rows = slice(first, stop)
        recurrent = d_hn[rows].copy()                       # what reaches h_t from the later steps
        d_c0[rows] = d_cn[rows]                             # what reaches c_t
        kernel(first, stop, d_out, c0, w_hh, steps, acts, cells, tanh_cells, d_xw, d_c0, recurrent)
        d_h0[rows] = recurrent
    _in_row_blocks(d_hn.shape[0], w_hh.shape[0], w_hh.shape[1], block)
    if d_w_hh is not None:
        _weight_grad(xp, empty, d_xw, out, h0, order[0] != 0, d_w_hh)


@specialisation(replaces="nn_rnn.gru_forward_compiled", ops=("gru",),
                when="as gru_forward_compiled, with hidden size ≤ 128 (row_blocks_apply)",
                parity_test="tests/test_nn_rnn_fused.py::test_gru_in_row_blocks_matches_the_readable_kernels")
def gru_forward_in_row_blocks(xp, empty, xw, h0, w_hh, b_hh, order, acts, hidden, out):
    """gru_forward_compiled (same arguments and results), all steps for one block of rows at a time."""
    kernel = _cells().gru_rows_forward
    h0, (w_t, b_hh) = _contiguous(empty, h0), _gru_step_operands(empty, w_hh, b_hh)
    steps = xp.asarray(order)
    _in_row_blocks(xw.shape[1], xw.shape[2], w_hh.shape[1], lambda first, stop: kernel(
        first, stop, xw, h0, w_t, b_hh, steps, acts, hidden, out))


@specialisation(replaces="nn_rnn.gru_backward_compiled", ops=("gru",),
                when="as gru_backward_compiled, with hidden size ≤ 128 (row_blocks_apply)",
                parity_test="tests/test_nn_rnn_fused.py::test_gru_in_row_blocks_matches_the_readable_kernels")
def gru_backward_in_row_blocks(xp, empty, saved, d_out, d_hn, order, d_xw, d_h0, d_w_hh, d_b_hh):
    """gru_backward_compiled (same arguments and results), all steps back for one block of rows at a time; then
    the parameter gradients over all of them."""
    h0, w_hh, out, acts, hidden = saved
    kernel = _cells().gru_rows_backward
    h0, w_hh = _contiguous(empty, h0), _contiguous(empty, w_hh)
    d_hidden = empty(hidden.shape)
    steps = xp.asarray(order)

    def block(first, stop):
        rows = slice(first, stop)
        carried, recurrent = xp.zeros_like(d_hn[rows], order="C"), d_hn[rows].copy()
        kernel(first, stop, d_out, h0, w_hh, steps, acts, hidden, out, d_hidden, d_xw, carried, recurrent)
        xp.add(carried, recurrent, out=d_h0[rows])
    _in_row_blocks(d_hn.shape[0], w_hh.shape[0], w_hh.shape[1], block)
    _gru_parameter_grads(xp, empty, d_hidden, out, h0, order[0] != 0, d_w_hh, d_b_hh)


def _gru_step_operands(empty, w_hh, b_hh):
    """(W_hh^T as a contiguous copy, b_hh or zeros where the layer has none): what the compiled GRU cells take."""
    if b_hh is None:
        b_hh = empty(w_hh.shape[:1])
        b_hh[...] = 0
    return _transposed(empty, w_hh), b_hh


@specialisation(replaces="nn_rnn.gru_forward", ops=("gru",),
                when="float32 NumPy arrays, no LSTM projection, numba installed (compiled_steps_apply)",
                parity_test="tests/test_nn_rnn_fused.py::test_compiled_steps_match_the_readable_kernels")
def gru_forward_compiled(xp, empty, xw, h0, w_hh, b_hh, order, acts, hidden, out):
    """gru_forward (same arguments and results) with one numba kernel per step."""
    cell = _cells().gru_cell_forward
    w_t, b_hh = _gru_step_operands(empty, w_hh, b_hh)
    h = h0
    with one_blas_thread():
        for t in order:
            xp.matmul(h, w_t, out=hidden[t])
            cell(xw[t], hidden[t], b_hh, h, acts[t], out[t])
            h = out[t]


@specialisation(replaces="nn_rnn.gru_backward", ops=("gru",),
                when="float32 NumPy arrays, no LSTM projection, numba installed (compiled_steps_apply)",
                parity_test="tests/test_nn_rnn_fused.py::test_compiled_steps_match_the_readable_kernels")
def gru_backward_compiled(xp, empty, saved, d_out, d_hn, order, d_xw, d_h0, d_w_hh, d_b_hh):
    """gru_backward (same arguments and results) with one numba kernel per step."""
    h0, w_hh, out, acts, hidden = saved
    cell = _cells().gru_cell_backward
    d_hidden = empty(hidden.shape)
    carried, recurrent = empty(d_hn.shape), empty(d_hn.shape)   # what reaches h_t through z_{t+1}, and W_hh
    carried[...] = 0
    recurrent[...] = d_hn
    back = order[::-1]
    with one_blas_thread():
        for k, t in enumerate(back):
            h_prev = h0 if k + 1 == len(back) else out[back[k + 1]]
            cell(d_out[t], carried, recurrent, acts[t], hidden[t], h_prev, d_hidden[t], d_xw[t])
            xp.matmul(d_hidden[t], w_hh, out=recurrent)
    xp.add(carried, recurrent, out=d_h0)
    _gru_parameter_grads(xp, empty, d_hidden, out, h0, order[0] != 0, d_w_hh, d_b_hh)
