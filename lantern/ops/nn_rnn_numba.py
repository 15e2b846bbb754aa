"""numba kernels for one float32 step of the LSTM and GRU recurrences: every elementwise operation of a step (the
gates' activations, the cell update, and in backward every gate's gradient) in one loop, instead of a dozen
NumPy calls per step. The step's matmul stays in NumPy (BLAS); nn_rnn.py's compiled specialisations call these
between the matmuls. A small LSTM or GRU runs whole sequences over blocks of the batch's rows instead
(lstm_rows_forward / lstm_rows_backward, gru_rows_forward / gru_rows_backward), products included.

Imported only when such a specialisation first runs (numba takes ~0.5 s to import); kernels are cached on disk.
The activations are float32_numba's formulas, which LLVM vectorises (libm's scalar expf and tanhf are ~10 times
slower than NumPy's ufuncs).

>>> import numpy as np
>>> zero, c_prev = np.zeros((1, 4), np.float32), np.ones((1, 1), np.float32)
>>> acts, (c, tanh_c, h) = np.empty((4, 1, 1), np.float32), (np.empty((1, 1), np.float32) for _ in range(3))
>>> lstm_cell_forward(zero, zero, c_prev, acts, c, tanh_c, h)
>>> acts.ravel().tolist(), c.item()     # i, f, o = sigmoid(0), g = tanh(0); c = f · c_prev + i · g
([0.5, 0.5, 0.5, 0.0], 0.5)
"""
import numba
import numpy as np

from .float32_numba import sigmoid, tanh

__all__ = ["sigmoid", "tanh", "lstm_cell_forward", "lstm_cell_backward", "lstm_rows_forward", "lstm_rows_backward",
           "gru_cell_forward", "gru_cell_backward", "gru_rows_forward", "gru_rows_backward"]

f32 = np.float32
_JIT = {"error_model": "numpy", "cache": True, "fastmath": {"arcp", "contract"}}


# Each kernel walks row by row over 1-D views, one per gate block of each array: LLVM vectorises the inner loop over
# these (over 2-D indexing, or one view per row with offsets, it cannot rule out that the stores alias the loads
# and runs scalar code, 4 to 10 times slower).

@numba.njit(**_JIT)
def lstm_cell_forward(xw, recurrent, c_prev, acts, c, tanh_c, h, acts_row=0):
    """One LSTM step after its matmul. xw and recurrent (B, 4H) hold the step's input projection and h W_hh^T in
    PyTorch's gate order i, f, g, o. Writes acts (4, B, H) = sigmoid(i), sigmoid(f), sigmoid(o), tanh(g) (the
    layout nn_rnn.lstm_forward saves), c = f c_prev + i g, tanh_c = tanh(c) and h = o tanh(c). Row b of the
    others is row acts_row + b of acts (lstm_rows_forward passes a share of the batch's rows)."""
    batch, H = c.shape
    for b in range(batch):
        x_i, x_f, x_g, x_o = xw[b, :H], xw[b, H:2 * H], xw[b, 2 * H:3 * H], xw[b, 3 * H:]
        r_i, r_f, r_g, r_o = recurrent[b, :H], recurrent[b, H:2 * H], recurrent[b, 2 * H:3 * H], recurrent[b, 3 * H:]
        c_in, c_out, tc_out, h_out = c_prev[b], c[b], tanh_c[b], h[b]
        a = acts_row + b
        i_out, f_out, o_out, g_out = acts[0, a], acts[1, a], acts[2, a], acts[3, a]
        # two passes over the row: with all five activations in one loop body the kernel runs ~15% slower
        # (16 rows of 128: 11.0 against 9.3 microseconds)
        for j in range(H):
            i = sigmoid(x_i[j] + r_i[j])
            f = sigmoid(x_f[j] + r_f[j])
            g = tanh(x_g[j] + r_g[j])
            i_out[j], f_out[j], g_out[j] = i, f, g
            c_out[j] = f * c_in[j] + i * g
        for j in range(H):
            o = sigmoid(x_o[j] + r_o[j])
            t = tanh(c_out[j])
            o_out[j], tc_out[j], h_out[j] = o, t, o * t


