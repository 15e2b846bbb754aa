"""Random integers and discrete distributions: random_, randint, randperm, randint_like, bernoulli, poisson and
multinomial, drawn from a lantern.Generator as lantern.ops.random describes.

>>> g = lantern.Generator().manual_seed(0)
>>> lantern.randint(0, 10, (5,), generator=g).tolist()     # torch.randint with the same seed
[4, 9, 3, 0, 3]
>>> sorted(lantern.randperm(5, generator=g).tolist())
[0, 1, 2, 3, 4]
>>> lantern.multinomial(lantern.tensor([0.0, 1.0, 0.0]), 2, replacement=True, generator=g).tolist()
[1, 1]
"""
import numpy as np

from ..backends.base import resize_out
from ..core import dtype as dt
from ..core.layout import preserve_format
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .factory import (
    C_TYPE_NAMES, FLOAT_MAX, empty_like_of, finish, finish_like, int_arg, new_tensor, not_implemented_for,
)
from .pointwise_common import _require_tensor
from .registry import composite, custom, get
from .derivative import derivative, nondifferentiable
from . import random_draws as draws
from .random import (
    _GENERATOR_KW, _MANTISSA_DIGITS, _RANDOM_FACTORY_KW, _WIDE_INTEGER_DRAWS, _gen, _in_memory_order_of,
    _sampled_in_place, _write,
)
from ..core import user_warnings


# ---- random_ / randint / randperm: integers drawn uniformly ----------------------------------------------------

def _default_top(dtype):
    """The largest value random_() draws: 2**digits for floats (every integer up to it is exact), else the max."""
    if dtype.category == dt.FLOATING:
        return 1 << _MANTISSA_DIGITS[dtype]
    return 1 if dtype is dt.bool else int(np.iinfo(dtype.np).max)


def _check_in_range(dtype, low, high):
    if dtype.category == dt.FLOATING:
        bounds = (-FLOAT_MAX[dtype], FLOAT_MAX[dtype])
    else:
        bounds = (0, 1) if dtype is dt.bool else (int(np.iinfo(dtype.np).min), int(np.iinfo(dtype.np).max))
    for name, value in (("from", low), ("to - 1", high)):
        if not bounds[0] <= value <= bounds[1]:
            raise RuntimeError(f"{name} is out of bounds for {C_TYPE_NAMES[dtype]}")
        if dtype.category == dt.FLOATING and abs(value) > _default_top(dtype):
            digits = _MANTISSA_DIGITS[dtype]
            user_warnings.warn(f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                          f"{C_TYPE_NAMES[dtype]} can support discrete uniform distribution only within this range.",
                          UserWarning, stacklevel=7)  # the caller of random_/randint, through the dispatcher


def _int64_arg(fn, name, value):
    """An int64 argument; out of range is torch's ValueError here (a size out of range is a TypeError)."""
    if isinstance(value, int) and not -2**63 <= value < 2**63:
        raise ValueError("Overflow when unpacking long long")
    return int_arg(fn, name, value)


def _random_range(dtype, from_=None, to=None):
    """The inclusive range [low, high] random_(from, to) draws from, after PyTorch's checks."""
    if dtype.category == dt.COMPLEX:
        if from_ is None and to is None:
            raise not_implemented_for("random_kernel_cpu", dtype)
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    if from_ is None and to is None:
        return 0, _default_top(dtype)
    if to is None:
        low, high = from_, _default_top(dtype)
    else:
        if from_ >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
        low, high = from_, to - 1
    _check_in_range(dtype, low, high)
    if low > high:
        raise RuntimeError(f"random_ expects 'from' to be at most {high} for {dtype.name}, but got from={low}")
    return low, high


def _fill_integers(backend, t, low, high, generator):
    """Integers drawn uniformly from [low, high] (inclusive)."""
    if backend.xp is not None and t.numel():
        wide = t.dtype in _WIDE_INTEGER_DRAWS
        _write(backend, t, draws.integers_in(_gen(generator), t.numel(), low, high - low + 1, wide))


def _random_(backend, self, from_=None, to=None, generator=None):
    if from_ is not None:
        from_ = _int64_arg("random_", "from", from_)
    if to is not None:
        to = _int64_arg("random_", "to", to)
    low, high = _random_range(self.dtype, from_, to)
    return _sampled_in_place("random_", backend, self, lambda: _fill_integers(backend, self, low, high, generator))


def _randint(backend, low, high, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
             requires_grad=False):
    low, high = _int64_arg("randint", "low", low), _int64_arg("randint", "high", high)
    t = new_tensor(backend, "randint", size, dtype or dt.int64, layout, pin_memory)
    _fill_integers(backend, t, *_random_range(t.dtype, low, high), generator)
    return finish(t, requires_grad)


def _check_randperm_dtype(n, dtype):
    if dtype.category in (dt.BOOL, dt.COMPLEX):
        raise not_implemented_for("randperm", dtype)
    if dtype.category == dt.FLOATING and n > _default_top(dtype) + 1:
        raise RuntimeError(f"n cannot be greater than {_default_top(dtype) + 1} for {dtype.legacy} type.")
    if dtype.category == dt.INTEGRAL and n - 1 > np.iinfo(dtype.np).max:
        raise RuntimeError(f"value cannot be converted to type {C_TYPE_NAMES[dtype]} without overflow")


