"""Complex arithmetic as PyTorch's CPU kernels compute it, where NumPy's loops give other answers at infinite,
NaN and huge values (or round differently where parts cancel).

- multiply: ATen's loop multiplies complex numbers two ways. Over operands laid out as the output (and single
  values), in vector registers: the schoolbook product (ac - bd) + (ad + bc)i, each product rounded. Over strided
  operands, element by element in compiled code that fuses a multiply and an add (ac - bd rounded once), as
  NumPy's loop does. Where the products cancel the two differ: (1e20+1e20j)**2 in complex64 is nan+infj (inf -
  inf) over contiguous data, -inf+infj over strided data and in NumPy. (The few leftover elements at the end of a
  contiguous run, which ATen's compiled code finishes, are taken with the schoolbook product here too.)
- power: C's cpow, which ATen calls for a complex base and exponent: exp(y * log(x)), the product taken with C's
  rules for infinite factors (C99 Annex G, GCC's __mulsc3). NumPy's power short-cuts y == 0 (always 1), x == 0
  and small integer y (repeated products), so 0**0 is 1 in NumPy and nan+nanj in PyTorch.
- log1p and log_add_exp: c10's complex log1p (small arguments through a real log1p) and ATen's logaddexp
  helper (the larger real part factored out; NaN anywhere gives nan+nanj; equal infinite real parts handled
  apart).

Every function computes in the dtype of its operands (complex64 stays complex64, as c10::complex<float> does).

>>> import numpy as np
>>> x = np.array([1e20 + 1e20j], np.complex64)
>>> out = np.empty_like(x)
>>> multiply(np, out, x, x)
>>> out, x * x
(array([nan+infj], dtype=complex64), array([-inf+infj], dtype=complex64))
>>> power(np, np.array([0j, 2+0j]), np.array([0j, 3+0j]))
array([nan+nanj,  8. +0.j])
"""


def _pack(xp, real, imag):
    """A complex array (the complex dtype of `real`) from its parts, without multiplying either by 1j (which would
    turn an infinite part's 0 * inf into nan)."""
    out = xp.empty(real.shape, xp.result_type(real.dtype, 1j))
    out.real[...] = real
    out.imag[...] = imag
    return out


def _vectorised(x, out):
    """Whether ATen's loop reads operand x in vector registers: a single value, or laid out as the output is (the
    output dense)."""
    return (getattr(x, "size", 1) == 1
            or (x.shape == out.shape and x.strides == out.strides
                and (out.flags.c_contiguous or out.flags.f_contiguous)))


def multiply(xp, out, a, b):
    """out = a * b (complex arrays or numbers of out's dtype) as ATen's CPU loop multiplies: the schoolbook product
    where both operands are read in vector registers, NumPy's fused one where either is strided."""
    if _vectorised(a, out) and _vectorised(b, out):
        schoolbook_multiply(xp, out, a, b)
    else:
        xp.multiply(a, b, out=out)


def square(xp, out, a):
    """out = a * a, as multiply."""
    multiply(xp, out, a, a)


def schoolbook_multiply(xp, out, a, b):
    """out = a * b as (ac - bd) + (ad + bc)i: each product rounded, then the sum (no fused multiply-add)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    with xp.errstate(all="ignore"):
        real = ar * br - ai * bi
        imag = ar * bi + ai * br
    out.real[...] = real
    out.imag[...] = imag


def _box(xp, part, infinite):
    """C99 Annex G's "box" of an infinite factor: each part becomes ±1 if infinite, else ±0 (signs kept)."""
    return xp.where(infinite, xp.copysign(xp.where(xp.isinf(part), 1, 0).astype(part.dtype), part), part)


def _nan_to_signed_zero(xp, part, where):
    """part with its NaNs at `where` replaced by a zero of their sign bit (C99 Annex G's recovery step)."""
    return xp.where(where & xp.isnan(part), xp.copysign(xp.zeros((), part.dtype), part), part)


