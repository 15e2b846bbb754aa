"""lantern.quasirandom: SobolEngine, the (optionally scrambled) Sobol low-discrepancy sequence, as
torch.quasirandom; the same points as torch's, bit for bit, for the same dimension, scrambling and seed.

>>> engine = lantern.quasirandom.SobolEngine(dimension=3)
>>> engine.draw(4)
tensor([[0.0000, 0.0000, 0.0000],
        [0.5000, 0.5000, 0.5000],
        [0.7500, 0.2500, 0.2500],
        [0.2500, 0.7500, 0.7500]])
>>> engine.fast_forward(3).draw(1, dtype=lantern.float64)
tensor([[0.1250, 0.6250, 0.3750]], dtype=lantern.float64)
>>> lantern.quasirandom.SobolEngine(2, scramble=True, seed=0)
SobolEngine(dimension=2, scramble=True, seed=0)
"""
import lantern

from . import sobol_state
from .sobol_state import MAXBIT, MAXDIM

__all__ = ["SobolEngine"]


class SobolEngine:
    """Draws points of the Sobol sequence in [0, 1)^dimension (dimension up to 21201), one after another.

    scramble=True applies Owen's random linear scrambling and a random digital shift, drawn from a generator
    seeded with `seed` (else from the default generator), as torch draws them."""
    MAXBIT = MAXBIT
    MAXDIM = MAXDIM

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self.sobolstate = lantern.from_numpy(sobol_state.direction_numbers(dimension))
        if scramble:
            self._scramble()
        else:
            self.shift = lantern.zeros(dimension, dtype=lantern.long)
        self.quasi = self.shift.clone(memory_format=lantern.contiguous_format)
        self._first_point = (self.quasi / 2**self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def _scramble(self):
        generator = None
        if self.seed is not None:
            generator = lantern.Generator()
            generator.manual_seed(self.seed)
        shift_bits = lantern.randint(2, (self.dimension, self.MAXBIT), generator=generator)
        self.shift = lantern.mv(shift_bits, lantern.pow(2, lantern.arange(0, self.MAXBIT)))
        ltm = lantern.randint(2, (self.dimension, self.MAXBIT, self.MAXBIT), generator=generator).tril()
        self.sobolstate = lantern.from_numpy(sobol_state.scramble(self.sobolstate.numpy(), ltm.numpy()))

    def draw(self, n=1, out=None, dtype=None):
        """The next `n` points, (n, dimension), in `dtype` (default: the default dtype); into `out` if given."""
        dtype = lantern.get_default_dtype() if dtype is None else dtype
        if self.num_generated == 0:
            result = self._first_point.to(dtype)
            if n > 1:
                result = lantern.cat((result, self._advance(n - 1, 0, dtype)), dim=-2)
        else:
            result = self._advance(n, self.num_generated - 1, dtype)
        self.num_generated += n
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def _advance(self, n, index, dtype):
        """The n points after point `index`, as `dtype` fractions; `quasi` moves to the last of them."""
        if dtype not in (lantern.float32, lantern.float64):
            raise NotImplementedError(f"\"_sobol_engine_draw\" not implemented for '{dtype.legacy}'")
        points, quasi = sobol_state.draw(self.quasi.numpy(), self.sobolstate.numpy(), index, n)
        self.quasi = lantern.from_numpy(quasi.copy())
        return lantern.from_numpy(points / 2**self.MAXBIT).to(dtype)

    def draw_base2(self, m, out=None, dtype=None):
        """The next 2**m points; the points drawn so far and these must number a power of 2 (Sobol's balance)."""
        n = 2**m
        total_n = self.num_generated + n
        if total_n & (total_n - 1) != 0:
            raise ValueError("The balance properties of Sobol' points require n to be a power of 2. "
                             f"{self.num_generated} points have been previously generated, then: "
                             f"n={self.num_generated}+2**{m}={total_n}. If you still want to do this, please use "
                             "'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        """Back to the first point."""
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skip the next `n` points, as drawing them would."""
        index = self.num_generated - 1 if self.num_generated else 0
        count = n if self.num_generated else n - 1
        _, quasi = sobol_state.draw(self.quasi.numpy(), self.sobolstate.numpy(), index, count)
        self.quasi.copy_(lantern.from_numpy(quasi))
        self.num_generated += n
        return self

    def __repr__(self):
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
