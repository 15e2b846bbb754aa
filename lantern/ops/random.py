"""Random ops over continuous distributions, and the plumbing every random op shares: the factories rand, randn and
normal, the in-place samplers uniform_, normal_, exponential_, geometric_, cauchy_ and log_normal_, rand_like and
randn_like. Each draws from a lantern.Generator: the one passed as `generator=`, else the default generator
(installed here by lantern.random). The integer and discrete ones (random_, randint, randperm, bernoulli, poisson,
multinomial) live in random_discrete.

Kernels check their arguments as PyTorch does, then fill NumPy arrays with the values ATen's CPU kernels draw from
the same generator state (lantern.ops.random_draws), in the order ATen visits the elements; on the meta device they
only check and make shapes, and draw nothing.

>>> g = lantern.Generator().manual_seed(0)
>>> lantern.rand(2, 3, generator=g).dtype, lantern.randn(2, generator=g, dtype=lantern.float64).dtype
(lantern.float32, lantern.float64)
>>> lantern.empty(3).exponential_(generator=g).min().item() >= 0
True
"""
import math
import numpy as np

from ..backends.base import internal_overlap_check, resize_out
from ..core import dtype as dt
from ..core.layout import preserve_format
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .factory import (
    C_TYPE_NAMES, FLOAT_MAX, FACTORY_KW, empty_like_of, finish, finish_like, new_tensor, not_implemented_for,
)
from .meta_util import broadcast_shapes
from .pointwise_common import _require_tensor
from .registry import composite, custom, get
from .derivative import derivative
from . import random_draws as draws


_GENERATOR_KW = "*, Generator? generator=None"
_RANDOM_FACTORY_KW = "*, Generator? generator=None, " + FACTORY_KW[3:]
_MANTISSA_DIGITS = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}
# The dtypes whose integer draws take a 64-bit word when the range reaches 2**32 (ATen's uniform_int_from_to).
_WIDE_INTEGER_DRAWS = (dt.int64, dt.float64, dt.float32, dt.bfloat16)
_DEFAULT_GENERATOR = [None]


def set_default_generator(generator):
    """Called once by lantern.random: the generator that random ops use when given generator=None."""
    _DEFAULT_GENERATOR[0] = generator


def _gen(generator):
    """The lantern.Generator to draw from: `generator`, or the default one for None."""
    g = _DEFAULT_GENERATOR[0] if generator is None else generator
    if not hasattr(g, "engine"):
        raise TypeError(f"generator must be a lantern.Generator, not {type(generator).__name__}")
    return g


# ---- writing samples in ATen's visiting order ------------------------------------------------------------------

def _memory_order(t):
    """t's dimensions from the largest stride to the smallest: walking them in this order visits t's elements in
    memory order, as ATen's TensorIterator does."""
    return sorted(range(t.dim()), key=lambda d: -t._stride[d])


def _in_memory_order_of(t, array):
    """The values of `array` (shaped like t) in t's memory order, flat."""
    return array.transpose(_memory_order(t)).ravel()


def _write(backend, t, values):
    """Write flat `values`, given in t's memory order."""
    target = backend.array(t).transpose(_memory_order(t))
    values = values.reshape(target.shape)
    target[...] = values if backend.device.type == "cpu" else backend.from_host(values)


def _fill(backend, t, draw):
    """Write draw(count, real NumPy dtype, contiguous) into `t`. A complex tensor is filled through its real view,
    as ATen does: 2 * numel values, real and imaginary parts alternating."""
    if backend.xp is None or t.numel() == 0:
        return
    n = t.numel()
    is_complex = t.dtype.category == dt.COMPLEX
    values = draw(2 * n if is_complex else n, t.dtype.to_real().np, t.is_contiguous())
    if is_complex:
        values = values[0::2] + 1j * values[1::2]
    _write(backend, t, values)


def _sampled_in_place(op_name, backend, self, sample):
    """Run sample() to overwrite `self`, refusing tensors whose elements share memory; bumps the version."""
    internal_overlap_check(self, op_name)
    sample()
    self._bump_version()
    return self


# ---- uniform ----------------------------------------------------------------------------------------------------

def _check_uniform(dtype, from_, to):
    if dtype.category < dt.FLOATING:
        raise not_implemented_for("check_uniform_bounds", dtype)
    real = dtype.to_real()
    limit = FLOAT_MAX[real]
    for name, value in (("from", from_), ("to", to)):
        if not -limit <= value <= limit:
            raise RuntimeError(f"{name} is out of bounds for {C_TYPE_NAMES[real]}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_:g} > to={to:g}")
    if to - from_ > limit:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{real.legacy}>::max(), but found "
                           f"to={to:g} and from={from_:g} which result in to-from to exceed the limit")


def _fill_uniform(backend, t, from_, to, generator):
    _check_uniform(t.dtype, from_, to)
    gen = _gen(generator)
    _fill(backend, t, lambda n, real, _: draws.uniform(gen, n, real, from_, to))