def c_multiply(xp, a, b):
    """a * b as C computes a complex product (GCC's __mulsc3 / __muldc3): the schoolbook product, and where both
    of its parts are NaN, infinities recovered: an infinite factor is boxed to ±1/±0 parts, NaN parts of the other
    factor become ±0, and the product is taken again times infinity.

    >>> import numpy as np
    >>> c_multiply(np, np.array([complex(np.inf, np.inf)]), np.array([2 + 0j]))
    array([inf+infj])
    """
    a, b = xp.broadcast_arrays(a, b)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    with xp.errstate(all="ignore"):
        ac, bd, ad, bc = ar * br, ai * bi, ar * bi, ai * br
        real, imag = ac - bd, ad + bc
        lost = xp.isnan(real) & xp.isnan(imag)
        if not lost.any():
            return _pack(xp, real, imag)
        a_infinite = xp.isinf(ar) | xp.isinf(ai)
        b_infinite = xp.isinf(br) | xp.isinf(bi)
        ar, ai = _box(xp, ar, a_infinite), _box(xp, ai, a_infinite)
        br, bi = _nan_to_signed_zero(xp, br, a_infinite), _nan_to_signed_zero(xp, bi, a_infinite)
        br, bi = _box(xp, br, b_infinite), _box(xp, bi, b_infinite)
        ar, ai = _nan_to_signed_zero(xp, ar, b_infinite), _nan_to_signed_zero(xp, ai, b_infinite)
        overflowed = ~(a_infinite | b_infinite) & (xp.isinf(ac) | xp.isinf(bd) | xp.isinf(ad) | xp.isinf(bc))
        ar, ai, br, bi = (_nan_to_signed_zero(xp, part, overflowed) for part in (ar, ai, br, bi))
        recover = lost & (a_infinite | b_infinite | overflowed)
        real = xp.where(recover, xp.inf * (ar * br - ai * bi), real)
        imag = xp.where(recover, xp.inf * (ar * bi + ai * br), imag)
    return _pack(xp, real, imag)


def power(xp, x, y):
    """x ** y as C's cpow: exp(y * log(x)) with C's complex product; x and y of one complex dtype."""
    with xp.errstate(all="ignore"):
        return xp.exp(c_multiply(xp, y, xp.log(x)))


def log1p(xp, z):
    """log(1 + z) as c10's complex log1p: the angle is atan2(y, x + 1); the modulus' log is log1p(x(x + 2) + y²)/2
    where |z| < 0.5 (x when that sum underflows to 0), else log(hypot(x + 1, y))."""
    x, y = z.real, z.imag
    with xp.errstate(all="ignore"):
        angle = xp.arctan2(y, x + 1)
        r = x * (x + 2) + y * y
        small = xp.where(r == 0, x, xp.log1p(r) * x.dtype.type(0.5))
        log_modulus = xp.where(xp.abs(z) < 0.5, small, xp.log(xp.hypot(x + 1, y)))
    return _pack(xp, log_modulus, angle)


def log_add_exp(xp, x, y):
    """log(exp(x) + exp(y)) as ATen's complex logaddexp: max + log1p(exp(min - max)), min and max by real part;
    NaN in either part of either operand gives nan+nanj; equal infinite real parts give min (both -inf) or
    log(exp(min) + exp(max)) (both +inf)."""
    x, y = xp.broadcast_arrays(x, y)
    x_smaller = x.real < y.real
    low, high = xp.where(x_smaller, x, y), xp.where(x_smaller, y, x)
    with xp.errstate(all="ignore"):
        result = log1p(xp, xp.exp(low - high)) + high
        both_infinite = ~xp.isfinite(low.real) & (low.real == high.real)
        if both_infinite.any():
            result = xp.where(both_infinite, xp.where(low.real < 0, low, xp.log(xp.exp(low) + xp.exp(high))), result)
    return xp.where(xp.isnan(x) | xp.isnan(y), xp.asarray(complex(xp.nan, xp.nan), x.dtype), result)
