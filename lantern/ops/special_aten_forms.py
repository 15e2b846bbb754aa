"""Special functions computed the way ATen's CPU kernels compute them, where SciPy's (more accurate) values and
torch's differ beyond assert_close's tolerance.

- Hurwitz zeta(x, q), under special.zeta and polygamma(n >= 2): Cephes' algorithm in float64 (ATen's accumulation
  type), except that its first term q^-x is a power in q's own dtype, which costs float32 digits near negative q;
  and q = +inf gives NaN (the Euler-Maclaurin tail multiplies 0 by inf).
- Bessel J0, J1, Y0, Y1 beyond x = 5: Cephes' asymptotic form, but with the denominator of Q (Cephes' p1evl,
  whose leading coefficient 1 is implicit) evaluated without that leading term, as ATen's loops do, which moves
  the values near the zeros by up to ~1e-6; infinity gives NaN.
- Airy Ai: Cephes' three forms in the input's dtype, the left one with the same missing leading terms.
- erfcx in float32: the Faddeeva algorithm's double polynomials at ATen's float32-rounded argument.

The coefficients are Cephes' (Stephen L. Moshier's Cephes Math Library, as SciPy also ships them). Two helpers
match the last bits of float32 kernels: fused_multiply_add (the compiled kernels' a * b + c is one instruction)
and c_library (sin, exp, ... rounded as the C library's float versions round them).

>>> import numpy as np
>>> float(hurwitz_zeta(np, 2.0, np.array(1.0)))   # pi^2 / 6, as torch.special.zeta gives it
1.6449340668482266
"""
import math
import struct

import numpy as np

from .pointwise_common import special

MACHINE_EPSILON = 1.11022302462515654042e-16  # Cephes' MACHEP, the stopping test of both of zeta's sums

# B_2k / (2k)! inverted, the Euler-Maclaurin coefficients of Cephes' zeta
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
           -7.1661652561756670113e18)


SHORT_SUM_STEPS = 64  # zeta's direct sum runs for all elements together up to here; longer ones one by one


def hurwitz_zeta(xp, x, q):
    """zeta(x, q) = sum over k >= 0 of (k + q)^-x, elementwise: x and q (arrays of the compute dtype, or numbers)
    broadcast, the result in the arrays' dtype."""
    dtype = next(v.dtype for v in (q, x) if hasattr(v, "dtype"))
    x, q = xp.broadcast_arrays(xp.asarray(x, dtype=dtype), xp.asarray(q, dtype=dtype))
    with xp.errstate(all="ignore"):
        total = (q ** -x).astype(np.float64)  # ATen's std::pow(q, -x) on its scalar_t arguments
        x64, a = x.astype(np.float64), q.astype(np.float64)
        # ATen's tests in order: x == 1 gives inf, x < 1 NaN, q a pole (0, -1, ...) inf, q <= 0 with x not whole NaN
        cases = [(x == 1, math.inf), (x < 1, math.nan), ((q <= 0) & (q == xp.floor(q)), math.inf),
                 ((q <= 0) & (x != xp.floor(x)), math.nan)]
        result, open_ = xp.full(q.shape, math.nan), xp.ones(q.shape, bool)  # open_: not decided yet
        for condition, value in cases:
            result, open_ = xp.where(open_ & condition, value, result), open_ & ~condition
        result, open_, total, term, a = _direct_sum(xp, x64, a, total, result, open_)
        w = a                                   # then the Euler-Maclaurin tail
        total = total + term * w / (x64 - 1.0) - 0.5 * term
        factor, k = xp.ones(q.shape), 0.0
        for coefficient in _ZETA_A:
            factor = factor * (x64 + k)
            term = term / w
            t = factor * term / coefficient
            total = total + t
            small = open_ & (xp.abs(t / total) < MACHINE_EPSILON)
            result, open_ = xp.where(small, total, result), open_ & ~small
            factor = factor * (x64 + k + 1.0)
            term = term / w
            k += 2.0
        result = xp.where(open_, total, result)
    return result.astype(q.dtype)


def _stops(xp, term, total):
    """Cephes' test that a term no longer changes the sum."""
    return (-MACHINE_EPSILON * total < term) & (term < MACHINE_EPSILON * total)


