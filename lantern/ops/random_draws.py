"""PyTorch's CPU sampling algorithms, so that a seed gives torch's numbers.

Every sampler reads 32-bit words from the generator's Mersenne Twister (lantern.core.mt19937) and turns them into
values the way ATen's CPU kernels do (`TransformationHelper.h`, `DistributionsHelper.h`, `DistributionTemplates.h`):

- a uniform float takes the low 24 bits of one word times 2**-24 (float16 and bfloat16 round that float32); a
  uniform double the low 53 bits of a 64-bit draw (two words);
- `normal_` on a contiguous tensor of 16 or more elements fills it with uniforms, then Box-Muller transforms each
  block of 16 (the first 8 with the last 8), redrawing the last 16 when the size is not a multiple of 16; smaller
  or strided tensors draw one double normal at a time, which draws a pair and keeps the second for the next call;
- integers in [low, high) are a word modulo the range (a 64-bit draw when the range reaches 2**32);
- exponential, geometric, Cauchy and Bernoulli(p) apply their inverse CDF to a uniform double (Bernoulli with a
  tensor of probabilities compares a uniform float);
- randperm swaps element i with one drawn from [i, n), as the Fisher-Yates shuffle;
- multinomial inverts the cumulative distribution with a uniform double per sample, or, without replacement (and
  for a single sample), takes the top k of p / Exponential(1);
- torch.distributions' Gamma (Marsaglia and Tsang) and binomial (NumPy's sampler seeded from the generator) are
  lantern's own streams: only their statistics match torch's.

Values are produced in the order ATen visits the elements: the tensor's memory order. Where ATen computes in
float32 the result can differ from torch's in the last bit or two (its vectorised log and cos round differently).

>>> g = lantern.Generator().manual_seed(0)
>>> unit_uniform(g, 3, np.float32)                 # torch.manual_seed(0); torch.rand(3)
array([0.4962566 , 0.7682218 , 0.08847743], dtype=float32)
"""
import math

import numpy as np

from ..core.reference import mode, specialisation
from .numba_kernels import optional_kernels

_MASK24 = np.uint64((1 << 24) - 1)
_MASK53 = np.uint64((1 << 53) - 1)


# ---- uniform ----------------------------------------------------------------------------------------------------

def unit_uniform(generator, n, real):
    """n draws of uniform_real_distribution(0, 1) before scaling: float64 values for double, float32 for the other
    float types."""
    if compiled_draws_apply(generator, n):
        return unit_uniform_compiled(generator, n, real)
    if np.dtype(real) == np.float64:
        return (generator.engine.random64(n) & _MASK53).astype(np.float64) * 2.0 ** -53
    return (generator.engine.random(n) & _MASK24).astype(np.float32) * np.float32(2.0 ** -24)


def words(generator, n):
    """n 32-bit words of the generator's stream (uint64 values)."""
    if compiled_draws_apply(generator, n):
        return words_compiled(generator, n)
    return generator.engine.random(n)


# ---- the same draws made by compiled kernels (random_numba.py) --------------------------------------------------

# Below this many values a draw costs microseconds either way, and a program need not import numba for it.
COMPILED_FROM = 4096


def compiled_draws_apply(generator, n):
    """Whether random_numba's kernels draw these n values: fast paths on, n ≥ COMPILED_FROM, numba installed, and
    the generator's state reachable in place (MT19937.state_in_place)."""
    return (n >= COMPILED_FROM and mode.fast and _compiled_kernels() is not None
            and generator.engine.state_in_place() is not None)


def _compiled_kernels():
    return optional_kernels("random_numba")


@specialisation(replaces="random_draws.words: NumPy's MT19937.random_raw (≈ 5 ns a word)",
                when="compiled_draws_apply(generator, n): fast paths on, n ≥ COMPILED_FROM, numba installed",
                parity_test="tests/test_random_compiled.py::test_compiled_draws_match_the_readable_ones")
def words_compiled(generator, n):
    """words(generator, n) by random_numba.fill_words on the state in place."""
    out = np.empty(n, np.uint64)
    generator.engine.draw_in_place(_compiled_kernels().fill_words, out)
    return out


