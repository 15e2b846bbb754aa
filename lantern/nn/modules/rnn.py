"""Recurrent layers: RNN, LSTM, GRU and their one-step cells (torch.nn.modules.rnn).

Each (layer, direction) runs in two phases: the input projection of every time step at once (x @ W_ih^T + b, one
matmul), then the recurrence, one h @ W_hh^T per step. Over a padded batch the recurrence is one autograd node
(`_Recurrence`) whose forward and backward (backpropagation through time) are the array kernels of
lantern/ops/nn_rnn.py: per step one matmul and a few in-place ufuncs, the weight gradients one matmul over all
steps. Packed sequences, the cells, double backward, JIT traces and backends without arrays (meta) use the same
step equations written as ordinary differentiable lantern ops (`_composite_direction`).

>>> import lantern
>>> lstm = lantern.nn.LSTM(4, 3, num_layers=2)
>>> out, (h, c) = lstm(lantern.randn(5, 2, 4))     # (seq, batch, feature)
>>> out.shape, h.shape, c.shape
(lantern.Size([5, 2, 3]), lantern.Size([2, 2, 3]), lantern.Size([2, 2, 3]))
>>> [name for name, _ in lstm.named_parameters()][:4]
['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
"""
import math
import numbers
from typing import List, Optional, Tuple

import lantern
from .. import functional as F, init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from ...autograd.function import Function
from ...core.state import tls
from ...ops import autocast
from ..._tensor import Tensor
from ...ops.nn_rnn import (compiled_steps_apply, gru_backward, gru_backward_compiled, gru_backward_in_row_blocks,
                           gru_forward, gru_forward_compiled, gru_forward_in_row_blocks, lstm_backward,
                           lstm_backward_compiled, lstm_backward_in_row_blocks, lstm_forward, lstm_forward_compiled,
                           lstm_forward_in_row_blocks, rnn_backward, rnn_forward, row_blocks_apply)
from .module import Module
from ...core.overridable import overridable
from ...core import user_warnings

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# ---- one step, as differentiable lantern ops (cells, packed sequences, double backward) ----

def _lstm_cell(gates, c, w_hr_t=None):
    """One LSTM step from its pre-activation gates (blocks i, f, g, o): the new (h, c)."""
    i, f, g, o = gates.chunk(4, 1)
    c = lantern.addcmul(f.sigmoid() * c, i.sigmoid(), g.tanh())
    h = o.sigmoid() * c.tanh()
    return (h if w_hr_t is None else h.mm(w_hr_t)), c


def _gru_cell(gi, gh, h):
    """One GRU step from gi = x W_ih^T + b_ih and gh = h W_hh^T + b_hh (blocks r, z, n): the new h.
    The reset gate scales the whole hidden term of n, bias included: n = tanh(gi_n + r * gh_n)."""
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = lantern.addcmul(i_n, r, h_n).tanh()
    return lantern.addcmul(n, z, h - n)


def _linear(x, w, b):
    return x.mm(w.t()) if b is None else lantern.addmm(b, x, w.t())


def _step(mode, xt, h, c, w_hh_t, b_hh, w_hr_t):
    """One layer step given the step's input projection xt (input biases, and for LSTM/RNN the hidden ones,
    already added)."""
    if mode == "LSTM":
        return _lstm_cell(lantern.addmm(xt, h, w_hh_t), c, w_hr_t)
    if mode == "GRU":
        gh = h.mm(w_hh_t) if b_hh is None else lantern.addmm(b_hh, h, w_hh_t)
        return _gru_cell(xt, gh, h), None
    pre = lantern.addmm(xt, h, w_hh_t)
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


