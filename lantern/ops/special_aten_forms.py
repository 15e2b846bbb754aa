"""Special functions computed the way ATen's CPU kernels compute them, where SciPy's (more accurate) values and
torch's differ beyond assert_close's tolerance.

- Hurwitz zeta(x, q), under special.zeta and polygamma(n >= 2): Cephes' algorithm in float64 (ATen's accumulation
  type), except that its first term q^-x is a power in q's own dtype, which costs float32 digits near negative q;
  and q = +inf gives NaN (the Euler-Maclaurin tail multiplies 0 by inf).
- Bessel J0, J1, Y0, Y1 beyond x = 5: Cephes' asymptotic form, but with the denominator of Q (Cephes' p1evl,
  whose leading coefficient 1 is implicit) evaluated without that leading term, as ATen's loops do, which moves
  the values near the zeros by up to ~1e-6; infinity gives NaN.

The coefficients are Cephes' (Stephen L. Moshier's Cephes Math Library, as SciPy also ships them).

>>> import numpy as np
>>> float(hurwitz_zeta(np, 2.0, np.array(1.0)))   # pi^2 / 6, as torch.special.zeta gives it
1.6449340668482266
"""
import math

import numpy as np

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
