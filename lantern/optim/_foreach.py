"""How an optimizer picks between its readable `_single_tensor_<name>` loop and a `_multi_tensor_<name>` fast path,
and the raw-array access those fast paths share.

torch's `foreach` implementations update every parameter of a group with a few fused kernels instead of a handful
of ops per parameter. lantern's equivalents (`_multi_tensor_sgd` in sgd.py, `_multi_tensor_adam` in adam.py) skip
the dispatcher: each update is a few NumPy calls on the raw arrays, operation for operation the loop's arithmetic
(so results are bitwise equal), with the same version-counter bumps. They apply under no_grad with nothing
watching the dispatcher, to dense float32/float64 parameters whose state already exists (`arrays_apply` and each
path's `_multi_tensor_<name>_applies` say so); anywhere else the loop runs. Where numba is installed, the
common updates (SGD with momentum, Adam and AdamW without maximize or amsgrad) run as one numba loop per
parameter instead (`_sgd_compiled`, `_adam_compiled`, kernels in lantern/optim/_updates_numba.py), the same
operations in the same order, so again the loop's bits.

The choice, made by `use_multi_tensor`:
- `foreach=False`: always the single-tensor loop, as in torch.
- `foreach=True`: the multi-tensor path wherever it applies.
- `foreach=None` (the default): torch 2.13 asks `_default_to_fused_or_foreach`, which on CPU picks the
  single-tensor loop (its foreach kernels are for CUDA). lantern deliberately differs here and takes its
  multi-tensor path, because on CPU it is what makes a training step's optimizer cheap; the values are the loop's.
- Reference mode (`lantern.set_reference_mode(True)`, `LANTERN_REFERENCE=1`) or `differentiable=True`: always the
  loop.
- `fused=True` is checked against the other flags as torch checks it; lantern has no fused kernels, so the rule
  above picks the implementation.

>>> import lantern
>>> with lantern.reference_mode(False):
...     use_multi_tensor(None), use_multi_tensor(False)
(True, False)
>>> with lantern.reference_mode():
...     use_multi_tensor(True)
False
"""
import numpy as np

from ..core import dtype as dt
from ..core import intra_op
from ..core import reference
from ..core.state import tls
from ..ops.numba_kernels import optional_kernels

_DTYPES = (dt.float32, dt.float64)


def use_multi_tensor(foreach, differentiable=False):
    """Whether a functional optimizer may take its `_multi_tensor_<name>` path (see the module docstring)."""
    return reference.mode.fast and foreach is not False and not differentiable


def arrays_apply(params, grads):
    """Whether the multi-tensor paths may work on these params' and grads' raw arrays.

    They may under no_grad with nothing watching the dispatcher, for float32/float64 params with a grad of the same
    dtype, backend and shape (the loop's ops would check shapes), neither sparse nor inference tensors."""
    if tls.grad_enabled or tls.observed:
        return False
    for p, grad in zip(params, grads):
        backend = p._backend
        if (backend.xp is None or p.dtype not in _DTYPES or grad.dtype is not p.dtype or grad._backend is not backend
                or grad.is_sparse or p._is_inference or grad._size != p._size):
            return False
    return True


def array(t):
    """The tensor's NumPy (or CuPy) array: its storage seen with its sizes and strides; writes go to the tensor."""
    return t._backend.array(t)


def bump(*tensors):
    """Count one in-place write on each tensor's version counter, as the loop's in-place ops do."""
    for t in tensors:
        t._bump_version()


def scaled(xp, a, alpha):
    """`a` times alpha as add(..., alpha=) computes it: untouched for an alpha of 1."""
    return a if alpha == 1 else xp.multiply(a, alpha)


# Passes an update makes over a parameter's elements, about: what an element of it costs a thread.
_UPDATE_PASSES = 4


def on_flat_ranges(arrays, update):
    """update(*pieces) with the same flat range of each array, the ranges at once on the intra-op threads where
    that pays (an elementwise update gives the same bits however it is split); update(*arrays) where they are not
    all contiguous."""
    if not all(a.flags.c_contiguous for a in arrays):
        update(*arrays)
        return
    flat = [a.reshape(-1) for a in arrays]
    intra_op.parallel_chunks(flat[0].size, lambda start, stop: update(*(a[start:stop] for a in flat)),
                             grain=intra_op.grain(_UPDATE_PASSES))


def compiled_kernels(arrays):
    """The numba kernels of lantern.optim._updates_numba where they can take `arrays` (NumPy arrays, all
    C-contiguous, so `on_flat_ranges` hands them flat ranges), else None; also None without numba (the module is
    imported on first use: numba takes about half a second to import)."""
    if not all(type(a) is np.ndarray and a.flags.c_contiguous for a in arrays):
        return None
    return optional_kernels("_updates_numba", package=__package__)