@specialisation(replaces="random_draws.unit_uniform: words from NumPy's MT19937, then mask, convert and scale "
                         "passes",
                when="compiled_draws_apply(generator, n): fast paths on, n ≥ COMPILED_FROM, numba installed",
                parity_test="tests/test_random_compiled.py::test_compiled_draws_match_the_readable_ones",
                ops=("rand", "uniform_", "normal_", "randn"))
def unit_uniform_compiled(generator, n, real):
    """unit_uniform in one loop over the generator's words (random_numba.fill_unit_floats / fill_unit_doubles)."""
    kernels = _compiled_kernels()
    if np.dtype(real) == np.float64:
        out = np.empty(n, np.float64)
        generator.engine.draw_in_place(kernels.fill_unit_doubles, None, out)
    else:
        out = np.empty(n, np.float32)
        generator.engine.draw_in_place(kernels.fill_unit_floats, out)
    return out


@specialisation(replaces="random_draws.bernoulli_scalar: unit_uniform's doubles, then a comparison pass",
                when="compiled_draws_apply(generator, n): fast paths on, n ≥ COMPILED_FROM, numba installed",
                parity_test="tests/test_random_compiled.py::test_compiled_draws_match_the_readable_ones",
                ops=("bernoulli_", "bernoulli", "dropout"))
def bernoulli_scalar_compiled(generator, n, p):
    """bernoulli_scalar in one loop: each uniform double compared with p as it is made."""
    out = np.empty(n, np.bool_)
    generator.engine.draw_in_place(_compiled_kernels().fill_unit_doubles, float(p), out)
    return out


def uniform(generator, n, real, low, high):
    """n values uniform in [low, high) of dtype `real`: x * (high - low) + low, computed in float32 from float32
    bounds for the float types (one rounding, as the compiled kernel's fused multiply-add), then rounded to `real`.
    A value that rounds up to `high` becomes `low`, as in torch, so the interval stays half-open."""
    x = unit_uniform(generator, n, real)
    if np.dtype(real) == np.float64:
        values = fused_multiply_add(x, np.float64(high - low), np.float64(low))
    else:
        low32, high32 = np.float32(low), np.float32(high)
        values = (x.astype(np.float64) * np.float64(high32 - low32) + np.float64(low32)).astype(np.float32)
        values = values.astype(real)
    low, high = np.array([low, high]).astype(real)
    values[values == high] = low
    return values


def fused_multiply_add(a, b, c):
    """a * b + c rounded once, as the CPU's FMA instruction (float64 arrays): the product's rounding error (Dekker's
    exact product) and the sum's (Knuth's two-sum) are added back before the last rounding."""
    product = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    product_error = ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    total = product + c
    virtual = total - product
    sum_error = (product - (total - virtual)) + (c - virtual)
    return total + (product_error + sum_error)


def _split(x):
    """Veltkamp's split of float64 values into high and low halves of 26 bits each."""
    scaled = 134217729.0 * x   # 2**27 + 1
    high = scaled - (scaled - x)
    return high, x - high


# ---- normal -----------------------------------------------------------------------------------------------------

def _box_muller_blocks(blocks, mean, std):
    """ATen's normal_fill_16 on rows of 16 uniforms: u1 = 1 - the first 8, u2 = the last 8."""
    u1, u2 = 1 - blocks[:, :8], blocks[:, 8:]
    two = blocks.dtype.type(2)
    radius = np.sqrt(-two * np.log(u1))
    theta = two * blocks.dtype.type(math.pi) * u2
    blocks[:, :8] = radius * np.cos(theta) * std + mean
    blocks[:, 8:] = radius * np.sin(theta) * std + mean


def normal_fill(generator, n, real, mean, std):
    """n >= 16 normal values for a contiguous tensor: uniforms for all, transformed 16 at a time."""
    work = np.float64 if np.dtype(real) == np.float64 else np.float32
    data = unit_uniform(generator, n, real).astype(work)
    whole = n - n % 16
    _box_muller_blocks(data[:whole].reshape(-1, 16), work(mean), work(std))
    if n % 16:
        tail = data[n - 16:]
        tail[:] = unit_uniform(generator, 16, real)
        _box_muller_blocks(tail.reshape(1, 16), work(mean), work(std))
    return data


