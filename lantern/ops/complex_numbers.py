"""Complex numbers from real ones and back: view_as_real / view_as_complex (views that reinterpret the bytes),
complex and polar (built from two real tensors), angle, isreal, and the conjugate/negative-bit functions.

`conj` is a lazy view (a conjugate bit on the view's backend, see lantern/ops/math_bits.py and
docs/internals/conj-views.md); `resolve_conj`/`resolve_neg` materialise the bits, `is_conj`/`is_neg` report them.

>>> z = lantern.complex(lantern.tensor([1.0, 0.0]), lantern.tensor([0.0, 2.0]))
>>> z.tolist(), lantern.view_as_real(z).tolist(), lantern.angle(z).tolist()
([(1+0j), 2j], [[1.0, 0.0], [0.0, 2.0]], [0.0, 1.5707963705062866])
"""
import math

from ..core.math_bits import bits
from ..core import dtype as dt
from . import autocast
from .derivative import derivative
from .dispatcher import call
from .factory import not_implemented_for
from .linalg_common import _into
from . import math_bits  # noqa: F401  (registers _conj, _neg_view and the Conjugate/Negative fallback)
from .pointwise_common import _require_tensor
from .registry import COMPOSITES, composite, get, structured, view

_REAL_FOR_COMPLEX = (dt.float16, dt.float32, dt.float64)
_COMPLEX_OF = {dt.float16: dt.complex32, dt.float32: dt.complex64, dt.float64: dt.complex128}  # pairs viewed as one


# ---- view_as_real / view_as_complex ------------------------------------------------------------------------

def _view_as_real_meta(self):
    if not self.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return (self._size + (2,), tuple(2 * s for s in self._stride) + (1,), 2 * self._offset,
                    self.dtype.to_real())