def _composite_direction(mode, steps, sizes, h0, c0, w_hh, b_hh, w_hr, reverse):
    """One direction of one layer over the input projections `steps` (step t: (sizes[t], gates), sizes sorted,
    longest first). Returns (the outputs of the steps, h_n, c_n) with h_n, c_n for the full batch."""
    w_hh_t = w_hh.t()
    w_hr_t = None if w_hr is None else w_hr.t()
    lstm = mode == "LSTM"
    outs = [None] * len(sizes)
    if reverse:  # sequences join as the steps go back in time; each starts from its own h0 row
        last = sizes[-1]
        h = h0 if last == h0.size(0) else h0[:last]
        c = c0 if not lstm or last == c0.size(0) else c0[:last]
        for t in range(len(sizes) - 1, -1, -1):
            b = sizes[t]
            if b > h.size(0):
                h = lantern.cat([h, h0[h.size(0):b]])
                c = lantern.cat([c, c0[c.size(0):b]]) if lstm else None
            h, c = _step(mode, steps[t], h, c, w_hh_t, b_hh, w_hr_t)
            outs[t] = h
        return outs, h, c
    h, c = h0, c0
    done_h, done_c = [], []  # final states of sequences that ended, latest (= lowest rows) last
    for t, b in enumerate(sizes):
        if b < h.size(0):
            done_h.append(h[b:])
            h = h[:b]
            if lstm:
                done_c.append(c[b:])
                c = c[:b]
        h, c = _step(mode, steps[t], h, c, w_hh_t, b_hh, w_hr_t)
        outs[t] = h
    if done_h:
        h = lantern.cat([h] + done_h[::-1])
        c = lantern.cat([c] + done_c[::-1]) if lstm else None
    return outs, h, c


# ---- the fused recurrence over a padded batch: array kernels (lantern/ops/nn_rnn.py) as one autograd node ----

_KERNEL_DTYPES = (lantern.float32, lantern.float64)


def _fusable(xw):
    """Whether the recurrence over xw can run as array kernels: a backend with arrays, a dtype BLAS multiplies,
    and no JIT tracer recording the ops (a trace needs the step equations as ops)."""
    return xw._backend.xp is not None and xw.dtype in _KERNEL_DTYPES and tls.tracer is None