def _direct_sum(xp, x, a, total, result, open_):
    """zeta's first phase: total += (q + k)^-x for k = 1, 2, ..., at least 9 terms and on until q + k > 9, an
    element stopping (its result decided) once a term is negligible. Returns (result, open_, total, last term, a).

    Elements that need more than SHORT_SUM_STEPS terms (q far below 0) are summed one by one, over all their
    terms at once with a cumulative sum (which adds them in order, as the loop does); the others step together."""
    long = open_ & (10.0 - a > SHORT_SUM_STEPS)
    term = xp.zeros(a.shape)
    steps = 0
    while True:
        summing = open_ & ~long & ((steps < 9) | (a <= 9.0))
        if not summing.any():
            break
        a = xp.where(summing, a + 1.0, a)
        term = xp.where(summing, a ** -x, term)
        total = xp.where(summing, total + term, total)
        small = summing & _stops(xp, term, total)
        result, open_ = xp.where(small, total, result), open_ & ~small
        steps += 1
    for i in xp.flatnonzero(long).tolist():
        where = xp.unravel_index(i, a.shape)
        points = a[where] + xp.arange(1.0, math.floor(10.0 - a[where]) + 1)
        terms = points ** -x[where]
        totals = xp.cumsum(xp.concatenate([total[where][None], terms]))[1:]
        small = _stops(xp, terms, totals)
        if small.any():
            result[where], open_[where] = totals[int(xp.argmax(small))], False
        else:
            total[where], term[where], a[where] = totals[-1], terms[-1], points[-1]
    return result, open_, total, term, a


# ---- Bessel J0, J1, Y0, Y1 beyond x = 5 ------------------------------------------------------------------------

_BESSEL_ASYMPTOTIC = {  # order: (PP, PQ, QP, QQ without its leading 1, z(x) as ATen rounds it, the phase)
    0: ((7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
         5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
         9.99999999999999997821e-01),
        (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
         5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
         1.00000000000000000218e+00),
        (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
         -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
         -5.14105326766599330220e+01, -6.05014350600728481186e+00),
        (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
         7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
         2.42005740240291393179e+02),
        lambda x: 25.0 / (x * x), math.pi / 4),
    1: ((7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
         5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
         1.00000000000000000254e+00),
        (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
         5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
         9.99999999999999997461e-01),
        (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
         3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
         2.11688757100572135698e+02, 2.52070205858023719784e+01),
        (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
         9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
         3.36093607810698293419e+02),
        lambda x: 5.0 / x * (5.0 / x), 3 * math.pi / 4),
}


def _polynomial(coefficients, z):
    """Horner's rule from 0, as ATen's loops run it (highest power first)."""
    total = 0.0
    for c in coefficients:
        total = total * z + c
    return total


def fused_multiply_add(xp, a, b, c):
    """a * b + c rounded once, as the fused multiply-add instruction that ATen's CPU kernels (compiled for AVX2,
    which has FMA) use for a * b + c and a * b - c. float32 operands go through float64, where their product is
    exact (the sum is then rounded twice, which differs from one rounding only in rare halfway cases); NumPy has
    no fused multiply-add, so float64 operands get a * b + c, rounded twice.

    >>> import numpy as np
    >>> a = np.float32(1 + 2 ** -12)
    >>> float(fused_multiply_add(np, a, a, np.float32(-1))) == 2 ** -11 + 2 ** -24   # a * a - 1 would lose 2^-24
    True
    """
    if xp.result_type(a, b) != np.float32:
        return a * b + c
    return (xp.asarray(a, dtype=np.float64) * b + c).astype(np.float32)


def c_library(xp, function, x):
    """function(x) (xp.sin, xp.exp, ...) rounded as the C library's function of x's dtype rounds it: float32
    arguments are evaluated in float64 and rounded, as glibc's float functions (correctly rounded but for rare
    cases) give them; NumPy's own float32 sin, cos and exp are vectorised approximations a few ulp off."""
    if x.dtype != np.float32:
        return function(x)
    return function(x.astype(np.float64)).astype(np.float32)