def _view_as_complex_meta(self):
    if self.dtype not in _REAL_FOR_COMPLEX:
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, but got a tensor "
                           f"of scalar type: {self.dtype.legacy}")
    if not self._size or self._size[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if self._stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in self._stride[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return (self._size[:-1], tuple(s // 2 for s in self._stride[:-1]), self._offset // 2,
            _COMPLEX_OF[self.dtype])


view("view_as_real(Tensor(a) self) -> Tensor(a)", _view_as_real_meta, method=False)
view("view_as_complex(Tensor(a) self) -> Tensor(a)", _view_as_complex_meta, method=False)


def as_complex(t):
    return call(get("view_as_complex"), (t.contiguous(),))


def as_real(t):
    return call(get("view_as_real"), (t,))


derivative("view_as_real", self="as_complex(grad)", helpers={"as_complex": as_complex})
derivative("view_as_complex", self="as_real(grad)", helpers={"as_real": as_real})


# ---- complex, polar ----------------------------------------------------------------------------------------

def _check_parts(real, imag, second="imag"):
    _require_tensor("complex", real, 1, "real")
    _require_tensor("complex", imag, 2, second)
    if real.dtype not in _REAL_FOR_COMPLEX or imag.dtype not in _REAL_FOR_COMPLEX:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {real.dtype.legacy} "
                           f"and {imag.dtype.legacy}")
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {real.dtype.legacy} but got scalar type "
                           f"{imag.dtype.legacy} for second argument")


def complex(real, imag, *, out=None):
    """The complex tensor real + i·imag (broadcast together; both half, float or double, of one dtype).

    >>> lantern.complex(lantern.tensor([1.0]), lantern.tensor([2.0])).tolist()
    [(1+2j)]
    """
    _check_parts(real, imag)
    real, imag = COMPOSITES["broadcast_tensors"](real, imag)
    pairs = call(get("stack"), ((real, imag), -1))
    # torch's complex is one kernel: its view_as_complex step is not autocast's (which runs that view in float32)
    return _into(out, autocast.excluded(as_complex, pairs), "complex")


def polar(abs, angle, *, out=None):
    """The complex tensor abs·(cos(angle) + i·sin(angle)).

    >>> lantern.polar(lantern.tensor([2.0]), lantern.tensor([0.0])).tolist()
    [(2+0j)]
    """
    _check_parts(abs, angle, "angle")
    return _into(out, complex(abs * angle.cos(), abs * angle.sin()), "polar")


composite("complex", complex, method=False)
composite("polar", polar, method=False)


# ---- angle, isreal -----------------------------------------------------------------------------------------

def _angle_meta(self):
    _require_tensor("angle", self)
    d = self.dtype
    if d is dt.complex32:
        raise not_implemented_for("angle_cpu", d)
    return (self._size,
                      d.to_real() if d.is_complex else (dt.get_default_dtype() if d.category < dt.FLOATING else d))


def _angle(xp, out, dtype, a):
    """arg(z) for complex z; for real x: pi where x < 0, else 0, and nan stays nan."""
    if a.dtype.kind == "c":
        xp.copyto(out, xp.arctan2(a.imag, a.real), casting="unsafe")
    else:
        real = a.astype(dtype, copy=False)
        xp.copyto(out, xp.where(real < 0, math.pi, xp.where(real != real, real, 0)), casting="unsafe")


structured("angle(Tensor self) -> Tensor", _angle_meta, _angle, inplace=False, pointwise=True)


def angle_backward(grad, self):
    """0 for real inputs; for complex z, grad·i·z/|z|² (and 0 at z == 0)."""
    if not self.dtype.is_complex:
        return grad.new_zeros(self._size)
    mag2 = self.abs().square()
    zero = mag2 == 0
    return call(get("where"), (zero, 0, grad * self * 1j / call(get("where"), (zero, 1, mag2)))).to(self.dtype)


derivative("angle", self="angle_backward(grad, self)", helpers={"angle_backward": angle_backward})


def isreal(input):
    """True where an element has no imaginary part (every element of a real tensor).

    >>> lantern.isreal(lantern.tensor([1 + 0j, 1 + 1j])).tolist()
    [True, False]
    """
    _require_tensor("isreal", input)
    if not input.dtype.is_complex:
        return input.new_ones(input._size, dtype=dt.bool)
    return input.imag == 0


composite("isreal", isreal)


# ---- conjugate and negative bits (lantern/ops/math_bits.py sets and resolves them) ---------------------------

def conj(input):
    """The complex conjugate as a lazy view: same memory, sizes and strides, read conjugated (`is_conj()`); a real
    tensor itself.

    >>> x = lantern.tensor([1 + 2j])
    >>> y = lantern.conj(x)
    >>> y, y.is_conj(), y.data_ptr() == x.data_ptr()
    (tensor([1.-2.j]), True, True)
    """
    if not input.dtype.is_complex:
        return input
    return call(get("_conj"), (input,))


def _conj(input):
    """A conjugate view of input whatever its dtype (torch's private form of conj; conj leaves a real tensor as it
    is)."""
    return call(get("_conj"), (input,))


def _neg_view(input):
    """A lazy negation: a view of input's memory, read negated (`is_neg()`).

    >>> n = lantern._neg_view(lantern.tensor([1.0, -2.0]))
    >>> n, n.is_neg()
    (tensor([-1.,  2.]), True)
    """
    return call(get("_neg_view"), (input,))


def is_conj(input):
    """Whether input is a conjugate view (its memory is read conjugated)."""
    return bits(input)[0]


def is_neg(input):
    """Whether input is a negative view (its memory is read negated)."""
    return bits(input)[1]


def resolve_conj(input):
    """input with its conjugate bit applied: a new tensor holding the values if input is a conjugate view (it no
    longer aliases input's memory), else input itself.

    >>> y = lantern.tensor([1 + 2j]).conj().resolve_conj()
    >>> y, y.is_conj()
    (tensor([1.-2.j]), False)
    """
    return input.clone() if bits(input)[0] else input


def resolve_neg(input):
    """input with its negative bit applied (a new tensor), or input itself if it has none."""
    return input.clone() if bits(input)[1] else input


def conj_physical_(self):
    """Conjugate self in place; a real tensor is written too (its values unchanged), so that its version moves on
    and a leaf that requires grad is refused, as in torch."""
    return self.copy_(self.conj_physical())


composite("conj", conj)
composite("_conj", _conj)
composite("_neg_view", _neg_view)
composite("resolve_conj", resolve_conj)
composite("resolve_neg", resolve_neg)
composite("is_conj", is_conj)
composite("is_neg", is_neg)
composite("conj_physical_", conj_physical_)