class _Recurrence(Function):
    """One direction of one layer over a padded, time-major batch, as a single autograd node.

    Inputs: the input projection xw (T, B, gates) with the biases that can be folded in (all of them for LSTM and
    RNN, b_ih for GRU), h0, c0 (LSTM), W_hh, b_hh (GRU only) and W_hr (LSTM with projections).
    Outputs: the hidden states of all steps (T, B, hidden), h_n and c_n (None unless LSTM)."""

    @staticmethod
    def forward(ctx, mode, reverse, xw, h0, c0, w_hh, b_hh, w_hr):
        backend, dtype = xw._backend, xw.dtype
        xp, arr = backend.xp, backend.array
        empty, _held = _scratch(backend, dtype)
        steps, batch, gates = xw.shape
        order = list(range(steps))
        if reverse:
            order.reverse()
        out = backend.empty((steps, batch, h0.size(1)), dtype)
        c_n = extra = None
        compiled = compiled_steps_apply(xp, arr(xw), w_hr is not None)
        if mode == "LSTM":
            H = gates // 4
            acts, cells, tanh_cells = (backend.empty(shape, dtype) for shape in
                                       ((steps, 4, batch, H), (steps, batch, H), (steps, batch, H)))
            raw = None if w_hr is None else backend.empty((steps, batch, H), dtype)
            kernel = lstm_forward if not compiled else (
                lstm_forward_in_row_blocks if row_blocks_apply(xw, 4) else lstm_forward_compiled)
            kernel(xp, empty, arr(xw), arr(h0), arr(c0), arr(w_hh), _array(w_hr), order, arr(acts), arr(cells),
                   arr(tanh_cells), _array(raw), arr(out))
            c_n = backend.empty((batch, H), dtype)
            arr(c_n)[...] = arr(cells)[order[-1]]
            extra = (acts, cells, tanh_cells, raw)
        elif mode == "GRU":
            acts, hidden = backend.empty((steps, batch, gates), dtype), backend.empty((steps, batch, gates), dtype)
            kernel = gru_forward if not compiled else (
                gru_forward_in_row_blocks if row_blocks_apply(xw, 3) else gru_forward_compiled)
            kernel(xp, empty, arr(xw), arr(h0), arr(w_hh), _array(b_hh), order, arr(acts), arr(hidden), arr(out))
            extra = (acts, hidden)
        else:
            rnn_forward(xp, empty, arr(xw), arr(h0), arr(w_hh), mode == "RNN_RELU", order, arr(out))
            extra = ()
        h_n = backend.empty((batch, h0.size(1)), dtype)
        arr(h_n)[...] = arr(out)[order[-1]]
        ctx.mode, ctx.order = mode, order
        ctx.set_materialize_grads(False)   # backward makes its own zero arrays for outputs that got no gradient
        ctx.save_for_backward(xw, h0, c0, w_hh, b_hh, w_hr, out, *extra)
        return out, h_n, c_n

    @staticmethod
    def backward(ctx, d_out, d_hn, d_cn):
        saved = ctx.saved_tensors
        if lantern.is_grad_enabled():   # create_graph: differentiate the step equations themselves
            return (None, None) + _recurrence_grads_differentiably(ctx.mode, ctx.order, saved[:6],
                                                                    (d_out, d_hn, d_cn))
        xw, h0, c0, w_hh, b_hh, w_hr, out = saved[:7]
        extra = [_array(t) for t in saved[7:]]
        backend, dtype = xw._backend, xw.dtype
        xp, arr = backend.xp, backend.array
        empty, _held = _scratch(backend, dtype)
        needs = ctx.needs_input_grad   # (mode, reverse, xw, h0, c0, w_hh, b_hh, w_hr)
        d_out, d_hn = _grad_array(d_out, out, empty), _grad_array(d_hn, h0, empty)
        d_cn = None if c0 is None else _grad_array(d_cn, c0, empty)

        def new(like, wanted=True):
            return backend.empty(tuple(like.shape), dtype) if wanted else None

        d_xw, d_h0, d_c0 = new(xw), new(h0), new(c0, c0 is not None)
        d_w_hh, d_b_hh, d_w_hr = new(w_hh, needs[5]), new(b_hh, needs[6]), new(w_hr, needs[7])
        compiled = compiled_steps_apply(xp, arr(xw), w_hr is not None)
        if ctx.mode == "LSTM":
            kernel = lstm_backward if not compiled else (
                lstm_backward_in_row_blocks if row_blocks_apply(xw, 4) else lstm_backward_compiled)
            kernel(xp, empty, (arr(h0), arr(c0), arr(w_hh), _array(w_hr), arr(out), *extra), d_out, d_hn, d_cn,
                   ctx.order, arr(d_xw), arr(d_h0), arr(d_c0), _array(d_w_hh), _array(d_w_hr))
        elif ctx.mode == "GRU":
            kernel = gru_backward if not compiled else (
                gru_backward_in_row_blocks if row_blocks_apply(xw, 3) else gru_backward_compiled)
            kernel(xp, empty, (arr(h0), arr(w_hh), arr(out), *extra), d_out, d_hn, ctx.order, arr(d_xw),
                   arr(d_h0), _array(d_w_hh), _array(d_b_hh))
        else:
            rnn_backward(xp, empty, (arr(h0), arr(w_hh), arr(out)), d_out, d_hn, ctx.order,
                         ctx.mode == "RNN_RELU", arr(d_xw), arr(d_h0), _array(d_w_hh))
        return None, None, d_xw, d_h0, d_c0, d_w_hh, d_b_hh, d_w_hr


# The gradients _Recurrence.backward returns are new tensors nobody else holds: a weight can keep its as .grad
# (a user Function's node must assume otherwise, which costs a copy per weight).
_Recurrence._backward_cls.returns_user_tensors = False


def _array(t):
    return None if t is None else t._backend.array(t)


def _grad_array(grad, output, empty):
    """The array of an output's gradient, or zeros shaped like the output where it got none."""
    if grad is not None:
        return grad._backend.array(grad)
    zeros = empty(output.shape)
    zeros[...] = 0
    return zeros


