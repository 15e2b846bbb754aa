"""torch.cuda.random: the CUDA generators' seeds and states. A CPU build has no CUDA generator, so seeding is
accepted and does nothing (as PyTorch queues it until CUDA initialises, which never happens), and reading a
state raises the 'not compiled' error.

>>> lantern.cuda.manual_seed(0), lantern.cuda.manual_seed_all(0), lantern.cuda.get_rng_state_all()
(None, None, [])
"""
from ..core.absent_device import (  # noqa: F401  (the answers torch.xpu gives too)
    get_rng_state_all, manual_seed, manual_seed_all, needs, seed, seed_all, set_rng_state, set_rng_state_all,
)

__all__ = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed"]


get_rng_state = needs("CUDA", "get_rng_state", "The state of a CUDA generator as a ByteTensor.", __name__)
initial_seed = needs("CUDA", "initial_seed", "The seed the current CUDA generator started from.", __name__)
