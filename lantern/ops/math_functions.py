"""Number-theory and floating-point functions (gcd, lcm, nextafter, ldexp, frexp), infinity and membership tests
(isposinf, isneginf, isin), and small products and norms built from other ops (addr, inner, dist, renorm,
diagflat).

>>> lantern.gcd(lantern.tensor([12, -9]), lantern.tensor([8, 6])).tolist()
[4, 3]
>>> lantern.frexp(lantern.tensor([8.0])).exponent.tolist(), lantern.ldexp(lantern.tensor([1.0]), lantern.tensor([3])).tolist()
([4], [8.0])
"""
from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .derivative import derivative, nondifferentiable
from .dispatcher import call
from .factory import like_strides
from .linalg_common import _into
from .meta_util import operands_result_type
from .pointwise_common import KEEP, _binary_meta, _not_for, _require_tensor, as_dtype
from .reduction import return_type, out_return_type
from .registry import COMPOSITES, composite, custom, get, structured


# ---- gcd, lcm, nextafter: binary pointwise ops ---------------------------------------------------------------

def _gcd_like(name):
    return _binary_meta(name, KEEP, _not_for(f"{name}_cpu", dt.BOOL, dt.FLOATING, dt.COMPLEX), False)


def _impl(name):
    """The kernel calling xp.<name> (gcd, lcm, nextafter) on both operands in the result dtype."""
    def impl(xp, out, dtype, a, b):
        getattr(xp, name)(as_dtype(xp, a, dtype), as_dtype(xp, b, dtype), out=out, casting="unsafe")
    impl.__name__ = name
    return impl


structured("gcd(Tensor self, Tensor other) -> Tensor", _gcd_like("gcd"), _impl("gcd"), pointwise=True)
structured("lcm(Tensor self, Tensor other) -> Tensor", _gcd_like("lcm"), _impl("lcm"), pointwise=True)
structured("nextafter(Tensor self, Tensor other) -> Tensor",
           _binary_meta("nextafter", KEEP, _not_for("nextafter_cpu", dt.BOOL, dt.INTEGRAL, dt.COMPLEX), False),
           _impl("nextafter"), pointwise=True)
nondifferentiable("gcd", "lcm")  # integer results only
derivative("nextafter", self="grad", other="zeros_like(grad)")  # a step of one ulp: locally the identity in self


def ldexp(input, other, *, out=None):
    """input · 2**other, in a floating dtype.

    >>> lantern.ldexp(lantern.tensor([3]), lantern.tensor([2])).tolist()
    [12.0]
    """
    _require_tensor("ldexp", input)  # torch's ldexp has no number overload (mul, which it calls, has)
    scale = call(get("pow"), (2.0, other))
    return call(get("mul"), (input, scale)) if out is None else call(get("mul.out"), (input, scale, out))


def ldexp_(self, other):
    return self.mul_(call(get("pow"), (2.0, other)))


composite("ldexp", ldexp)
composite("ldexp_", ldexp_)


frexp_rt = return_type("frexp", ["mantissa", "exponent"])
frexp_out_rt = out_return_type(frexp_rt)


def _frexp(backend, self):
    _require_tensor("frexp", self)
    if self.dtype.category != dt.FLOATING:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    strides = like_strides(self, None)
    mantissa = backend.empty_strided(self._size, strides, self.dtype)
    exponent = backend.empty_strided(self._size, strides, dt.int32)
    if backend.xp is not None:
        m, e = backend.xp.frexp(backend.array(self))
        backend.array(mantissa)[...] = m
        backend.array(exponent)[...] = e
    return frexp_rt(mantissa, exponent)


custom("frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)", _frexp, _frexp)
derivative("frexp.Tensor", name="FrexpBackward0", self="grad / exponent.to(grad.dtype).exp2()")


