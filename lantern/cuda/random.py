"""torch.cuda.random: the CUDA generators' seeds and states. A CPU build has no CUDA generator, so seeding is
accepted and does nothing (as PyTorch queues it until CUDA initialises, which never happens), and reading a
state raises the 'not compiled' error.

>>> lantern.cuda.manual_seed(0), lantern.cuda.manual_seed_all(0), lantern.cuda.get_rng_state_all()
(None, None, [])
"""
from ..core.absent_device import needs

__all__ = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed"]


def manual_seed(seed):
    """Seed the current CUDA generator: nothing to seed here (lantern.manual_seed seeds the CPU generator)."""
    int(seed)


def manual_seed_all(seed):
    """Seed every CUDA generator: nothing to seed here."""
    int(seed)


def seed():
    """Seed the current CUDA generator from a random number: nothing to seed here."""


def seed_all():
    """Seed every CUDA generator from a random number: nothing to seed here."""


def get_rng_state_all():
    """The state of every CUDA generator: there are none."""
    return []


def set_rng_state(new_state, device="cuda"):
    """Set the current CUDA generator's state: none to set (PyTorch queues this and never runs it)."""


def set_rng_state_all(new_states):
    """Set every CUDA generator's state: none to set."""
    for state in new_states:
        set_rng_state(state)


get_rng_state = needs("CUDA", "get_rng_state", "The state of a CUDA generator as a ByteTensor.", __name__)
initial_seed = needs("CUDA", "initial_seed", "The seed the current CUDA generator started from.", __name__)
