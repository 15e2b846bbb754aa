"""Random numbers: seeding and generators, the random factories and in-place samplers against torch for dtypes,
shapes, strides, devices and errors, and loose statistics (test_random_stream.py checks torch's very numbers)."""
import copy
import pickle

import numpy as np
import pytest

import lantern
from oracle import check, raises_like


def _layout(t):
    """What must match torch for a random result: everything but the values."""
    return t.dtype, t.shape, t.stride(), str(t.device), t.requires_grad, t._version


# ---- seeding, generators, state ----------------------------------------------------------------------------------

def test_manual_seed_reproduces():
    lantern.manual_seed(123)
    a = (lantern.rand(5), lantern.randn(5), lantern.randint(0, 100, (5,)), lantern.randperm(7))
    lantern.manual_seed(123)
    b = (lantern.rand(5), lantern.randn(5), lantern.randint(0, 100, (5,)), lantern.randperm(7))
    assert [x.tolist() for x in a] == [x.tolist() for x in b]
    assert lantern.rand(5).tolist() != a[0].tolist()


def test_manual_seed_returns_the_default_generator():
    g = lantern.manual_seed(7)
    assert g is lantern.default_generator and g.initial_seed() == 7 == lantern.initial_seed()
    assert lantern.manual_seed(-5).initial_seed() == 2**64 - 5      # negative seeds wrap, as in torch
    assert lantern.manual_seed(1.7).initial_seed() == 1             # the module function takes int(seed)


def test_generators_are_independent():
    g1, g2 = lantern.Generator().manual_seed(0), lantern.Generator().manual_seed(0)
    a = lantern.rand(4, generator=g1)
    lantern.rand(100)                                              # the default generator moves, g2 does not
    assert lantern.rand(4, generator=g2).tolist() == a.tolist()
    assert lantern.rand(4, generator=g1).tolist() != a.tolist()


def test_generator_passes_through_every_op():
    def draws(g):
        x = lantern.empty(4)
        return [t.tolist() for t in (
            lantern.rand(3, generator=g), lantern.randn(3, generator=g), lantern.randint(10, (3,), generator=g),
            lantern.randperm(5, generator=g), lantern.normal(0., 1., (3,), generator=g),
            lantern.normal(lantern.zeros(3), 1., generator=g), lantern.bernoulli(lantern.full((3,), .5), generator=g),
            x.uniform_(generator=g), x.normal_(generator=g), x.random_(10, generator=g),
            x.bernoulli_(0.5, generator=g), x.exponential_(generator=g),
            lantern.rand_like(x, generator=g), lantern.randint_like(x, 9, generator=g))]
    assert draws(lantern.Generator().manual_seed(3)) == draws(lantern.Generator().manual_seed(3))


def test_generator_api_matches_torch():
    check(lambda m: m.Generator().initial_seed())
    check(lambda m: str(m.Generator("cpu").device))
    check(lambda m: str(m.Generator(device=None).device))
    check(lambda m: m.Generator().manual_seed(-1).initial_seed())
    check(lambda m: m.Generator().manual_seed(2**64 - 1).initial_seed())
    check(lambda m: m.get_rng_state().dtype)
    check(lambda m: isinstance(m.Generator().manual_seed(3), m.Generator))


@pytest.mark.parametrize("fn", [
    lambda m: m.Generator().manual_seed(1.5),
    lambda m: m.Generator().manual_seed("3"),
    lambda m: m.Generator().manual_seed(True),
    lambda m: m.Generator().manual_seed(2**64),
    lambda m: m.Generator().manual_seed(-2**63 - 1),
    lambda m: m.manual_seed(None),
    lambda m: m.Generator("meta"),
    lambda m: m.Generator().set_state(m.zeros(3)),
    lambda m: m.Generator().set_state(m.zeros(3, dtype=m.uint8)),
    lambda m: m.Generator().set_state([1, 2]),
    lambda m: m.set_rng_state(m.zeros(3)),
    lambda m: m.rand(2, generator=1),
])
def test_generator_errors_match_torch(fn):
    raises_like(fn)