def c_library_acos(xp, y):
    """acos(y) as the C library computes it in y's dtype: xp.arccos for float64; for float32 glibc's acosf, which is
    fdlibm's (a rational approximation R(z) of (asin(sqrt z) - sqrt z) / sqrt z in float32, on three ranges of y),
    and which is up to 1 ulp off the correctly rounded value in ~7% of cases, ulps that Chebyshev's trigonometric
    form multiplies by the degree. (glibc 2.41 made acosf correctly rounded: c_library's rounding is that one.)

    >>> import numpy as np
    >>> c_library_acos(np, np.array([-0.9417085, 0.25, 0.75], dtype=np.float32)).tolist()
    [2.798469305038452, 1.3181160688400269, 0.722734272480011]
    """
    if y.dtype != np.float32:
        return xp.arccos(y)
    one, half, two = np.float32(1), np.float32(0.5), np.float32(2)
    with xp.errstate(all="ignore"):
        central = _FDLIBM_PIO2_HI - (y - (_FDLIBM_PIO2_LO - y * _fdlibm_acos_ratio(y * y)))   # |y| < 1/2
        z = (one + y) * half                                                                   # y <= -1/2
        s = xp.sqrt(z)
        below = _FDLIBM_PI - two * (s + (_fdlibm_acos_ratio(z) * s - _FDLIBM_PIO2_LO))
        z = (one - y) * half                                                                   # y >= 1/2
        s = xp.sqrt(z)
        s_high = (s.view(np.uint32) & np.uint32(0xFFFFF000)).view(np.float32)   # s with its low 12 bits cleared
        above = two * (s_high + (_fdlibm_acos_ratio(z) * s + (z - s_high * s_high) / (s + s_high)))
    result = xp.where(xp.abs(y) < half, central, xp.where(y < 0, below, above))
    return xp.where(y == 1, np.float32(0), xp.where(xp.abs(y) > one, np.float32(math.nan), result))


def _float32_of_bits(bits):
    return np.float32(struct.unpack("<f", struct.pack("<I", bits))[0])


# fdlibm's float constants, by their bits: pi and pi/2 (as a high and a low part) rounded down, then R's numerator
# and denominator
_FDLIBM_PI, _FDLIBM_PIO2_HI, _FDLIBM_PIO2_LO = (_float32_of_bits(b) for b in (0x40490FDA, 0x3FC90FDA,
                                                                                          0x33A22168))
_FDLIBM_P = tuple(_float32_of_bits(b) for b in (0x3E2AAAAB, 0xBEA6B090, 0x3E4E0AA8, 0xBD241146,
                                                            0x3A4F7F04, 0x3811EF08))
_FDLIBM_Q = tuple(_float32_of_bits(b) for b in (0xC019D139, 0x4001572D, 0xBF303361, 0x3D9DC62E))


def _fdlibm_acos_ratio(z):
    """R(z) = z P(z) / (1 + z Q(z)), nested from the innermost coefficient out, in float32."""
    p = _FDLIBM_P[-1]
    for c in reversed(_FDLIBM_P[:-1]):
        p = c + z * p
    q = _FDLIBM_Q[-1]
    for c in reversed(_FDLIBM_Q[:-1]):
        q = c + z * q
    return z * p / (np.float32(1) + z * q)


def _fused_polynomial(xp, coefficients, z):
    """Horner's rule from 0, each step total * z + c one fused multiply-add (c rounded to z's dtype first)."""
    total = xp.zeros_like(z)
    for c in coefficients:
        total = fused_multiply_add(xp, total, z, z.dtype.type(c))
    return total


def bessel_asymptotic(xp, x, order, second_kind):
    """J_order(x) (Y_order with `second_kind`) for x > 5 as ATen computes it: Cephes' P and Q forms,
    sqrt(2 / (pi x)) (P cos(x - phase) - 5/x Q sin(x - phase)) (for Y: P sin + 5/x Q cos), with the denominator
    of Q lacking Cephes' leading z^7 term."""
    pp, pq, qp, qq, z_of, phase = _BESSEL_ASYMPTOTIC[order]
    z = z_of(x)
    p, q = _polynomial(pp, z) / _polynomial(pq, z), _polynomial(qp, z) / _polynomial(qq, z)
    shifted = x - phase
    if second_kind:
        wave = p * xp.sin(shifted) + 5.0 / x * q * xp.cos(shifted)
    else:
        wave = p * xp.cos(shifted) - 5.0 / x * q * xp.sin(shifted)
    return wave * 0.797884560802865355879892119868763737 / xp.sqrt(x)