@numba.njit(**_JIT)
def lstm_cell_backward(d_out, recurrent, acts, c_prev, tanh_c, d_c, d_xw, acts_row=0):
    """One step of the LSTM's backpropagation through time. d_out + recurrent is what reaches h_t (from the
    output and from step t+1's matmul); d_c (B, H) holds what reaches c_t and is left holding what reaches
    c_{t-1}. Writes the step's pre-activation gradient d_xw (B, 4H, PyTorch's gate order). Row b of the others is
    row acts_row + b of acts."""
    batch, H = d_c.shape
    for b in range(batch):
        a = acts_row + b
        a_i, a_f, a_o, a_g = acts[0, a], acts[1, a], acts[2, a], acts[3, a]
        d_o_b, rec, c_in, tc, dc_b = d_out[b], recurrent[b], c_prev[b], tanh_c[b], d_c[b]
        d_i, d_f, d_g, d_o = d_xw[b, :H], d_xw[b, H:2 * H], d_xw[b, 2 * H:3 * H], d_xw[b, 3 * H:]
        for j in range(H):
            i, f, o, g, t = a_i[j], a_f[j], a_o[j], a_g[j], tc[j]
            dh = d_o_b[j] + rec[j]
            dc = dc_b[j] + dh * (o * (f32(1) - t * t))
            d_i[j] = dc * (g * (i * (f32(1) - i)))
            d_f[j] = dc * (c_in[j] * (f * (f32(1) - f)))
            d_g[j] = dc * (i * (f32(1) - g * g))
            d_o[j] = dh * (t * (o * (f32(1) - o)))
            dc_b[j] = dc * f


# A whole sequence for some of the batch's rows, the step products by BLAS (np.dot) inside the kernel. The
# kernel holds no GIL (NumPy's matmul keeps it for a single product), so threads can run the recurrence each over
# its own blocks of rows (nn_rnn.lstm_forward_in_row_blocks). The arrays are the whole batch's and the rows
# `first:stop` are sliced here: slicing rows of a C-contiguous array inside numba keeps it typed C-contiguous,
# which np.dot needs to call BLAS without a copy.

@numba.njit(nogil=True, **_JIT)
def lstm_rows_forward(first, stop, xw, h0, c0, w_t, order, acts, cells, tanh_c, out, recurrent):
    """lstm_cell_forward over the steps in `order` for batch rows first:stop, each after its product
    h W_hh^T (w_t: W_hh^T, (H, 4H)) into recurrent (stop - first, 4H)."""
    h, c = h0[first:stop], c0[first:stop]
    for t in order:
        np.dot(h, w_t, recurrent)
        h_t, c_t = out[t, first:stop], cells[t, first:stop]
        lstm_cell_forward(xw[t, first:stop], recurrent, c, acts[t], c_t, tanh_c[t, first:stop], h_t, first)
        h, c = h_t, c_t


@numba.njit(nogil=True, **_JIT)
def lstm_rows_backward(first, stop, d_out, c0, w_hh, order, acts, cells, tanh_c, d_xw, d_c0, recurrent):
    """lstm_cell_backward over the steps in `order`, last first, for batch rows first:stop, each followed by its
    product d gates_t W_hh into recurrent (stop - first, H). recurrent comes holding d h_n's rows and d_c0's rows
    d c_n's; they are left holding d h_0's and d c_0's."""
    d_c = d_c0[first:stop]
    for k in range(len(order) - 1, -1, -1):
        t = order[k]
        c_prev = c0[first:stop] if k == 0 else cells[order[k - 1], first:stop]
        d_gates = d_xw[t, first:stop]
        lstm_cell_backward(d_out[t, first:stop], recurrent, acts[t], c_prev, tanh_c[t, first:stop], d_c, d_gates,
                           first)
        np.dot(d_gates, w_hh, recurrent)