def test_state_round_trip():
    g = lantern.Generator().manual_seed(11)
    lantern.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype is lantern.uint8 and state.dim() == 1
    a = lantern.randn(6, generator=g)
    assert g.set_state(state) is g
    assert lantern.randn(6, generator=g).tolist() == a.tolist()
    assert g.initial_seed() == 11
    state[0] = 99                                                  # get_state returns a copy
    assert g.get_state().tolist() != state.tolist()


def test_rng_state_round_trip_through_the_default_generator():
    state = lantern.get_rng_state()
    a = lantern.rand(4)
    lantern.set_rng_state(state)
    assert lantern.rand(4).tolist() == a.tolist()


def test_kept_normal_is_restored():
    g = lantern.Generator().manual_seed(5)
    lantern.randn(3, generator=g)                                  # an odd count keeps one double normal for later
    assert g.next_double_normal is not None
    clone = g.clone_state()
    assert lantern.randn(3, generator=clone).tolist() == lantern.randn(3, generator=g).tolist()


def test_fork_rng():
    lantern.manual_seed(0)
    with lantern.random.fork_rng():
        inside = lantern.rand(3)
    after = lantern.rand(3)
    assert after.tolist() == inside.tolist()
    with lantern.random.fork_rng(enabled=False):
        lantern.rand(3)
    assert lantern.rand(3).tolist() != after.tolist()
    with lantern.random.fork_rng(devices=[]):
        pass


def test_seed_is_nondeterministic_and_recorded():
    s = lantern.seed()
    assert 0 <= s < 2**64 and lantern.initial_seed() == s
    assert lantern.Generator().seed() != lantern.Generator().seed()


def test_generator_pickles_and_copies():
    g = lantern.Generator().manual_seed(3)
    lantern.rand(2, generator=g)
    for other in (pickle.loads(pickle.dumps(g)), copy.deepcopy(g), g.clone_state()):
        assert other.initial_seed() == 3
        assert lantern.rand(4, generator=other).tolist() == lantern.rand(4, generator=g.clone_state()).tolist()


def test_module_exports():
    assert set(lantern.random.__all__) <= set(dir(lantern))
    assert lantern.default_generator is lantern.random.default_generator


# ---- factories and samplers against torch ------------------------------------------------------------------------