def _rand(backend, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
          requires_grad=False):
    t = new_tensor(backend, "rand", size, dtype, layout, pin_memory)
    _fill_uniform(backend, t, 0.0, 1.0, generator)
    return finish(t, requires_grad)


def _uniform_(backend, self, from_=0.0, to=1.0, generator=None):
    return _sampled_in_place("uniform_", backend, self, lambda: _fill_uniform(backend, self, from_, to, generator))


custom(f"rand(int[] size, {_RANDOM_FACTORY_KW}) -> Tensor", _rand, _rand)
custom(f"uniform_(Tensor(a!) self, float from_=0, float to=1, {_GENERATOR_KW}) -> Tensor(a!)", _uniform_, _uniform_)


# ---- normal -----------------------------------------------------------------------------------------------------

def _check_std(std):
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def _check_normal_dtype(t):
    if t.numel() and t.dtype.category < dt.FLOATING:
        raise not_implemented_for("normal_kernel_cpu", t.dtype)


def _fill_normal(backend, t, mean, std, generator):
    """mean + std * N(0, 1); a complex tensor's parts each get std / sqrt(2), so |z - mean|^2 averages std^2."""
    _check_normal_dtype(t)
    if t.dtype.category == dt.COMPLEX:
        std = std / math.sqrt(2)
    gen = _gen(generator)
    _fill(backend, t, lambda n, real, contiguous: draws.normal(gen, n, real, mean, std, contiguous))


def _randn(backend, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
           requires_grad=False):
    t = new_tensor(backend, "randn", size, dtype, layout, pin_memory)
    _fill_normal(backend, t, 0.0, 1.0, generator)
    return finish(t, requires_grad)


def _normal_(backend, self, mean=0.0, std=1.0, generator=None):
    _check_std(std)
    return _sampled_in_place("normal_", backend, self, lambda: _fill_normal(backend, self, mean, std, generator))


def _normal_float_float(backend, mean, std, size, generator=None, dtype=None, layout=None, device=None,
                        pin_memory=None, requires_grad=False):
    _check_std(std)
    t = new_tensor(backend, "normal", size, dtype, layout, pin_memory)
    _fill_normal(backend, t, mean, std, generator)
    return finish(t, requires_grad)


def _check_std_tensor(backend, std):
    if backend.xp is not None and std.numel() and not (backend.array(std) >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _normal_around(backend, shape, dtype, mean, std, generator):
    """A new tensor of N(0, std) + mean, where mean and std are tensors (broadcast to `shape`) or floats: as ATen,
    N(0, std) then + mean for a float std, N(0, 1) * std + mean for a tensor std."""
    t = backend.empty(shape, dtype)
    _check_normal_dtype(t)
    if backend.xp is not None:
        mean, std = (backend.array(x) if isinstance(x, TensorImpl) else x for x in (mean, std))
        if isinstance(std, float):
            _fill_normal(backend, t, 0.0, std, generator)
        else:
            _fill_normal(backend, t, 0.0, 1.0, generator)
            backend.array(t)[...] *= std
        backend.array(t)[...] += mean
    return t


def _normal_tensor_float(backend, mean, std=1.0, generator=None):
    _require_tensor("normal", mean, argname="mean")
    _check_std(std)
    return _normal_around(backend, mean._size, mean.dtype, mean, std, generator)


def _normal_float_tensor(backend, mean, std, generator=None):
    _require_tensor("normal", std, 2, "std")
    _check_std_tensor(backend, std)
    return _normal_around(backend, std._size, std.dtype, mean, std, generator)


def _normal_tensor_tensor(backend, mean, std, generator=None):
    _require_tensor("normal", mean, argname="mean")
    _require_tensor("normal", std, 2, "std")
    _check_std_tensor(backend, std)
    return _normal_around(backend, broadcast_shapes(mean._size, std._size), mean.dtype, mean, std, generator)


custom(f"randn(int[] size, {_RANDOM_FACTORY_KW}) -> Tensor", _randn, _randn)
custom(f"normal_(Tensor(a!) self, float mean=0, float std=1, {_GENERATOR_KW}) -> Tensor(a!)", _normal_, _normal_)
custom(f"normal.float_float(float mean, float std, int[] size, {_RANDOM_FACTORY_KW}) -> Tensor",
       _normal_float_float, _normal_float_float)
custom(f"normal.Tensor_float(Tensor mean, float std=1, {_GENERATOR_KW}) -> Tensor",
       _normal_tensor_float, _normal_tensor_float)
custom(f"normal.float_Tensor(float mean, Tensor std, {_GENERATOR_KW}) -> Tensor",
       _normal_float_tensor, _normal_float_tensor)
custom(f"normal.Tensor_Tensor(Tensor mean, Tensor std, {_GENERATOR_KW}) -> Tensor",
       _normal_tensor_tensor, _normal_tensor_tensor)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory=None, requires_grad=False):
    """normal(mean, std) with tensor mean and/or std (the result takes their broadcast shape), or
    normal(mean, std, size) with floats (in out's dtype when out= is given)."""
    if out is not None:
        if not isinstance(mean, TensorImpl) and not isinstance(std, TensorImpl):
            dtype = dtype or out.dtype
        result = normal(mean, std, size, generator=generator, dtype=dtype, layout=layout, device=device,
                        pin_memory=pin_memory, requires_grad=requires_grad)
        resize_out(out, result._size, "normal")
        return out.copy_(result)
    if isinstance(mean, TensorImpl):
        overload = "normal.Tensor_Tensor" if isinstance(std, TensorImpl) else "normal.Tensor_float"
    elif isinstance(std, TensorImpl):
        overload = "normal.float_Tensor"
    elif size is None:
        raise TypeError("normal() with a float mean and std needs a size: normal(mean, std, size)")
    else:
        return call(get("normal.float_float"), (mean, std, size, generator, dtype, layout, device, pin_memory,
                                                requires_grad))
    if size is not None:
        raise TypeError("normal(): `size` is only taken when mean and std are both numbers")
    return call(get(overload), (mean, std, generator))


