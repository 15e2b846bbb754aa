"""GELU's compiled backward: the input gradient of `gelu(x)` (approximate='none') on float32 as one numba pass
(nn_activation_numba), computing what PyTorch's vectorised kernel computes, instead of the readable derivative
formula _gelu_grad's five ops. The readable formula runs in reference mode, for float64 and half precision, for the
tanh approximation, without numba, and where a backward builds a graph (create_graph).

The forward keeps the readable x·Φ(x) (SciPy's ndtr): a compiled graph (torch.compile) computes GELU's values with
the readable kernels, and a forward by PyTorch's formula (erf within 1.5e-7) made eager and compiled training
differ from the third step on.

>>> import lantern.nn.functional as F
>>> x = lantern.tensor([-1.0, 0.0, 2.0], requires_grad=True)
>>> y = F.gelu(x)
>>> y.sum().backward()
>>> [round(v, 4) for v in y.tolist()], [round(v, 4) for v in x.grad.tolist()]
([-0.1587, 0.0, 1.9545], [-0.0833, 0.5, 1.0852])
"""
import numpy as np

from ..core import intra_op
from ..core.reference import specialisation
from .derivative_specialisation import on_float_arrays
from .numba_kernels import optional_kernels


def _kernels():
    return optional_kernels("nn_activation_numba")


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