LAYOUTS = [
    lambda m: m.rand(2, 3),
    lambda m: m.rand((2, 3)),
    lambda m: m.rand([]),
    lambda m: m.rand(0),
    lambda m: m.rand(2, dtype=m.float64),
    lambda m: m.rand(2, dtype=m.float16),
    lambda m: m.rand(2, dtype=m.bfloat16),
    lambda m: m.rand(2, dtype=m.complex64),
    lambda m: m.randn(2, 3, dtype=m.complex128),
    lambda m: m.randn(0, dtype=m.int64),
    lambda m: m.rand(2, requires_grad=True),
    lambda m: m.rand(2, 3, device="meta"),
    lambda m: m.randn(2, 3, device="meta"),
    lambda m: m.rand(2, device="meta", generator=m.Generator()),
    lambda m: m.randint(10, (3,)),
    lambda m: m.randint(3, 10, (2, 2)),
    lambda m: m.randint(3, 10, size=(2, 2)),
    lambda m: m.randint(low=3, high=10, size=(2, 2)),
    lambda m: m.randint(high=10, size=(2, 2)),
    lambda m: m.randint(10, [2, 3]),
    lambda m: m.randint(10, m.Size([2, 3])),
    lambda m: m.randint(10, ()),
    lambda m: m.randint(10, (2,), dtype=m.float32),
    lambda m: m.randint(2, (2,), dtype=m.bool),
    lambda m: m.randint(256, (2,), dtype=m.uint8),
    lambda m: m.randint(0, 10, (2,), device="meta"),
    lambda m: m.randint(10, (2,), dtype=m.float32, requires_grad=True),
    lambda m: m.randperm(5),
    lambda m: m.randperm(0),
    lambda m: m.randperm(5, dtype=m.float32),
    lambda m: m.randperm(5, dtype=m.int32),
    lambda m: m.randperm(256, dtype=m.uint8),
    lambda m: m.randperm(2049, dtype=m.float16),
    lambda m: m.randperm(5, device="meta"),
    lambda m: m.randperm(m.tensor(3)),
    lambda m: m.normal(m.zeros(3), m.ones(3)),
    lambda m: m.normal(m.zeros(3, dtype=m.float64), m.ones(3)),
    lambda m: m.normal(m.zeros(3), m.ones(3, dtype=m.float64)),
    lambda m: m.normal(m.zeros(2, dtype=m.float16), m.ones(2, dtype=m.float64)),
    lambda m: m.normal(m.zeros(3), 1.0),
    lambda m: m.normal(m.zeros(3, dtype=m.complex64), 1.0),
    lambda m: m.normal(0.0, m.ones(2, 3)),
    lambda m: m.normal(0.0, m.ones(2, dtype=m.float64)),
    lambda m: m.normal(0.0, 1.0, (2, 3)),
    lambda m: m.normal(0.0, 1.0, size=(2, 3), dtype=m.float64),
    lambda m: m.normal(2, 3, (2,)),
    lambda m: m.normal(0.0, 1.0, (2, 3), device="meta"),
    lambda m: m.normal(m.zeros(3), m.ones(2, 3)),
    lambda m: m.normal(m.zeros(2, 1), m.ones(3)),
    lambda m: m.normal(m.tensor(0.), m.ones(2, 2)),
    lambda m: m.normal(mean=m.zeros(3), std=2.0),
    lambda m: m.normal(mean=1.0, std=m.ones(3)),
    lambda m: m.normal(m.zeros(3)),
    lambda m: m.normal(m.zeros(2, 3).t(), 1.0),
    lambda m: m.normal(m.zeros(2, 3).t(), m.ones(2, 3).t()),
    lambda m: m.normal(0., 1., (2,), requires_grad=True),
    lambda m: m.bernoulli(m.full((3,), 0.5)),
    lambda m: m.bernoulli(m.full((3,), 0.5, dtype=m.float64)),
    lambda m: m.bernoulli(m.ones(3, dtype=m.float16)),
    lambda m: m.bernoulli(m.ones(3), 0.5),
    lambda m: m.bernoulli(m.ones(3), p=0.5),
    lambda m: m.bernoulli(m.ones(3, dtype=m.int64), p=0.5),
    lambda m: m.bernoulli(m.ones(3, dtype=m.bool), 0.5),
    lambda m: m.bernoulli(m.ones(2, 3).t()),
    lambda m: m.bernoulli(m.ones(2, 3, device="meta")),
    lambda m: m.ones(2, 3).t().bernoulli(0.5),
    lambda m: m.ones(3).bernoulli(),
    lambda m: m.ones(3).uniform_(),
    lambda m: m.ones(3).uniform_(2, 5),
    lambda m: m.ones(2, 3).t().uniform_(),
    lambda m: m.ones(3, dtype=m.float16).uniform_(),
    lambda m: m.ones(3, dtype=m.complex64).uniform_(),
    lambda m: m.ones(3, device="meta").uniform_(),
    lambda m: m.ones(3).normal_(),
    lambda m: m.ones(3).normal_(2, 3),
    lambda m: m.ones(3).normal_(mean=2, std=3),
    lambda m: m.ones(3, dtype=m.complex64).normal_(),
    lambda m: m.ones(3, device="meta").normal_(),
    lambda m: m.empty(0, dtype=m.int64).normal_(),
    lambda m: m.ones(3).random_(),
    lambda m: m.ones(3).random_(10),
    lambda m: m.ones(3).random_(5, 10),
    lambda m: m.ones(3).random_(to=10),
    lambda m: m.ones(3, dtype=m.int64).random_(10),
    lambda m: m.ones(3, dtype=m.bool).random_(),
    lambda m: m.ones(3, dtype=m.uint8).random_(256),
    lambda m: m.ones(3, dtype=m.int8).random_(-5, 5),
    lambda m: m.ones(3, dtype=m.int64).random_(-2**63, None),
    lambda m: m.ones(3, device="meta").random_(10),
    lambda m: m.ones(3).bernoulli_(),
    lambda m: m.ones(3).bernoulli_(0.5),
    lambda m: m.ones(3).bernoulli_(p=0.5),
    lambda m: m.ones(3).bernoulli_(m.full((3,), 0.3)),
    lambda m: m.ones(3).bernoulli_(m.full((3,), 0.5, dtype=m.float64)),
    lambda m: m.ones(2, 3).bernoulli_(m.full((3,), 0.3)),
    lambda m: m.ones(3, dtype=m.int64).bernoulli_(0.5),
    lambda m: m.ones(3, dtype=m.bool).bernoulli_(m.full((3,), 0.5)),
    lambda m: m.ones(3, device="meta").bernoulli_(0.5),
    lambda m: m.ones(3).exponential_(),
    lambda m: m.ones(3).exponential_(lambd=2.0),
    lambda m: m.ones(3, device="meta").exponential_(),
    lambda m: m.empty(0, dtype=m.int64).exponential_(),
    lambda m: m.rand_like(m.ones(2, 3)),
    lambda m: m.rand_like(m.ones(2, 3), dtype=m.float64),
    lambda m: m.randn_like(m.ones(2, 3).t()),
    lambda m: m.randn_like(m.ones(2, 3, dtype=m.float16)),
    lambda m: m.rand_like(m.ones(2, 3, 4, 5).permute(0, 2, 3, 1)),
    lambda m: m.randint_like(m.ones(2, 3), 10),
    lambda m: m.randint_like(m.ones(2, 3), 3, 10),
    lambda m: m.randint_like(m.ones(2, 3), low=3, high=10),
    lambda m: m.randint_like(m.ones(2, 3), high=10),
    lambda m: m.randint_like(m.ones(2, 3, dtype=m.int32), 10),
    lambda m: m.randint_like(m.ones(2, 3).t(), 10),
    lambda m: m.randint_like(m.ones(2, 3), 10, dtype=m.int64),
    lambda m: m.rand_like(m.ones(2, 3), device="meta"),
    lambda m: m.rand_like(m.ones(2, 3, device="meta")),
    lambda m: m.rand_like(m.ones(2, 3), requires_grad=True),
]