def normal_serial(generator, n, mean, std):
    """n draws of normal_distribution<double>: each pair of uniform doubles gives r*cos and r*sin, the sin kept by
    the generator for the next draw (also across calls)."""
    out = np.empty(n, dtype=np.float64)
    start = 0
    if n and generator.next_double_normal is not None:
        out[0], generator.next_double_normal, start = generator.next_double_normal, None, 1
    pairs = (n - start + 1) // 2
    u = unit_uniform(generator, 2 * pairs, np.float64).reshape(pairs, 2)
    radius = np.sqrt(-2.0 * np.log1p(-u[:, 1]))
    theta = 2.0 * math.pi * u[:, 0]
    values = np.stack([radius * np.cos(theta), radius * np.sin(theta)], axis=1).ravel()
    out[start:] = values[:n - start]
    if len(values) > n - start:
        generator.next_double_normal = float(values[-1])
    return out * std + mean


def log_normal(generator, n, mean, std):
    """n draws of lognormal_distribution<double>: exp of normal draws (normal_serial's), as ATen makes them."""
    return np.exp(normal_serial(generator, n, mean, std))


def normal(generator, n, real, mean, std, contiguous):
    """normal_'s values for a tensor of n elements of dtype `real`."""
    if n >= 16 and contiguous:
        return normal_fill(generator, n, real, mean, std)
    return normal_serial(generator, n, mean, std)


# ---- integers ---------------------------------------------------------------------------------------------------

def integers_in(generator, n, low, span, wide):
    """n integers low + word % span; `wide` draws 64-bit words (ATen does for spans from 2**32, for int64, double,
    float and bfloat16 tensors)."""
    words = generator.engine.random64(n) if wide and span >= 1 << 32 else generator.engine.random(n)
    if span == 1 << 64:   # the whole int64 range: the word itself, as a signed value
        return words.view(np.int64)
    return (words % np.uint64(span)).astype(np.int64) + low


def randperm(generator, n):
    """0..n-1 shuffled: position i swaps with i + (word % (n - i)), for i from 0 to n - 2."""
    perm = np.arange(n, dtype=np.int64)
    words = generator.engine.random(max(n - 1, 0))
    for i, word in enumerate(words.tolist()):
        j = i + word % (n - i)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


# ---- inverse-CDF samplers on uniform doubles ----------------------------------------------------------------------

def exponential(generator, n, lambd):
    return -1.0 / lambd * np.log1p(-unit_uniform(generator, n, np.float64))


def geometric(generator, n, p):
    return np.ceil(np.log(unit_uniform(generator, n, np.float64)) / np.log1p(-p))


def cauchy(generator, n, median, sigma):
    return median + sigma * np.tan(math.pi * (unit_uniform(generator, n, np.float64) - 0.5))


def bernoulli_scalar(generator, n, p):
    """Bernoulli(p) for a float p: a uniform double below p."""
    if compiled_draws_apply(generator, n):
        return bernoulli_scalar_compiled(generator, n, p)
    return unit_uniform(generator, n, np.float64) < p


def bernoulli_tensor(generator, probabilities):
    """Bernoulli for an array of probabilities (in visiting order): a uniform of their dtype (double for float64,
    else float) below each."""
    return unit_uniform(generator, probabilities.size, probabilities.dtype) < probabilities.ravel()


def poisson(generator, rates):
    """One Poisson draw per rate (float64 array), by ATen's sample_poisson: Hoermann's transformed rejection for
    rates from 10, else multiplying uniforms until the product falls below exp(-rate)."""
    draw = lambda: float(unit_uniform(generator, 1, np.float64)[0])  # noqa: E731
    return np.array([_poisson_one(rate, draw) for rate in rates.ravel().tolist()], dtype=np.float64)


