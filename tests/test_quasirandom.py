"""torch.quasirandom.SobolEngine against torch: the same points bit for bit (plain and scrambled, float32 and float64,
1000 draws in dimensions up to 1111), the direction numbers of all 21201 dimensions (each dimension is drawn from
its own direction numbers alone), fast_forward, reset, draw_base2, out=, repr and errors."""
import numpy as np
import pytest
import torch

import lantern
from lantern.quasirandom import sobol_state
from nn_oracle import same_error


def _same_points(program):
    theirs, ours = program(torch), program(lantern)
    assert len(theirs) == len(ours)
    for t, l in zip(theirs, ours):
        assert str(l.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert l.shape == t.shape
        np.testing.assert_array_equal(l.numpy(), t.numpy())


@pytest.mark.parametrize("dimension", [1, 2, 7, 40, 250, 1111])
@pytest.mark.parametrize("scramble", [False, True])
def test_thousand_draws_match_torch(dimension, scramble):
    def program(lib):
        engine = lib.quasirandom.SobolEngine(dimension, scramble=scramble, seed=dimension)
        return [engine.draw(1), engine.draw(999), engine.draw(1, dtype=lib.float64)]
    _same_points(program)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtypes_match_torch(dtype):
    def program(lib):
        engine = lib.quasirandom.SobolEngine(5, scramble=True, seed=11)
        return [engine.draw(3, dtype=getattr(lib, dtype)), engine.draw(20, dtype=getattr(lib, dtype)),
                engine.reset().draw(1, dtype=lib.float16)]   # the first point is only cast, in any dtype
    _same_points(program)


def test_default_dtype_and_unseeded_scrambling_follow_torch():
    def program(lib):
        lib.manual_seed(123)
        engine = lib.quasirandom.SobolEngine(6, scramble=True)
        previous = lib.get_default_dtype()
        lib.set_default_dtype(lib.float64)
        try:
            return [engine.draw(5), lib.rand(2)]
        finally:
            lib.set_default_dtype(previous)
    _same_points(program)


def test_fast_forward_reset_base2_and_out():
    def program(lib):
        engine = lib.quasirandom.SobolEngine(4, scramble=True, seed=3)
        first = engine.fast_forward(5).draw(3)
        again = engine.reset().fast_forward(1).fast_forward(7).draw_base2(3)
        out = lib.empty(0)
        filled = engine.reset().draw_base2(2, out=out)
        assert filled is out
        return [first, again, out, engine.draw(2, out=lib.empty(7, 7)), engine.quasi, engine.shift,
                engine.sobolstate]
    _same_points(program)


def test_repr_and_attributes():
    for args in [(3,), (3, True), (3, True, 5), (3, False, 5)]:
        theirs, ours = torch.quasirandom.SobolEngine(*args), lantern.quasirandom.SobolEngine(*args)
        assert repr(ours) == repr(theirs)
        assert (ours.num_generated, ours.MAXBIT, ours.MAXDIM) == (theirs.num_generated, theirs.MAXBIT, theirs.MAXDIM)


def test_direction_numbers_of_every_dimension():
    """The table torch builds into its C++, all 21201 dimensions by 30 bits."""
    ours = sobol_state.direction_numbers(sobol_state.MAXDIM)
    np.testing.assert_array_equal(ours, torch.quasirandom.SobolEngine(sobol_state.MAXDIM).sobolstate.numpy())


ERRORS = {
    "dimension 0": lambda lib: lib.quasirandom.SobolEngine(0),
    "dimension too large": lambda lib: lib.quasirandom.SobolEngine(21202),
    "float16 draw": lambda lib: lib.quasirandom.SobolEngine(2).draw(3, dtype=lib.float16),
    "bfloat16 draw": lambda lib: lib.quasirandom.SobolEngine(2).fast_forward(1).draw(1, dtype=lib.bfloat16),
    "base2 unbalanced": lambda lib: lib.quasirandom.SobolEngine(2).fast_forward(3).draw_base2(2),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    same_error(ERRORS[name])