@pytest.mark.parametrize("fn", LAYOUTS)
def test_layout_matches_torch(fn):
    check(lambda m: _layout(fn(m)))


ERRORS = [
    lambda m: m.rand(2, dtype=m.int64),
    lambda m: m.rand(2, dtype=m.bool),
    lambda m: m.rand(0, dtype=m.int64),
    lambda m: m.randn(2, dtype=m.int32),
    lambda m: m.rand(2.5),
    lambda m: m.rand(-1),
    lambda m: m.randn(2, -2),
    lambda m: m.rand(2, requires_grad=True, dtype=m.int64),
    lambda m: m.randint(10, (2,), dtype=m.bool),
    lambda m: m.randint(300, (2,), dtype=m.uint8),
    lambda m: m.randint(-5, (2,)),
    lambda m: m.randint(5, 5, (2,)),
    lambda m: m.randint(5, 3, (2,)),
    lambda m: m.randint(0, 2**32, (0,), dtype=m.int32),
    lambda m: m.randint(10, 2),
    lambda m: m.randint(10),
    lambda m: m.randint(2.5, (2,)),
    lambda m: m.randint(3, (-1,)),
    lambda m: m.randint(3, (2,), dtype=m.complex64),
    lambda m: m.randint(10, (2,), requires_grad=True),
    lambda m: m.randperm(-1),
    lambda m: m.randperm(257, dtype=m.uint8),
    lambda m: m.randperm(129, dtype=m.int8),
    lambda m: m.randperm(2050, dtype=m.float16),
    lambda m: m.randperm(5, dtype=m.bool),
    lambda m: m.randperm(5, dtype=m.complex64),
    lambda m: m.randperm(2.0),
    lambda m: m.randperm(5, requires_grad=True),
    lambda m: m.normal(m.zeros(3), m.ones(4)),
    lambda m: m.normal(m.zeros(2, 3), m.ones(6)),
    lambda m: m.normal(m.zeros(3), -m.ones(3)),
    lambda m: m.normal(0.0, -1.0, (2,)),
    lambda m: m.normal(m.zeros(3), -1.0),
    lambda m: m.normal(m.zeros(3), float("nan")),
    lambda m: m.normal(m.zeros(3, dtype=m.int64), 1.0),
    lambda m: m.normal(0.0, m.ones(2, dtype=m.int64)),
    lambda m: m.normal(0., 1., (2,), dtype=m.int64),
    lambda m: m.normal(0.0, 1.0),
    lambda m: m.bernoulli(m.full((3,), 2.0)),
    lambda m: m.bernoulli(m.full((3,), -0.5)),
    lambda m: m.bernoulli(m.ones(3, dtype=m.int64)),
    lambda m: m.bernoulli(m.ones(3, dtype=m.bool)),
    lambda m: m.bernoulli(m.ones(3, dtype=m.complex64)),
    lambda m: m.bernoulli(m.ones(3), p=1.5),
    lambda m: m.ones(3).uniform_(5, 2),
    lambda m: m.ones(3, dtype=m.int64).uniform_(),
    lambda m: m.ones(3, dtype=m.bool).uniform_(),
    lambda m: m.empty(0, dtype=m.int64).uniform_(5, 2),
    lambda m: m.ones(3).uniform_(0, float("inf")),
    lambda m: m.ones(3).uniform_(float("nan"), 1),
    lambda m: m.ones(3).uniform_(-1e39, 1),
    lambda m: m.ones(3).uniform_(-3e38, 3e38),
    lambda m: m.ones(3, dtype=m.float16).uniform_(0, 70000),
    lambda m: m.ones(3).normal_(0, -1),
    lambda m: m.ones(3).normal_(0, float("nan")),
    lambda m: m.empty(0).normal_(0, -1),
    lambda m: m.ones(3, dtype=m.int64).normal_(),
    lambda m: m.ones(3).random_(5, 5),
    lambda m: m.ones(3).random_(0),
    lambda m: m.ones(3).random_(-3),
    lambda m: m.ones(3).random_(1.5),
    lambda m: m.ones(3).random_(0, 2**70),
    lambda m: m.ones(3, dtype=m.uint8).random_(300),
    lambda m: m.ones(3, dtype=m.bool).random_(3),
    lambda m: m.ones(3, dtype=m.bool).random_(3, None),
    lambda m: m.ones(3, dtype=m.int8).random_(200, 201),
    lambda m: m.ones(3, dtype=m.int8).random_(-200, 5),
    lambda m: m.ones(3, dtype=m.float16).random_(0, 65506),
    lambda m: m.ones(3, dtype=m.float16).random_(-65505, 0),
    lambda m: m.ones(3, dtype=m.complex64).random_(),
    lambda m: m.ones(3).bernoulli_(m.full((2,), 0.3)),
    lambda m: m.ones(3).bernoulli_(1.5),
    lambda m: m.ones(3).bernoulli_(m.full((3,), 2.0)),
    lambda m: m.ones(3).bernoulli_(m.ones(3, dtype=m.int64)),
    lambda m: m.ones(3).exponential_(0),
    lambda m: m.ones(3).exponential_(-1),
    lambda m: m.ones(3, dtype=m.int64).exponential_(),
    lambda m: m.ones(3, dtype=m.complex64).exponential_(),
    lambda m: m.ones(3).expand(2, 3).uniform_(),
    lambda m: m.ones(3).expand(2, 3).normal_(),
    lambda m: m.ones(3).expand(2, 3).random_(),
    lambda m: m.ones(3).expand(2, 3).bernoulli_(),
    lambda m: m.ones(3).expand(2, 3).exponential_(),
    lambda m: m.ones(3, requires_grad=True).uniform_(),
    lambda m: m.rand_like(m.ones(2, 3, dtype=m.int64)),
    lambda m: m.randint_like(m.ones(2, 3), 0),
    lambda m: m.randint_like(m.ones(2, 3)),
]