composite("normal", normal, method=False)


# ---- exponential ------------------------------------------------------------------------------------------------

def _exponential_(backend, self, lambd=1.0, generator=None):
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    if self.numel() and self.dtype.category != dt.FLOATING:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {self.dtype.legacy}")
    gen = _gen(generator)
    draw = lambda n, real, _: draws.exponential(gen, n, lambd)  # noqa: E731
    return _sampled_in_place("exponential_", backend, self, lambda: _fill(backend, self, draw))


custom(f"exponential_(Tensor(a!) self, float lambd=1, {_GENERATOR_KW}) -> Tensor(a!)", _exponential_, _exponential_)


# ---- geometric_, cauchy_, log_normal_ ----------------------------------------------------------------------------

def _geometric_(backend, self, p, generator=None):
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    if self.dtype.category in (dt.BOOL, dt.COMPLEX):
        raise not_implemented_for("geometric_cpu", self.dtype)

    gen = _gen(generator)
    draw = lambda n, real, _: draws.geometric(gen, n, p)  # noqa: E731
    return _sampled_in_place("geometric_", backend, self, lambda: _fill(backend, self, draw))


_C_LONG_NAMES = {dt.int64: "long int", dt.int16: "short int"}  # the spelling in cauchy_'s dtype message


def _cauchy_(backend, self, median=0.0, sigma=1.0, generator=None):
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    if self.dtype.category != dt.FLOATING:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {_C_LONG_NAMES.get(self.dtype, C_TYPE_NAMES[self.dtype])}")
    gen = _gen(generator)
    draw = lambda n, real, _: draws.cauchy(gen, n, median, sigma)  # noqa: E731
    return _sampled_in_place("cauchy_", backend, self, lambda: _fill(backend, self, draw))


def _log_normal_(backend, self, mean=1.0, std=2.0, generator=None):
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    if self.dtype.category != dt.FLOATING:
        raise not_implemented_for("log_normal_cpu", self.dtype)
    gen = _gen(generator)
    draw = lambda n, real, _: draws.log_normal(gen, n, mean, std)  # noqa: E731
    return _sampled_in_place("log_normal_", backend, self, lambda: _fill(backend, self, draw))


custom(f"geometric_(Tensor(a!) self, float p, {_GENERATOR_KW}) -> Tensor(a!)", _geometric_, _geometric_)
custom(f"cauchy_(Tensor(a!) self, float median=0, float sigma=1, {_GENERATOR_KW}) -> Tensor(a!)", _cauchy_, _cauchy_)
custom(f"log_normal_(Tensor(a!) self, float mean=1, float std=2, {_GENERATOR_KW}) -> Tensor(a!)",
       _log_normal_, _log_normal_)


# ---- *_like ------------------------------------------------------------------------------------------------------

def rand_like(input, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
              memory_format=preserve_format):
    t = empty_like_of("rand_like", input, dtype, layout, device, pin_memory, memory_format)
    return finish_like(t.uniform_(generator=generator), requires_grad)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
               memory_format=preserve_format):
    t = empty_like_of("randn_like", input, dtype, layout, device, pin_memory, memory_format)
    return finish_like(t.normal_(generator=generator), requires_grad)


for _fn in (rand_like, randn_like):
    composite(_fn.__name__, _fn, method=False)


# ---- derivatives: the samples do not depend smoothly on the parameters, so their gradient is zero (as in PyTorch) --
for _name, _node in (("uniform_", "UniformBackward0"), ("normal_", "NormalBackward0"),
                     ("exponential_", "ExponentialBackward0"), ("geometric_", "GeometricBackward0"),
                     ("cauchy_", "CauchyBackward0"), ("log_normal_", "LogNormalBackward0")):
    derivative(_name, name=_node, self="zeros_like(grad)")
derivative("normal.Tensor_float", name="NormalBackward1", mean="zeros_like(grad)")
derivative("normal.float_Tensor", name="NormalBackward2", std="zeros_like(grad)")
derivative("normal.Tensor_Tensor", name="NormalBackward3", mean="zeros_like(grad)", std="zeros_like(grad)")