def _randperm(backend, n, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=False):
    n = int_arg("randperm", "n", n)
    t = new_tensor(backend, "randperm", (n,), dtype or dt.int64, layout, pin_memory)
    _check_randperm_dtype(n, t.dtype)
    if backend.xp is not None:
        _write(backend, t, draws.randperm(_gen(generator), n))
    return finish(t, requires_grad)


custom(f"random_.from(Tensor(a!) self, int? from=None, int? to=None, {_GENERATOR_KW}) -> Tensor(a!)",
       _random_, _random_)
custom(f"randint.low(int low, int high, int[] size, {_RANDOM_FACTORY_KW}) -> Tensor", _randint, _randint)
custom(f"randperm(int n, {_RANDOM_FACTORY_KW}) -> Tensor", _randperm, _randperm)


def random_(self, *args, to=None, generator=None):
    """random_() draws from [0, 2**mantissa digits] (floats) or [0, max] (ints); random_(to) from [0, to);
    random_(from, to) from [from, to); random_(from, None) from [from, the default top]."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments (from, to) but {len(args)} were given")
    if len(args) == 2:
        from_, to = args
    elif len(args) == 1:
        from_, to = (0, args[0]) if to is None else (args[0], to)
    else:
        from_ = None if to is None else 0
    return call(get("random_.from"), (self, from_, to, generator))


def _match_signature(fn, forms, args, keywords):
    """Bind the arguments to the first of PyTorch's signatures (`forms`, lambdas with its parameter names) that
    accepts them, as its argument parser tries each in turn."""
    given = {k: v for k, v in keywords.items() if v is not None}
    for form in forms:
        try:
            return form(*args, **given)
        except TypeError:
            continue
    expected = " or ".join(f"({', '.join(form.__code__.co_varnames)})" for form in forms)
    raise TypeError(f"{fn}() received an invalid combination of arguments; expected {expected}")


def randint(*args, low=None, high=None, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
            pin_memory=None, requires_grad=False):
    """randint(high, size) or randint(low, high, size): integers drawn uniformly from [low, high) (in out's dtype
    when out= is given)."""
    forms = (lambda high, size: (0, high, size), lambda low, high, size: (low, high, size))
    low, high, size = _match_signature("randint", forms, args, {"low": low, "high": high, "size": size})
    if out is not None:
        if dtype is not None and dtype is not out.dtype:
            raise RuntimeError(f"dtype {dtype.legacy} does not match dtype of out parameter ({out.dtype.legacy})")
        dtype = out.dtype
    result = call(get("randint.low"), (low, high, size, generator, dtype, layout, device, pin_memory, requires_grad))
    if out is None:
        return result
    resize_out(out, result._size, "randint")
    return out.copy_(result)


composite("randint", randint, method=False)


# ---- bernoulli --------------------------------------------------------------------------------------------------

def _check_p(p):
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")


def _check_p_tensor(backend, p):
    if p.dtype.category != dt.FLOATING:
        raise not_implemented_for("bernoulli_tensor_cpu_self_" if p.dtype.is_complex else "bernoulli_tensor_cpu_p_",
                                  p.dtype)
    if backend.xp is not None and p.numel():
        values = backend.array(p)
        if not ((values >= 0) & (values <= 1)).all():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def _fill_bernoulli(backend, t, p, generator):
    """1 where a uniform draw falls below p (a float, or an array of t's shape), else 0."""
    if backend.xp is not None and t.numel():
        gen = _gen(generator)
        if isinstance(p, float):
            _write(backend, t, draws.bernoulli_scalar(gen, t.numel(), p))
        else:
            _write(backend, t, draws.bernoulli_tensor(gen, _in_memory_order_of(t, p)))


def _bernoulli(backend, self, p=None, generator=None):
    _require_tensor("bernoulli", self)
    probabilities = p
    if p is None:
        _check_p_tensor(backend, self)
        probabilities = None if backend.xp is None else backend.host_array(self)  # the draws run on the host
    else:
        _check_p(p)
    out = backend.empty(self._size, self.dtype)
    _fill_bernoulli(backend, out, probabilities, generator)
    return out


def _bernoulli_float_(backend, self, p=0.5, generator=None):
    _check_p(p)
    return _sampled_in_place("bernoulli_", backend, self, lambda: _fill_bernoulli(backend, self, p, generator))


def _bernoulli_tensor_(backend, self, p, generator=None):
    _require_tensor("bernoulli_", p, argname="p")
    _check_p_tensor(backend, p)
    p = p.expand(self._size)
    values = None if backend.xp is None else backend.host_array(p)  # the draws run on the host
    return _sampled_in_place("bernoulli_", backend, self, lambda: _fill_bernoulli(backend, self, values, generator))


custom(f"bernoulli(Tensor self, float? p=None, {_GENERATOR_KW}) -> Tensor", _bernoulli, _bernoulli)
custom(f"bernoulli_.float(Tensor(a!) self, float p=0.5, {_GENERATOR_KW}) -> Tensor(a!)",
       _bernoulli_float_, _bernoulli_float_)
custom(f"bernoulli_.Tensor(Tensor(a!) self, Tensor p, {_GENERATOR_KW}) -> Tensor(a!)",
       _bernoulli_tensor_, _bernoulli_tensor_)


def bernoulli_(self, p=0.5, *, generator=None):
    """Overwrite with 1s drawn with probability p (a float, or a tensor broadcast to self's shape), else 0s."""
    overload = "bernoulli_.Tensor" if isinstance(p, TensorImpl) else "bernoulli_.float"
    return call(get(overload), (self, p, generator))


for _fn in (random_, bernoulli_):
    composite(_fn.__name__, _fn, method=True)


# ---- poisson, multinomial ---------------------------------------------------------------------------------------

def _poisson(backend, self, generator=None):
    _require_tensor("poisson", self)
    if self.dtype.category != dt.FLOATING:
        raise not_implemented_for("poisson_cpu", self.dtype)
    out = backend.empty(self._size, self.dtype)
    if backend.xp is None or not self.numel():
        return out
    rates = backend.array(self).astype(np.float64)
    if not (rates >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    xp = backend.xp
    finite = xp.isfinite(rates)
    counts = xp.asarray(draws.poisson(_gen(generator), xp.where(finite, rates, 0.0)))
    _write(backend, out, xp.where(finite.ravel(), counts, rates.ravel()))  # an infinite rate gives inf, as torch
    return out


custom(f"poisson(Tensor self, {_GENERATOR_KW[3:]}) -> Tensor", _poisson, _poisson, method=False)


def _check_multinomial(self, num_samples, replacement):
    _require_tensor("multinomial", self)
    num_samples = int_arg("multinomial", "num_samples", num_samples)
    if self.dtype.category != dt.FLOATING:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {self.dtype.legacy}")
    if self.dim() not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim (multinomial got shape {list(self._size)})")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > self._size[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    return num_samples


def _multinomial(backend, self, num_samples, replacement=False, generator=None):
    num_samples = _check_multinomial(self, num_samples, replacement)
    shape = self._size[:-1] + (num_samples,)
    out = backend.empty(shape, dt.int64)
    if backend.xp is None or not out.numel():
        return out
    if self._size[-1] == 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    weights = backend.array(self).astype(np.float64).reshape(-1, self._size[-1])
    if not (backend.xp.isfinite(weights) & (weights >= 0)).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not (weights.sum(1) > 0).all():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    probabilities = backend.host_array(self).reshape(-1, self._size[-1])  # the draws run on the host
    samples = draws.multinomial(_gen(generator), probabilities, num_samples, replacement)
    backend.array(out)[...] = samples.reshape(shape)
    return out


def _multinomial_out(backend, self, num_samples, replacement=False, generator=None, out=None):
    if out.dtype is not dt.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {out.dtype.legacy}")
    result = _multinomial(backend, self, num_samples, replacement, generator)
    resize_out(out, result._size, "multinomial.out")
    if backend.xp is not None:
        backend.array(out)[...] = backend.array(result)
    out._bump_version()
    return out


_MULTINOMIAL_ARGS = "Tensor self, int num_samples, bool replacement=False, *, Generator? generator=None"
custom(f"multinomial({_MULTINOMIAL_ARGS}) -> Tensor", _multinomial, _multinomial)
custom(f"multinomial.out({_MULTINOMIAL_ARGS}, Tensor(a!) out) -> Tensor(a!)", _multinomial_out, _multinomial_out)
get("multinomial").out = get("multinomial.out")  # so the generated lantern.multinomial takes out=


def randint_like(input, *args, low=None, high=None, generator=None, dtype=None, layout=None, device=None,
                 pin_memory=None, requires_grad=False, memory_format=preserve_format):
    """randint_like(input, high) or randint_like(input, low, high): input's shape and dtype, values in [low, high)."""
    forms = (lambda high: (0, high), lambda low, high: (low, high))
    low, high = _match_signature("randint_like", forms, args, {"low": low, "high": high})
    t = empty_like_of("randint_like", input, dtype, layout, device, pin_memory, memory_format)
    return finish_like(random_(t, low, high, generator=generator), requires_grad)


composite("randint_like", randint_like, method=False)


# ---- derivatives: the samples do not depend smoothly on the parameters, so their gradient is zero (as in PyTorch) --
for _name, _node in (("bernoulli", "BernoulliBackward0"), ("bernoulli_.float", "BernoulliBackward2"),
                     ("poisson", "PoissonBackward0")):
    derivative(_name, name=_node, self="zeros_like(grad)")
derivative("random_.from", name=lambda args: "RandomBackward2" if args[1] is None and args[2] is None else
           "RandomBackward1" if args[1] is None else "RandomBackward0", self="zeros_like(grad)")
derivative("bernoulli_.Tensor", name="BernoulliBackward1", self="zeros_like(grad)", p="zeros_like(p_meta)")
nondifferentiable("multinomial", "multinomial.out")