@pytest.mark.parametrize("fn", ERRORS)
def test_errors_match_torch(fn):
    raises_like(fn)


def test_error_messages():
    for fn in (lambda m: m.rand(2, dtype=m.int64), lambda m: m.randint(5, 3, (2,)),
               lambda m: m.ones(3).uniform_(5, 2), lambda m: m.ones(3).normal_(0, -1),
               lambda m: m.ones(3).exponential_(0), lambda m: m.ones(3, dtype=m.bool).random_(3),
               lambda m: m.ones(3).bernoulli_(1.5), lambda m: m.randperm(2050, dtype=m.float16)):
        torch_msg, msg = raises_like(fn)
        assert msg == torch_msg


def test_random_float_precision_warning():
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
        lantern.ones(3).random_(2**25)


def test_in_place_samplers_return_self_and_bump_version():
    x = lantern.ones(4)
    for sample in (lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.random_(5), lambda t: t.bernoulli_(),
                   lambda t: t.exponential_()):
        before = x._version
        assert sample(x) is x and x._version == before + 1


def test_in_place_sampler_writes_through_a_view():
    base = lantern.zeros(3, 4)
    base.t().uniform_(2, 3)
    assert all(2 <= v < 3 for row in base.tolist() for v in row)


# ---- values: ranges and loose statistics ---------------------------------------------------------------------------