def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa · 2**exponent and 0.5 <= |mantissa| < 1 (int32 exponents)."""
    result = call(get("frexp.Tensor"), (input,))
    if out is None:
        return result
    return frexp_out_rt(*(_into(o, r, "frexp") for o, r in zip(out, result)))


composite("frexp", frexp)


# ---- isposinf, isneginf, isin -----------------------------------------------------------------------------

def _infinity_test(name, sign):
    def test(input, *, out=None):
        _require_tensor(name, input)
        if input.dtype.is_complex:
            raise RuntimeError(f"{name} does not support complex inputs.")
        if input.dtype.category != dt.FLOATING:
            result = input.new_zeros(input._size, dtype=dt.bool)
        else:
            result = input == sign * float("inf")
        return _into(out, result, name)
    test.__name__ = name
    test.__doc__ = f"True where input is {'+' if sign > 0 else '-'}infinity."
    return test


isposinf = composite("isposinf", _infinity_test("isposinf", 1))
isneginf = composite("isneginf", _infinity_test("isneginf", -1))


def _isin_operand(x, like):
    if isinstance(x, TensorImpl):
        if x.dtype.is_complex or x.dtype is dt.bool:
            raise RuntimeError(f"Unsupported input type encountered for isin(): {x.dtype.legacy}")
        return x
    return like.new_full((), x)


def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """True where an element of `elements` is among `test_elements` (one of them may be a number).

    Sorts test_elements once and looks each element up with searchsorted.

    >>> lantern.isin(lantern.tensor([1, 2, 3]), lantern.tensor([3, 1])).tolist()
    [True, False, True]
    """
    if not isinstance(elements, TensorImpl) and not isinstance(test_elements, TensorImpl):
        raise TypeError(f"isin() received an invalid combination of arguments - got ({type(elements).__name__}, "
                        f"{type(test_elements).__name__}), but expected (Tensor elements, Tensor test_elements) "
                        "or one of them a Scalar")
    like = elements if isinstance(elements, TensorImpl) else test_elements
    elements, test_elements = _isin_operand(elements, test_elements), _isin_operand(test_elements, like)
    common = operands_result_type((elements, test_elements))
    elements, test_elements = elements.to(common), test_elements.to(common)
    pool = test_elements.reshape(-1).sort().values
    if pool.numel() == 0:
        found = elements.new_zeros(elements._size, dtype=dt.bool)
    else:
        at = call(get("searchsorted"), (pool, elements, False, False, None, None)).clamp(max=pool.numel() - 1)
        found = pool[at] == elements
    return _into(out, found.logical_not() if invert else found, "isin")


composite("isin", isin, method=False)


# ---- addr, inner, dist, renorm, diagflat --------------------------------------------------------------------

def _addr_checks(self, vec1, vec2, beta, alpha):
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
    if self.dtype is not dt.bool:
        for name, s in (("beta", beta), ("alpha", alpha)):
            if isinstance(s, bool):
                raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if self.dtype.category == dt.INTEGRAL:
        for name, s in (("beta", beta), ("alpha", alpha)):
            if isinstance(s, float):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point "
                                   "number.")


def _addr_terms(self, vec1, vec2, beta, alpha):
    """beta·self and alpha·outer(vec1, vec2); beta == 0 ignores self's values (nan included)."""
    outer = vec1.unsqueeze(1) * vec2.unsqueeze(0)
    boolean = outer.dtype is dt.bool
    if alpha != 1:
        outer = outer & bool(alpha) if boolean else outer * alpha
    if beta == 0:
        kept = COMPOSITES["zeros_like"](self)
    elif beta == 1 or self.dtype is dt.bool:
        kept = self
    else:
        kept = self * beta
    return kept, outer


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta·input + alpha·(the outer product of vec1 and vec2).

    >>> lantern.addr(lantern.zeros(2, 2), lantern.tensor([1.0, 2.0]), lantern.tensor([3.0, 4.0])).tolist()
    [[3.0, 4.0], [6.0, 8.0]]
    """
    _addr_checks(input, vec1, vec2, beta, alpha)
    kept, outer = _addr_terms(input, vec1, vec2, beta, alpha)
    result = (kept | outer) if outer.dtype is dt.bool and kept.dtype is dt.bool else kept + outer
    return _into(out, result, "addr")


def addr_(self, vec1, vec2, *, beta=1, alpha=1):
    _addr_checks(self, vec1, vec2, beta, alpha)
    kept, outer = _addr_terms(self, vec1, vec2, beta, alpha)
    return self.copy_(kept + outer)


composite("addr", addr)
composite("addr_", addr_)


def inner(input, other, *, out=None):
    """The sum of products over the last dims of input and other (a product when one of them is 0-d).

    >>> lantern.inner(lantern.tensor([1.0, 2.0]), lantern.tensor([3.0, 4.0])).item()
    11.0
    """
    if input.dim() == 0 or other.dim() == 0:
        return call(get("mul"), (input, other)) if out is None else call(get("mul.out"), (input, other, out))
    if input._size[-1] != other._size[-1]:
        raise RuntimeError("inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input._size)} and {list(other._size)}")
    if input.dtype is not other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    return _into(out, COMPOSITES["tensordot"](input, other, ([-1], [-1])), "inner")


composite("inner", inner)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast together).

    >>> lantern.dist(lantern.tensor([3.0, 0.0]), lantern.tensor([0.0, 4.0])).item()
    5.0
    """
    return call(get("linalg_vector_norm"), (input - other, p, None, False, None))


composite("dist", dist)


def _renorm_checks(self, p, dim, maxnorm):
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if self.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.dim()} dimensions")


def _renorm_factor(self, p, dim, maxnorm):
    """Per slice along dim: maxnorm / norm where the slice's p-norm exceeds maxnorm, else 1."""
    d = dim % self.dim()
    others = [i for i in range(self.dim()) if i != d]
    norm = call(get("linalg_vector_norm"), (self, p, others, True, None))
    return call(get("where"), (norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)).to(self.dtype)


def renorm(input, p, dim, maxnorm, *, out=None):
    """input with every slice along dim whose p-norm exceeds maxnorm scaled down to norm maxnorm.

    >>> lantern.renorm(lantern.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0).tolist()[0]
    [0.6000000238418579, 0.800000011920929]
    """
    _renorm_checks(input, p, dim, maxnorm)
    return _into(out, input * _renorm_factor(input, p, dim, maxnorm), "renorm")


def renorm_(self, p, dim, maxnorm):
    _renorm_checks(self, p, dim, maxnorm)
    return self.mul_(_renorm_factor(self, p, dim, maxnorm))


composite("renorm", renorm)
composite("renorm_", renorm_)


def diagflat(input, offset=0):
    """A 2-d tensor with input's elements (flattened) on diagonal `offset`.

    >>> lantern.diagflat(lantern.tensor([[1, 2]])).tolist()
    [[1, 0], [0, 2]]
    """
    return COMPOSITES["diag"](input.reshape(-1), offset)


composite("diagflat", diagflat)
