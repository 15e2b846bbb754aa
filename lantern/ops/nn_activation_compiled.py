"""GELU's compiled specialisations for `gelu(x)` (approximate='none') on float32, each a numba kernel
(nn_activation_numba) in flat ranges on the intra-op threads:

- the forward computes the readable x·Φ(x) with SciPy's ndtr bit for bit (Cephes' ndtr ported, libm's exp), in
  a tenth to a third of its time. Bit equality matters: a compiled graph (torch.compile) computes GELU's values with
  the readable kernels, and a forward by PyTorch's formula (erf within 1.5e-7) made eager and compiled training
  differ from the third step on;
- the backward computes what PyTorch's vectorised kernel computes, instead of the readable derivative formula
  _gelu_grad's five ops.

The readable code runs in reference mode, for float64 and half precision, for the tanh approximation, without numba,
and (the backward) where a backward builds a graph (create_graph).

>>> import lantern.nn.functional as F
>>> x = lantern.tensor([-1.0, 0.0, 2.0], requires_grad=True)
>>> y = F.gelu(x)
>>> y.sum().backward()
>>> [round(v, 4) for v in y.tolist()], [round(v, 4) for v in x.grad.tolist()]
([-0.1587, 0.0, 1.9545], [-0.0833, 0.5, 1.0852])
"""
import numpy as np

from ..core import intra_op
from ..core.reference import mode, specialisation
from .derivative_specialisation import on_float_arrays
from .numba_kernels import optional_kernels


def _kernels():
    return optional_kernels("nn_activation_numba")


def gelu_compiled_applies(xp, out, x, approximate):
    """Whether gelu_compiled computes this forward: fast paths on, numba installed, approximate='none', row-major
    float32 NumPy arrays."""
    return (mode.fast and approximate == "none" and xp is np and x.dtype == np.float32 and out.dtype == np.float32
            and x.flags.c_contiguous and out.flags.c_contiguous and _kernels() is not None)


@specialisation(replaces="gelu's readable kernel x·ndtr(x) (SciPy's ndtr, ≈ 15 ns an element), with its bits",
                when="gelu_compiled_applies(xp, out, x, approximate): fast paths on, numba installed, "
                     "approximate='none', row-major float32 NumPy arrays",
                parity_test="tests/test_gelu_compiled.py::test_compiled_gelu_has_the_readable_bits",
                ops=("gelu",))
def gelu_compiled(x, out):
    """out = gelu(x) by nn_activation_numba.gelu_forward, in flat ranges on the intra-op threads."""
    x_flat, out_flat = x.reshape(-1), out.reshape(-1)
    forward = _kernels().gelu_forward
    intra_op.parallel_chunks(out.size, lambda start, stop: forward(x_flat[start:stop], out_flat[start:stop]),
                             grain=intra_op.ELEMENTS_PER_CHUNK)


def gelu_backward_applies(grad, self, approximate):
    """Whether gelu_backward_on_arrays serves this backward: approximate='none', contiguous float32 tensors of one
    shape on the NumPy backend, numba installed (fast paths and no create_graph: the derivative's own check)."""
    return (approximate == "none" and on_float_arrays(grad, self) and grad.dtype.np == np.float32
            and grad._backend.xp is np and grad._size == self._size and grad.is_contiguous()
            and self.is_contiguous() and _kernels() is not None)


@specialisation(replaces="gelu's derivative _gelu_grad: grad·(Φ(x) + x·φ(x)) in five lantern ops",
                when="backward without create_graph, fast paths on; gelu_backward_applies(grad, self, approximate)",
                parity_test="tests/test_gelu_compiled.py::test_compiled_gelu_backward_matches_the_readable_one",
                ops=("gelu",))
def gelu_backward_on_arrays(grad, self, approximate):
    """gelu's input gradient by nn_activation_numba.gelu_backward, in flat ranges on the intra-op threads."""
    backend = grad._backend
    out = backend.empty(grad._size, grad.dtype)
    g, x, o = (backend.array(t).reshape(-1) for t in (grad, self, out))
    backward = _kernels().gelu_backward
    intra_op.parallel_chunks(len(o), lambda start, stop: backward(g[start:stop], x[start:stop], o[start:stop]),
                             grain=intra_op.ELEMENTS_PER_CHUNK)
    return out
