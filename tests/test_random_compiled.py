"""The compiled random draws (lantern/ops/random_numba.py) against the readable ones and against torch.

random_draws' specialisations run the Mersenne Twister on the generator's state in place; they must give the same
values and leave the same generator state (torch's 5056-byte get_rng_state) as the readable draws, from a fresh
seed and from the middle of the stream, across the 624-word regenerations.
"""
import numpy as np
import pytest
import torch

import lantern
from lantern.core.reference import reference_mode
from lantern.ops import random_draws as draws

pytest.importorskip("numba")

DRAWS = {
    "words": lambda g, n: draws.words(g, n),
    "float32 uniforms": lambda g, n: draws.unit_uniform(g, n, np.float32),
    "float64 uniforms": lambda g, n: draws.unit_uniform(g, n, np.float64),
    "bernoulli(0.9)": lambda g, n: draws.bernoulli_scalar(g, n, 0.9),
    "bernoulli(0.25)": lambda g, n: draws.bernoulli_scalar(g, n, 0.25),
}


def _generator(already_drawn):
    g = lantern.Generator().manual_seed(1234)
    if already_drawn:
        draws.unit_uniform(g, already_drawn, np.float32)   # readable: below COMPILED_FROM
    return g


@pytest.mark.parametrize("kind", DRAWS)
@pytest.mark.parametrize("already_drawn", [0, 1, 623, 300])
@pytest.mark.parametrize("n", [draws.COMPILED_FROM, 5000, 20011])
def test_compiled_draws_match_the_readable_ones(kind, already_drawn, n):
    compiled_generator, readable_generator = _generator(already_drawn), _generator(already_drawn)
    with reference_mode(False):                     # the reference tier runs this file too
        assert draws.compiled_draws_apply(compiled_generator, n)
        compiled = DRAWS[kind](compiled_generator, n)
    with reference_mode():
        assert not draws.compiled_draws_apply(readable_generator, n)
        readable = DRAWS[kind](readable_generator, n)
    assert compiled.dtype == readable.dtype and np.array_equal(compiled, readable)
    assert lantern.equal(compiled_generator.get_state(), readable_generator.get_state())
    assert np.array_equal(DRAWS[kind](compiled_generator, 7), DRAWS[kind](readable_generator, 7))


def test_a_fresh_generator_reports_torchs_state_after_a_compiled_draw():
    torch.manual_seed(0)
    lantern.manual_seed(0)
    expected = torch.rand(10_000)
    got = lantern.rand(10_000)
    assert np.array_equal(got.numpy(), expected.numpy())
    assert np.array_equal(lantern.get_rng_state().numpy(), torch.get_rng_state().numpy())


# randn's Box-Muller runs NumPy's log and cos where torch runs its vectorised ones: equal up to the last bit or two
@pytest.mark.parametrize("op, rtol", [
    (lambda lib: lib.nn.functional.dropout(lib.ones(64, 130), 0.1), 0),
    (lambda lib: lib.randn(80, 70, dtype=lib.float64), 1e-15),
    (lambda lib: lib.empty(5000).bernoulli_(0.3), 0),
    (lambda lib: lib.empty(4100, dtype=lib.float64).uniform_(-2, 3), 0),
])
def test_large_draws_give_torchs_numbers(op, rtol):
    torch.manual_seed(7)
    lantern.manual_seed(7)
    np.testing.assert_allclose(op(lantern).numpy(), op(torch).numpy(), rtol=rtol, atol=0)
    np.testing.assert_array_equal(lantern.get_rng_state().numpy(), torch.get_rng_state().numpy())


def test_a_state_out_of_reach_takes_the_readable_draws():
    g = lantern.Generator().manual_seed(3)
    g.engine._in_place = False                          # as if NumPy laid out its state another way
    assert not draws.compiled_draws_apply(g, 10_000)
    expected = lantern.Generator().manual_seed(3)
    with reference_mode():
        assert np.array_equal(draws.unit_uniform(g, 10_000, np.float32),
                              draws.unit_uniform(expected, 10_000, np.float32))