# ---- Airy Ai ---------------------------------------------------------------------------------------------------

# Cephes' rational approximations: AN/AD for x >= 2.09, AFN/AFD and AGN/AGD (the modulus and phase) for x < -2.09
_AIRY_AN = (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
            1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
            1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AIRY_AD = (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
            1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
            1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AIRY_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
             -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
             -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AIRY_AFD = (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
             9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
             4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AIRY_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
             9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
             5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
             8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AIRY_AGD = (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
             5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
             4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
             4.91834570062930015649e-09)
_AIRY_C1, _AIRY_C2 = 0.355028053887817239260, 0.258819403792806798405   # Ai(0) and -Ai'(0)
_INVERSE_SQRT_PI = 5.64189583547756286948e-01


def airy_ai(xp, x):
    """Ai(x) as ATen computes it, in x's dtype (float32 math for float32): Cephes' three forms, with the
    denominators AFD and AGD of the left one lacking their leading 1 (as the Bessel Q above), which moves values
    left of -2.09 by up to ~3e-6; 0 beyond x = 103.892 and NaN at both infinities. Its Horner steps and its last
    a * b - c are fused multiply-adds, as the compiled kernel's are (fused_multiply_add).

    - x < -2.09: sin/cos of 2/3 (-x)^1.5 + pi/4 weighted by the modulus and phase approximations;
    - 2.09 <= x <= 8.3203353: AN/AD times exp(-2/3 x^1.5) (the Maclaurin series is summed there too, unused);
    - otherwise Ai(0) f(x) - (-Ai'(0)) g(x), with f and g the Maclaurin series of the two solutions, summed until
      an element's last term of f is within machine epsilon of f.

    >>> import numpy as np
    >>> [round(float(v), 6) for v in airy_ai(np, np.array([-3.0, 0.0, 1.0, 4.0]))]
    [-0.378814, 0.355028, 0.135292, 0.000952]
    """
    one = x.dtype.type(1.0)
    with xp.errstate(all="ignore"):
        zeta = x * xp.sqrt(-x) * -2.0 / 3.0                       # 2/3 (-x)^1.5 left of 0, NaN right of it
        z = one / zeta
        zz = z * z
        modulus = one + zz * _fused_polynomial(xp, _AIRY_AFN, zz) / _fused_polynomial(xp, _AIRY_AFD, zz)
        phase = z * _fused_polynomial(xp, _AIRY_AGN, zz) / _fused_polynomial(xp, _AIRY_AGD, zz)
        t = zeta + 0.25 * x.dtype.type(math.pi)
        wave = fused_multiply_add(xp, c_library(xp, xp.sin, t), modulus, -(c_library(xp, xp.cos, t) * phase))
        left = _INVERSE_SQRT_PI / xp.sqrt(xp.sqrt(-x)) * wave

        zeta = x * xp.sqrt(x) * 2.0 / 3.0
        ratio = _fused_polynomial(xp, _AIRY_AN, one / zeta) / _fused_polynomial(xp, _AIRY_AD, one / zeta)
        right = _INVERSE_SQRT_PI * ratio / (2.0 * xp.sqrt(xp.sqrt(x)) * c_library(xp, xp.exp, zeta))

        f, g = _airy_series(xp, x, (x >= -2.09) & (x < 2.09))
        series = fused_multiply_add(xp, x.dtype.type(_AIRY_C1), f, -(_AIRY_C2 * g))
    result = xp.where(x < -2.09, left, xp.where(x >= 2.09, right, series))
    return xp.where(xp.isinf(x), math.nan, xp.where(x > 103.892, 0.0, result)).astype(x.dtype)


def _airy_series(xp, x, going):
    """f = 1 + x^3/3! + 1*4 x^6/6! + ..., g = x + 2 x^4/4! + 2*5 x^7/7! + ..., summed where `going`, each element
    stopping once |last term of f / f| <= machine epsilon of x's dtype."""
    eps = np.finfo(x.dtype).eps
    z = x * x * x
    f, g, m, n = xp.ones_like(x), x.copy(), xp.ones_like(x), x.copy()
    k = xp.ones_like(x)
    while going.any():
        m1 = m * z / (k + 1.0)
        n1 = n * z / (k + 2.0)
        m1 = m1 / (k + 2.0)
        f1 = f + m1
        n1 = n1 / (k + 3.0)
        m, n = xp.where(going, m1, m), xp.where(going, n1, n)
        f, g, k = xp.where(going, f1, f), xp.where(going, g + n1, g), xp.where(going, k + 3.0, k)
        going = going & (xp.abs(m / f) > eps)
    return f, g


# ---- erfcx -------------------------------------------------------------------------------------------------------

def erfcx(xp, x):
    """exp(x^2) erfc(x) as ATen computes it: Steven G. Johnson's Faddeeva erfcx, which SciPy's erfcx also is.
    float64 is SciPy's. For float32, ATen's float arithmetic meets the double constants of the algorithm:

    - 0 <= x <= 50: Chebyshev polynomials in y = 4 / (4 + x), with double coefficients, so evaluated in double,
      but at y100 = 400 / (4 + x) rounded to float32: SciPy's double erfcx at the x that y100 stands for exactly;
    - x < 0: 2 exp(x^2) - (that at -x) in float32 (the C library's expf), 2 exp(x^2) below -6.1, inf below -26.7;
    - x > 50: the continued fraction (in double: within ~2 ulp of ATen's), and 1/(sqrt(pi) x) beyond 5e7.

    >>> import numpy as np
    >>> [round(float(v), 6) for v in erfcx(np, np.array([-1.0, 0.0, 2.0, 100.0], dtype=np.float32))]
    [5.00898, 1.0, 0.255396, 0.005642]
    """
    sp = special(xp)
    if x.dtype != np.float32:
        return sp.erfcx(x)
    f32 = np.float32
    with xp.errstate(all="ignore"):
        y100 = f32(400) / (f32(4) + xp.abs(x))                                   # ATen's 400 / (4 - x) for x < 0
        chebyshev = sp.erfcx(400.0 / y100.astype(np.float64) - 4.0).astype(f32)
        twice_exp = f32(2) * c_library(xp, xp.exp, x * x)
        wide = x.astype(np.float64)                               # ATen compares x with double constants
        negative = xp.where(wide < -26.7, math.inf, xp.where(wide < -6.1, twice_exp, twice_exp - chebyshev))
        continued_fraction = sp.erfcx(wide).astype(f32)
        positive = xp.where(x > 5e7, f32(_INVERSE_SQRT_PI) / x, xp.where(x > 50, continued_fraction, chebyshev))
    return xp.where(x >= 0, positive, negative)


# ---- I0 and I1 in float32 ----------------------------------------------------------------------------------------

def bessel_i(name):
    """The kernel of scipy.special.<name> (i0 or i1) with ATen's float32 range: ATen computes I0 and I1 as exp(|x|)
    times a Chebyshev series in the input's dtype, so in float32 they are infinite once expf(|x|) overflows
    (|x| > 88.72), though I0 and I1 stay below float32's largest value up to |x| ~ 91.

    >>> import numpy as np
    >>> [float(f"{v:.4g}") for v in bessel_i("i0")(np, np.array([88.0, 89.0, -89.0, np.inf], dtype=np.float32))]
    [7.034e+36, inf, inf, nan]
    """
    def kernel(xp, x):
        value = getattr(special(xp), name)(x)
        if x.dtype != np.float32:
            return value
        overflows = xp.isinf(c_library(xp, xp.exp, xp.abs(x))) & xp.isfinite(x)   # I(+-inf) stays NaN
        return xp.where(overflows, xp.copysign(x.dtype.type(math.inf), value), value)
    kernel.__name__ = name
    return kernel