def _scratch(backend, dtype):
    """(empty, held): empty(shape) gives a kernel a scratch array over a new tensor of the backend, so that its
    memory comes from (and goes back to) the caching allocator; the tensors stay in `held` for the caller's call."""
    held = []

    def empty(shape):
        t = backend.empty(tuple(shape), dtype)
        held.append(t)
        return backend.array(t)
    return empty, held


def _padded_composite(mode, reverse, xw, h0, c0, w_hh, b_hh, w_hr):
    """_Recurrence's outputs from the step equations as lantern ops (a traced or meta run, double backward)."""
    outs, h_n, c_n = _composite_direction(mode, xw.unbind(0), [xw.size(1)] * xw.size(0), h0, c0, w_hh, b_hh,
                                          w_hr, reverse)
    return lantern.stack(outs), h_n, c_n


def _recurrence_grads_differentiably(mode, order, inputs, grad_outputs):
    """The gradients of _Recurrence as a graph (for double backward): rerun its step equations with autograd
    and differentiate them with create_graph."""
    with lantern.enable_grad():
        out, h_n, c_n = _padded_composite(mode, order[0] != 0, *inputs)
    outputs = [out, h_n] + ([c_n] if c_n is not None else [])
    wanted = [t for t in inputs if t is not None and t.requires_grad]
    grads = [lantern.zeros_like(o) if g is None else g for o, g in zip(outputs, grad_outputs)]
    found = iter(lantern.autograd.grad(outputs, wanted, grads, create_graph=True, allow_unused=True))
    return tuple(next(found) if t is not None and t.requires_grad else None for t in inputs)


# ---- the modules ----

def _check_rnn_options(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size):
    """torch's checks of an RNN's constructor arguments, in its order (and its warning for dropout on one layer)."""
    if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                         "element being zeroed")
    if dropout > 0 and num_layers == 1:
        user_warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                      f"expects num_layers greater than 1, but got dropout={dropout} and "
                      f"num_layers={num_layers}", stacklevel=3)
    for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                              ("input_size", input_size, int)):
        if not isinstance(value, kind):
            raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")
    if mode not in _GATES:
        raise ValueError("Unrecognized RNN mode: " + mode)