@numba.njit(**_JIT)
def gru_cell_forward(xw, hidden, b_hh, h_prev, acts, h):
    """One GRU step after its matmul. hidden (B, 3H) holds h_prev W_hh^T and gets b_hh added (what the backward
    needs); xw (B, 3H) is the input projection with b_ih. Writes acts (B, 3H) = r, z, n and h."""
    batch, H = h.shape
    b_r, b_z, b_n = b_hh[:H], b_hh[H:2 * H], b_hh[2 * H:]
    for b in range(batch):
        x_r, x_z, x_n = xw[b, :H], xw[b, H:2 * H], xw[b, 2 * H:]
        h_r, h_z, h_n = hidden[b, :H], hidden[b, H:2 * H], hidden[b, 2 * H:]
        a_r, a_z, a_n = acts[b, :H], acts[b, H:2 * H], acts[b, 2 * H:]
        h_in, h_out = h_prev[b], h[b]
        for j in range(H):
            hr, hz, hn = h_r[j] + b_r[j], h_z[j] + b_z[j], h_n[j] + b_n[j]
            r = sigmoid(x_r[j] + hr)
            z = sigmoid(x_z[j] + hz)
            n = tanh(x_n[j] + r * hn)
            h_r[j], h_z[j], h_n[j] = hr, hz, hn
            a_r[j], a_z[j], a_n[j] = r, z, n
            h_out[j] = (h_in[j] - n) * z + n


@numba.njit(**_JIT)
def gru_cell_backward(d_out, carried, recurrent, acts, hidden, h_prev, d_hidden, d_xw):
    """One step of the GRU's backpropagation through time. d_out + carried + recurrent is what reaches h_t
    (carried: through step t+1's z h_t term, recurrent: through its matmul). Writes the gradients of the step's
    hidden term d_hidden (B, 3H) and input projection d_xw (B, 3H), and leaves in carried d h_t * z_t."""
    batch, H = carried.shape
    for b in range(batch):
        d_o_b, carry, rec, h_in, h_n = d_out[b], carried[b], recurrent[b], h_prev[b], hidden[b, 2 * H:]
        a_r, a_z, a_n = acts[b, :H], acts[b, H:2 * H], acts[b, 2 * H:]
        dh_r, dh_z, dh_n = d_hidden[b, :H], d_hidden[b, H:2 * H], d_hidden[b, 2 * H:]
        dx_r, dx_z, dx_n = d_xw[b, :H], d_xw[b, H:2 * H], d_xw[b, 2 * H:]
        for j in range(H):
            r, z, n = a_r[j], a_z[j], a_n[j]
            dh = d_o_b[j] + carry[j] + rec[j]
            dn = dh * ((f32(1) - n * n) * (f32(1) - z))
            dz = dh * ((h_in[j] - n) * ((f32(1) - z) * z))
            dr = dn * ((f32(1) - r) * r * h_n[j])
            dh_r[j], dh_z[j], dh_n[j] = dr, dz, dn * r
            dx_r[j], dx_z[j], dx_n[j] = dr, dz, dn
            carry[j] = dh * z


@numba.njit(nogil=True, **_JIT)
def gru_rows_forward(first, stop, xw, h0, w_t, b_hh, order, acts, hidden, out):
    """gru_cell_forward over the steps in `order` for batch rows first:stop, each after its product h W_hh^T
    (w_t: W_hh^T, (H, 3H)) into those rows of hidden."""
    h = h0[first:stop]
    for t in order:
        recurrent, h_t = hidden[t, first:stop], out[t, first:stop]
        np.dot(h, w_t, recurrent)
        gru_cell_forward(xw[t, first:stop], recurrent, b_hh, h, acts[t, first:stop], h_t)
        h = h_t


@numba.njit(nogil=True, **_JIT)
def gru_rows_backward(first, stop, d_out, h0, w_hh, order, acts, hidden, out, d_hidden, d_xw, carried, recurrent):
    """gru_cell_backward over the steps in `order`, last first, for batch rows first:stop, each followed by its
    product d hidden_t W_hh into recurrent (stop - first, H). carried comes holding zeros and recurrent d h_n's
    rows; they are left holding what reaches h_0 through z_1 and through W_hh."""
    for k in range(len(order) - 1, -1, -1):
        t = order[k]
        h_prev = h0[first:stop] if k == 0 else out[order[k - 1], first:stop]
        d_hid = d_hidden[t, first:stop]
        gru_cell_backward(d_out[t, first:stop], carried, recurrent, acts[t, first:stop], hidden[t, first:stop],
                          h_prev, d_hid, d_xw[t, first:stop])
        np.dot(d_hid, w_hh, recurrent)