N = 100_000


def _stats(t):
    a = np.asarray(t.to(lantern.float64).tolist())
    return a.mean(), a.std()


def test_uniform_statistics():
    g = lantern.Generator().manual_seed(1)
    for dtype in (lantern.float16, lantern.bfloat16, lantern.float32, lantern.float64):
        x = lantern.rand(N, generator=g, dtype=dtype)
        a = np.asarray(x.to(lantern.float64).tolist())
        assert a.min() >= 0 and a.max() < 1
        assert abs(a.mean() - 0.5) < 0.01 and abs(a.std() - (1 / 12) ** 0.5) < 0.01
    mean, std = _stats(lantern.empty(N).uniform_(-2, 6, generator=g))
    assert abs(mean - 2) < 0.05 and abs(std - 8 / 12 ** 0.5) < 0.05


def test_normal_statistics():
    g = lantern.Generator().manual_seed(2)
    mean, std = _stats(lantern.randn(N, generator=g))
    assert abs(mean) < 0.02 and abs(std - 1) < 0.02
    mean, std = _stats(lantern.empty(N, dtype=lantern.float64).normal_(3, 2, generator=g))
    assert abs(mean - 3) < 0.05 and abs(std - 2) < 0.05
    mean, std = _stats(lantern.normal(lantern.full((N,), -1.), lantern.full((N,), 0.5), generator=g))
    assert abs(mean + 1) < 0.02 and abs(std - 0.5) < 0.02
    z = lantern.randn(N, dtype=lantern.complex64, generator=g)
    parts = np.asarray(z.tolist())
    assert abs(parts.real.var() - 0.5) < 0.02 and abs(parts.imag.var() - 0.5) < 0.02
    parts = np.asarray(lantern.ones(N, dtype=lantern.complex64).normal_(1, 2, generator=g).tolist())
    assert abs(parts.imag.mean() - 1) < 0.05 and abs(parts.imag.std() - 2 ** 0.5) < 0.05   # as torch: both parts


def test_integer_ranges_and_permutations():
    g = lantern.Generator().manual_seed(4)
    r = np.asarray(lantern.randint(3, 10, (N,), generator=g).tolist())
    assert r.min() == 3 and r.max() == 9 and abs(r.mean() - 6) < 0.05
    b = np.asarray(lantern.empty(N, dtype=lantern.bool).random_(generator=g).tolist())
    assert 0.48 < b.mean() < 0.52
    top = np.asarray(lantern.empty(N, dtype=lantern.float16).random_(generator=g).tolist())
    assert top.min() >= 0 and top.max() <= 2048
    u8 = np.asarray(lantern.empty(N, dtype=lantern.uint8).random_(generator=g).tolist())
    assert u8.min() == 0 and u8.max() == 255
    assert sorted(lantern.randperm(50, generator=g).tolist()) == list(range(50))


def test_bernoulli_and_exponential_statistics():
    g = lantern.Generator().manual_seed(5)
    assert abs(lantern.bernoulli(lantern.full((N,), 0.3), generator=g).mean().item() - 0.3) < 0.01
    p = lantern.tensor([0., 1.]).expand(N // 2, 2)
    draws = lantern.empty(N // 2, 2).bernoulli_(lantern.tensor([0., 1.]), generator=g)
    assert draws.tolist() == p.tolist()
    mean, std = _stats(lantern.empty(N).exponential_(4.0, generator=g))
    assert abs(mean - 0.25) < 0.01 and abs(std - 0.25) < 0.01


def test_meta_draws_nothing():
    g = lantern.Generator().manual_seed(9)
    state = g.get_state()
    lantern.rand(10, device="meta", generator=g)
    lantern.ones(10, device="meta").normal_(generator=g)
    assert g.get_state().tolist() == state.tolist()
