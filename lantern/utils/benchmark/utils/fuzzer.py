"""Fuzzer: random benchmark inputs from a seed, as torch.utils.benchmark's. Parameters are drawn from a NumPy
RandomState exactly as torch draws them (so a seed gives torch's sizes, steps and layouts), the seed's first
draw seeds lantern's generator, and tensors come from lantern.rand / lantern.randint.

>>> from lantern.utils.benchmark import Fuzzer, FuzzedParameter, FuzzedTensor
>>> fuzzer = Fuzzer(parameters=[FuzzedParameter("n", minval=4, maxval=16, distribution="uniform")],
...                 tensors=[FuzzedTensor("x", size=("n", 3))], seed=0)
>>> [(params["n"], tensors["x"].shape) for tensors, _, params in fuzzer.take(2)]
[(9, lantern.Size([9, 3])), (8, lantern.Size([8, 3]))]
"""
import functools
import itertools

import numpy as np

import lantern

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named parameter drawn each step: "loguniform" or "uniform" between minval and maxval (integers when both
    bounds are ints), or from a {value: probability} dict. A `strict` one keeps its first draw while the
    others are redrawn to meet the constraints."""

    def __init__(self, name, minval=None, maxval=None, distribution=None, strict=False):
        self._name, self._minval, self._maxval = name, minval, maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self):
        return self._name

    def sample(self, state):
        if self._distribution == "loguniform":
            return self._loguniform(state)
        if self._distribution == "uniform":
            return self._uniform(state)
        if isinstance(self._distribution, dict):
            return self._custom_distribution(state)

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        # torch 2.13 tests this the wrong way round (a dict summing to one raises); kept, so the two agree.
        if not abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None or self._maxval is not None:
            which = "minval" if self._minval is not None else "maxval"
            raise AssertionError(f"When passing a custom distribution, '{which}' must be None")
        return distribution

    def _loguniform(self, state):
        low = np.log2(self._minval) if self._minval is not None else None
        high = np.log2(self._maxval) if self._maxval is not None else None
        output = int(2 ** state.uniform(low=low, high=high))
        if self._minval is not None and output < self._minval:
            return self._minval
        if self._maxval is not None and output > self._maxval:
            return self._maxval
        return output

    def _uniform(self, state):
        if isinstance(self._minval, int) and isinstance(self._maxval, int):
            return int(state.randint(low=self._minval, high=self._maxval + 1))
        return state.uniform(low=self._minval, high=self._maxval)

    def _custom_distribution(self, state):
        # An index is drawn, not a key: NumPy would turn the keys into NumPy scalars.
        index = state.choice(np.arange(len(self._distribution)), p=tuple(self._distribution.values()))
        return list(self._distribution.keys())[index]


class ParameterAlias:
    """A parameter value that takes another parameter's value (chains allowed, cycles not)."""

    def __init__(self, alias_to) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype):
    if dtype == lantern.bool:
        return 1
    if dtype.is_floating_point or dtype.is_complex:
        return int(lantern.finfo(dtype).bits / 8)
    return int(lantern.iinfo(dtype).bits / 8)


def prod(values, base=1):
    """The product in Python integers (NumPy's could overflow and pass a size check negative)."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor made each step: `size` and `steps` name parameters or give ints, `dim_parameter` cuts the rank;
    with probability 1 - probability_contiguous its memory is laid out in a random dimension order; element and
    allocation bounds reject a step's parameters. `tensor_constructor(size=, dtype=, **params)` replaces
    lantern.rand / lantern.randint(1, 127)."""

    def __init__(self, name, size, steps=None, probability_contiguous=0.5, min_elements=None, max_elements=None,
                 max_allocation_bytes=None, dim_parameter=None, roll_parameter=None, dtype=lantern.float32,
                 cuda=False, tensor_constructor=None):
        self._name, self._size, self._steps = name, size, steps
        self._probability_contiguous = probability_contiguous
        self._min_elements, self._max_elements = min_elements, max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter, self._dtype, self._cuda = dim_parameter, dtype, cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self):
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        if dtype.is_floating_point or dtype.is_complex:
            return lantern.rand(size=size, dtype=dtype, device="cpu")
        return lantern.randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _make_tensor(self, params, state):
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):  # a permutation other than the identity
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(order)).contiguous().permute(tuple(np.argsort(order)))
        tensor = raw[tuple(slice(0, n * step, step) for n, step in zip(size, steps))]
        properties = {"numel": int(tensor.numel()), "order": order, "steps": steps,
                      "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}
        return tensor, properties

    def _get_size_and_steps(self, params):
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values):
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size, steps = resolve(self._size), resolve(self._steps or ())
        return size, steps, tuple(n * step for n, step in zip(size, steps))

    def satisfies_constraints(self, params) -> bool:
        size, _, allocation_size = self._get_size_and_steps(params)
        num_elements = prod(size)
        if num_elements < 0:
            raise AssertionError("Computed number of elements is negative")
        allocation_bytes = prod(allocation_size, base=dtype_size(self._dtype))

        def above(left, right):
            return left is not None and right is not None and left > right

        return not (above(num_elements, self._max_elements) or above(self._min_elements, num_elements)
                    or above(allocation_bytes, self._max_allocation_bytes))


class Fuzzer:
    """Steps of parameters (redrawn, up to 1000 times, until every constraint and tensor bound holds) and the
    tensors they describe; `take(n)` yields (tensors, tensor_properties, params) n times from the seed."""

    def __init__(self, parameters, tensors, constraints=None, seed=None):
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls):
        return tuple(itertools.chain.from_iterable([v] if isinstance(v, cls) else v for v in values))

    def take(self, n):
        state = np.random.RandomState(self._seed)
        lantern.manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            made = {t.name: t._make_tensor(params, state) for t in self._tensors}
            yield ({name: m[0] for name, m in made.items()}, {name: m[1] for name, m in made.items()}, params)

    @property
    def rejection_rate(self):
        return self._rejections / self._total_generated if self._total_generated else 0.

    def _draw(self, state, strict_params):
        params = {}
        for p in self._parameters:
            if p.strict and p.name in strict_params:
                params[p.name] = strict_params[p.name]
                continue
            params[p.name] = p.sample(state)
            if p.strict:
                strict_params[p.name] = params[p.name]
        return self._resolve_aliases(params)

    def _generate(self, state):
        strict_params = {}
        for _ in range(1000):
            params = self._draw(state, strict_params)
            self._total_generated += 1
            if all(f(params) for f in self._constraints) and all(
                    t.satisfies_constraints(params) for t in self._tensors):
                return params
            self._rejections += 1
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for k in list(params):
                if isinstance(params[k], ParameterAlias):
                    params[k] = params[params[k].alias_to]
            still = sum(isinstance(v, ParameterAlias) for v in params.values())
            if still == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = still
        return params