def _poisson_one(rate, draw):
    if rate >= 10:
        return _poisson_rejection(rate, draw)
    if rate == 0:
        return 0
    count, product, limit = 0, 1.0, math.exp(-rate)
    while True:
        product *= draw()
        if product <= limit:
            return count
        count += 1


def _poisson_rejection(rate, draw):
    root, log_rate = math.sqrt(rate), math.log(rate)
    b = 0.931 + 2.53 * root
    a = -0.059 + 0.02483 * b
    inverse_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    while True:
        u = draw() - 0.5
        v = draw()
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + rate + 0.43)
        if us >= 0.07 and v <= v_r:
            return k
        if k < 0 or (us < 0.013 and v > us):
            continue
        if (math.log(v) + math.log(inverse_alpha) - math.log(a / (us * us) + b)
                <= -rate + k * log_rate - math.lgamma(k + 1.0)):
            return k


def multinomial(generator, probabilities, num_samples, replacement):
    """Category indices, one row of draws per row of `probabilities` (rows x categories, in the input's dtype).

    As ATen: with replacement (and more than one sample), the inverse CDF of each row at uniform doubles; otherwise
    the top k of p / q with q ~ Exponential(1) drawn in the input's dtype (the Gumbel-max trick, exponentiated),
    which samples successively without replacement."""
    if replacement and num_samples > 1:
        return multinomial_with_replacement(generator, probabilities.astype(np.float64), num_samples)
    q = exponential(generator, probabilities.size, 1.0).astype(probabilities.dtype).reshape(probabilities.shape)
    keys = probabilities / q
    return np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]


def multinomial_with_replacement(generator, weights, num_samples):
    """Row by row, each sample the first category whose normalised cumulative weight reaches a uniform double."""
    cdf = np.cumsum(weights, axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = 1.0
    u = unit_uniform(generator, weights.shape[0] * num_samples, np.float64).reshape(-1, num_samples)
    return np.stack([np.searchsorted(row, draws, side="left") for row, draws in zip(cdf, u)])


# ---- torch.distributions' samplers: lantern's own streams (only the distributions' statistics match torch) -----

def standard_gamma(generator, alpha):
    """One Gamma(alpha, 1) draw per element of the float64 array `alpha`.

    For alpha >= 1, with d = alpha - 1/3 and c = 1/sqrt(9d): draw x ~ N(0, 1) and u ~ U(0, 1), let v = (1 + cx)^3,
    and accept d·v when v > 0 and log u < x²/2 + d - d·v + d·log v (rejected elements draw again). For alpha < 1,
    Gamma(alpha) = Gamma(alpha + 1) · u^(1/alpha)."""
    boosted = np.where(alpha < 1, alpha + 1, alpha)
    d = boosted - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    result = np.empty_like(alpha)
    pending = np.flatnonzero(alpha > 0)
    while pending.size:
        x = normal_serial(generator, pending.size, 0.0, 1.0)
        u = unit_uniform(generator, pending.size, np.float64)
        v = (1 + c[pending] * x) ** 3
        with np.errstate(invalid="ignore", divide="ignore"):
            accept = (v > 0) & (np.log(u) < 0.5 * x * x + d[pending] - d[pending] * v + d[pending] * np.log(v))
        result[pending[accept]] = d[pending[accept]] * v[accept]
        pending = pending[~accept]
    small = alpha < 1
    if small.any():
        u = unit_uniform(generator, int(small.sum()), np.float64)
        with np.errstate(divide="ignore"):
            result[small] *= u ** (1.0 / alpha[small])
    return np.where(alpha > 0, result, 0.0)


def binomial(generator, n, p):
    """Binomial(n, p) draws: NumPy's BTPE/inversion sampler, seeded with a 64-bit word from the lantern generator
    (so lantern.manual_seed fixes them; the algorithm is NumPy's, the stream is not torch's)."""
    seed = int(generator.engine.random64(1)[0])
    return np.random.default_rng(seed).binomial(n.astype(np.int64), np.clip(p, 0.0, 1.0)).astype(np.float64)