class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU: parameters per (layer, direction), argument checks, and the
    run over layers and directions. `mode` is "LSTM", "GRU", "RNN_TANH" or "RNN_RELU"."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _check_rnn_options(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(2 if bidirectional else 1):
                names = []
                for kind, shape in self._weight_shapes(layer):
                    name = f"{kind}_l{layer}{'_reverse' if direction == 1 else ''}"
                    setattr(self, name, Parameter(lantern.empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def _weight_shapes(self, layer):
        """(name, shape) of one layer's parameters in one direction, in torch's order."""
        gate_size = _GATES[self.mode] * self.hidden_size
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        layer_input = self.input_size if layer == 0 else real_hidden * (2 if self.bidirectional else 1)
        shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
        if self.bias:
            shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
        if self.proj_size > 0:
            shapes.append(("weight_hr", (self.proj_size, self.hidden_size)))
        return shapes

    @property
    def _flat_weights(self):
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters, one list per (layer, direction)."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op: the weights are never packed into one buffer here (that is a cuDNN layout)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- argument checks (torch's names and messages) --

    def check_input(self, input, batch_sizes):
        weight = self._flat_weights[0]
        if input.dtype != weight.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). "
                             f"Convert input: input.to({weight.dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def _mini_batch(self, input, batch_sizes):
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def get_expected_hidden_size(self, input, batch_sizes):
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * (2 if self.bidirectional else 1), self._mini_batch(input, batch_sizes), size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        return hx if permutation is None else hx.index_select(1, permutation)

    # -- the run --

    def _zeros_state(self, input, batch, size):
        return lantern.zeros(self.num_layers * (2 if self.bidirectional else 1), batch, size, dtype=input.dtype,
                             device=input.device)

    def _forward(self, input, hx):
        """The forward of every mode: unpack or batch the input, default and check the state, run, repack."""
        lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if packed:
            input, batch_sizes, sorted_indices, unsorted_indices = input
            batch = int(batch_sizes[0])
            if hx is None:
                hx = self._zeros_state(input, batch, real_hidden)
                if lstm:
                    hx = (hx, self._zeros_state(input, batch, self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = sorted_indices = unsorted_indices = None
            if input.dim() not in (2, 3):
                noun = " tensor" if self.mode.startswith("RNN") else ""
                name = "RNN" if self.mode.startswith("RNN") else self.mode
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{noun} instead")
            batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not batched:
                input = input.unsqueeze(batch_dim)
            hx = self._check_state_dims(hx, batched)
            batch = input.size(batch_dim)
            if hx is None:
                hx = self._zeros_state(input, batch, real_hidden)
                if lstm:
                    hx = (hx, self._zeros_state(input, batch, self.hidden_size))
        self.check_forward_args(input, hx, batch_sizes)
        h0, c0 = hx if lstm else (hx, None)
        if packed:
            output, h_n, c_n = self._run(input, h0, c0, batch_sizes.tolist())
        else:
            steps_first = input.transpose(0, 1) if self.batch_first else input
            if steps_first.size(0) == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            output, h_n, c_n = self._run(steps_first, h0, c0, None)
            if self.batch_first:
                output = output.transpose(0, 1)
        hidden = (h_n, c_n) if lstm else h_n
        if packed:
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if not batched:
            output = output.squeeze(batch_dim)
            hidden = (h_n.squeeze(1), c_n.squeeze(1)) if lstm else h_n.squeeze(1)
        return output, hidden

    def _scripted_forward(self, input, hx: Optional[Tensor]):
        """forward of RNN and GRU as TorchScript compiles it: a Tensor input (as for LSTM), every layer in one
        aten::gru / rnn_tanh / rnn_relu (lantern.gru & co.)."""
        batched, batch_dim = input.dim() == 3, 0 if self.batch_first else 1
        input = self._scripted_batched_input(input)
        layers, batch = self.num_layers * (2 if self.bidirectional else 1), input.size(batch_dim)
        if hx is None:
            h0 = lantern.zeros(layers, batch, self.hidden_size, dtype=input.dtype, device=input.device)
        else:
            h0 = hx
            if batched and h0.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {h0.dim()}-D tensor")
            if not batched:
                if h0.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {h0.dim()}-D tensor")
                h0 = h0.unsqueeze(1)
            self._check_scripted_state(h0, [layers, batch, self.hidden_size], "hidden")
        weights = self._flat_weights
        if self.mode == "GRU":
            output, h_n = lantern.gru(input, h0, weights, self.bias, self.num_layers, self.dropout, self.training,
                                      self.bidirectional, self.batch_first)
        elif self.mode == "RNN_TANH":
            output, h_n = lantern.rnn_tanh(input, h0, weights, self.bias, self.num_layers, self.dropout,
                                           self.training, self.bidirectional, self.batch_first)
        else:
            output, h_n = lantern.rnn_relu(input, h0, weights, self.bias, self.num_layers, self.dropout,
                                           self.training, self.bidirectional, self.batch_first)
        if not batched:
            return output.squeeze(batch_dim), h_n.squeeze(1)
        return output, h_n

    def _scripted_batched_input(self, input):
        """The input checks of the scripted forwards (RNN, GRU, LSTM), as TorchScript compiles them: 2-D or 3-D,
        its last dim input_size; an unbatched (2-D) input gets its batch dim."""
        if input.dim() != 2 and input.dim() != 3:
            if self.mode == "RNN_TANH" or self.mode == "RNN_RELU":  # torch's RNN message alone says "tensor"
                raise ValueError(f"RNN: Expected input to be 2D or 3D, got {input.dim()}D tensor instead")
            raise ValueError(f"{self.mode}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        if input.dim() == 2:
            input = input.unsqueeze(0 if self.batch_first else 1)
        if input.size(-1) != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.size(-1)}")
        return input

    def _check_scripted_state(self, state, expected: List[int], label: str):
        """check_hidden_size as TorchScript compiles it: `label` is 'hidden', 'hidden[0]' or 'hidden[1]'."""
        if state.size() != expected:
            raise RuntimeError(f"Expected {label} size ({expected[0]}, {expected[1]}, {expected[2]}), got "
                               f"{state.size()}")

    def _check_state_dims(self, hx, batched):
        """torch's dimension checks on a given state for batched (3-D) / unbatched (2-D) input; an unbatched
        state gets its batch dim."""
        if hx is None:
            return None
        want, kind = (3, "batched 3-D") if batched else (2, "unbatched 2-D")
        if self.mode == "LSTM":
            if hx[0].dim() != want or hx[1].dim() != want:
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            return hx if batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        if hx.dim() != want:
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
        return hx if batched else hx.unsqueeze(1)

    def _run(self, x, h0, c0, batch_sizes):
        """All layers and directions over time-major x (T, B, input_size), or packed rows (N, input_size) with
        batch_sizes (a list). Returns (output, h_n, c_n) where c_n is None unless LSTM."""
        weights = [[getattr(self, name) for name in names] for names in self._all_weights]
        return _run_layers(self.mode, x, h0, c0, batch_sizes, weights, self.bias, self.proj_size > 0,
                           self.num_layers, self.bidirectional, self.dropout, self.training)


def _run_layers(mode, x, h0, c0, batch_sizes, weights, has_biases, has_projections, num_layers, bidirectional,
                dropout, training):
    """RNNBase._run over explicit weights: `weights[layer * directions + direction]` is [w_ih, w_hh] + [b_ih, b_hh]
    with biases + [w_hr] with projections."""
    directions = 2 if bidirectional else 1
    if tls.autocast is not None:  # as PyTorch's CPU kernels: LSTM and RNN wholly in autocast's dtype, state
        if mode == "GRU":         # too; autocast does not reach GRU's products
            return autocast.excluded(_run_layers, mode, x, h0, c0, batch_sizes, weights, has_biases,
                                     has_projections, num_layers, bidirectional, dropout, training)
        h0, c0 = autocast.to_region_dtype(h0), autocast.to_region_dtype(c0)
    h_out, c_out = [], []
    layer_input = x
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            w_ih, w_hh = weights[index][0], weights[index][1]
            b_ih, b_hh = (weights[index][2], weights[index][3]) if has_biases else (None, None)
            w_hr = weights[index][-1] if has_projections else None
            folded = b_ih if b_ih is None or mode == "GRU" else b_ih + b_hh
            b_rec = b_hh if mode == "GRU" else None
            flat = layer_input if batch_sizes is not None else layer_input.reshape(-1, layer_input.size(-1))
            xw = _linear(flat, w_ih, folded)
            c_init = None if c0 is None else c0.select(0, index)
            if batch_sizes is None:
                xw = xw.view(layer_input.size(0), layer_input.size(1), xw.size(-1))
                run = _Recurrence.apply if _fusable(xw) else _padded_composite
                out, h, c = run(mode, direction == 1, xw, h0.select(0, index), c_init, w_hh, b_rec, w_hr)
            else:
                steps = xw.split(batch_sizes) if len(batch_sizes) > 1 else (xw,)
                outs, h, c = _composite_direction(mode, steps, batch_sizes, h0.select(0, index), c_init, w_hh,
                                                  b_rec, w_hr, direction == 1)
                out = lantern.cat(outs)
            outputs.append(out)
            h_out.append(h)
            c_out.append(c)
        layer_input = outputs[0] if directions == 1 else lantern.cat(outputs, -1)
        if dropout > 0 and training and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    return layer_input, lantern.stack(h_out), (lantern.stack(c_out) if c0 is not None else None)


def _run_flat(mode, input, args):
    """What torch.lstm / gru / rnn_tanh / rnn_relu compute, from their arguments after the input: the padded
    overload (hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) or the packed one
    (batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional), told apart by what comes
    third (has_biases, or params). hx is [h0, c0] for LSTM, else h0; params are an nn module's `_flat_weights`.
    Returns (output, h_n, c_n), c_n None unless LSTM."""
    packed = not isinstance(args[2], bool)
    if packed:
        batch_sizes, (hx, params, has_biases, num_layers, dropout, train, bidirectional) = args[0], args[1:]
        batch_first = False
    else:
        hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
    per_layer = len(params) // (num_layers * (2 if bidirectional else 1))
    weights = [list(params[i:i + per_layer]) for i in range(0, len(params), per_layer)]
    h0, c0 = hx if mode == "LSTM" else (hx, None)
    has_projections = c0 is not None and h0.size(-1) != c0.size(-1)
    if packed:
        return _run_layers(mode, input, h0, c0, batch_sizes.tolist(), weights, has_biases, has_projections,
                           num_layers, bidirectional, dropout, train)
    steps_first = input.transpose(0, 1) if batch_first else input
    output, h_n, c_n = _run_layers(mode, steps_first, h0, c0, None, weights, has_biases, has_projections,
                                   num_layers, bidirectional, dropout, train)
    return (output.transpose(0, 1) if batch_first else output), h_n, c_n


@overridable
def lstm(input, *args):
    """torch.lstm: every layer of an LSTM over flat weights, as nn.LSTM's TorchScript calls it (aten::lstm).

    `lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)` for a padded
    input (T, B, input_size), or (B, T, input_size) with batch_first, and `lstm(data, batch_sizes, hx, params,
    has_biases, num_layers, dropout, train, bidirectional)` for a packed one; hx is [h0, c0], params the weights
    in nn.LSTM's `_flat_weights` order. Returns (output, h_n, c_n).

    >>> import lantern
    >>> m = lantern.nn.LSTM(3, 4)
    >>> x = lantern.randn(5, 2, 3)
    >>> state = [lantern.zeros(1, 2, 4), lantern.zeros(1, 2, 4)]
    >>> out, h, c = lantern.lstm(x, state, m._flat_weights, True, 1, 0.0, False, False, False)
    >>> bool((out == m(x)[0]).all())
    True
    """
    return _run_flat("LSTM", input, args)


@overridable
def gru(input, *args):
    """torch.gru: lstm's two overloads for a GRU, hx one tensor; returns (output, h_n).

    >>> import lantern
    >>> m = lantern.nn.GRU(3, 4)
    >>> x = lantern.randn(5, 2, 3)
    >>> out, h = lantern.gru(x, lantern.zeros(1, 2, 4), m._flat_weights, True, 1, 0.0, False, False, False)
    >>> bool((h == m(x)[1]).all())
    True
    """
    return _run_flat("GRU", input, args)[:2]


@overridable
def rnn_tanh(input, *args):
    """torch.rnn_tanh: gru's overloads for an Elman RNN with tanh; returns (output, h_n)."""
    return _run_flat("RNN_TANH", input, args)[:2]


@overridable
def rnn_relu(input, *args):
    """torch.rnn_relu: gru's overloads for an Elman RNN with relu; returns (output, h_n)."""
    return _run_flat("RNN_RELU", input, args)[:2]


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    `RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False, dropout=0.0,
    bidirectional=False)`; forward(input, hx=None) -> (output, h_n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx: Optional[Tensor] = None):
        if not lantern.jit.is_scripting():
            return self._forward(input, hx)
        return self._scripted_forward(input, hx)


class LSTM(RNNBase):
    """Long short-term memory, gates i, f, g, o in that order; with proj_size > 0 the hidden state is projected
    by weight_hr.

    `LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False,
    proj_size=0)`; forward(input, (h0, c0)=None) -> (output, (h_n, c_n))."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        return (self.num_layers * (2 if self.bidirectional else 1), self._mini_batch(input, batch_sizes),
                self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx: Optional[Tuple[Tensor, Tensor]] = None):
        if not lantern.jit.is_scripting():
            return self._forward(input, hx)
        return self._scripted_forward(input, hx)

    def _scripted_forward(self, input, hx: Optional[Tuple[Tensor, Tensor]]):
        """forward as TorchScript compiles it: a Tensor input (torch's script has a second overload for a
        PackedSequence, which lantern's does not compile), every layer in one aten::lstm (lantern.lstm)."""
        batched, batch_dim = input.dim() == 3, 0 if self.batch_first else 1
        input = self._scripted_batched_input(input)
        layers, batch = self.num_layers * (2 if self.bidirectional else 1), input.size(batch_dim)
        h_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            h0 = lantern.zeros(layers, batch, h_size, dtype=input.dtype, device=input.device)
            c0 = lantern.zeros(layers, batch, self.hidden_size, dtype=input.dtype, device=input.device)
        else:
            h0, c0 = hx
            if batched and (h0.dim() != 3 or c0.dim() != 3):
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got ({h0.dim()}-D, "
                                   f"{c0.dim()}-D) tensors")
            if not batched:
                if h0.dim() != 2 or c0.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                       f"({h0.dim()}-D, {c0.dim()}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            self._check_scripted_state(h0, [layers, batch, h_size], "hidden[0]")
            self._check_scripted_state(c0, [layers, batch, self.hidden_size], "hidden[1]")
        output, h_n, c_n = lantern.lstm(input, [h0, c0], self._flat_weights, self.bias, self.num_layers,
                                        self.dropout, self.training, self.bidirectional, self.batch_first)
        if not batched:
            return output.squeeze(batch_dim), (h_n.squeeze(1), c_n.squeeze(1))
        return output, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit, gates r, z, n in that order: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
    h' = (1 - z) * n + z * h.

    `GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False)`;
    forward(input, hx=None) -> (output, h_n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx: Optional[Tensor] = None):
        if not lantern.jit.is_scripting():
            return self._forward(input, hx)
        return self._scripted_forward(input, hx)


class RNNCellBase(Module):
    """The parameters of a one-step cell: weight_ih (chunks * hidden, input), weight_hh (chunks * hidden, hidden)
    and, with bias, bias_ih and bias_hh, all U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(lantern.empty((num_chunks * hidden_size, input_size), **factory))
        self.weight_hh = Parameter(lantern.empty((num_chunks * hidden_size, hidden_size), **factory))
        if bias:
            self.bias_ih = Parameter(lantern.empty(num_chunks * hidden_size, **factory))
            self.bias_hh = Parameter(lantern.empty(num_chunks * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += f", bias={self.bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, name, input, states):
        """Check dims, add the batch dim to unbatched input and states; default states are zeros."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for label, s in states:
            if s is not None and s.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {s.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        out = []
        for _, s in states:
            if s is None:
                s = lantern.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            elif not batched:
                s = s.unsqueeze(0)
            out.append(s)
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for k, s in enumerate(out):
            if input.size(0) != s.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{k} batch size "
                                   f"{s.size(0)}")
            if s.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.size(1)}, expected "
                                   f"{self.hidden_size}")
        return batched, input, out


class RNNCell(RNNCellBase):
    """One Elman step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu); forward(input, hx=None) -> h'."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        batched, input, (hx,) = self._prepare("RNNCell", input, [("hidden", hx)])
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        pre = _linear(input, self.weight_ih, self.bias_ih) + _linear(hx, self.weight_hh, self.bias_hh)
        h = pre.tanh() if self.nonlinearity == "tanh" else pre.relu()
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; forward(input, (h, c)=None) -> (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        states = [("hx[0]", None), ("hx[1]", None)] if hx is None else [("hx[0]", hx[0]), ("hx[1]", hx[1])]
        batched, input, (h, c) = self._prepare("LSTMCell", input, states)
        gates = _linear(input, self.weight_ih, self.bias_ih) + _linear(h, self.weight_hh, self.bias_hh)
        h, c = _lstm_cell(gates, c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step; forward(input, hx=None) -> h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        batched, input, (hx,) = self._prepare("GRUCell", input, [("hidden", hx)])
        h = _gru_cell(_linear(input, self.weight_ih, self.bias_ih), _linear(hx, self.weight_hh, self.bias_hh), hx)
        return h if batched else h.squeeze(0)
