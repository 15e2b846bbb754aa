"""torch.utils.deterministic: `fill_uninitialized_memory`, whether deterministic-algorithm mode fills new
uninitialised memory (NaN, or the largest integer) so that reading it shows. On by default.

>>> import lantern.utils.deterministic as deterministic
>>> deterministic.fill_uninitialized_memory
True
"""
import sys
import types

from ..core import determinism


class _DeterministicModule(types.ModuleType):
    """This module, with fill_uninitialized_memory as a property (a bool is checked on assignment)."""

    @property
    def fill_uninitialized_memory(self):
        return determinism.get_fill_uninitialized_memory()

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode):
        determinism.set_fill_uninitialized_memory(mode)


sys.modules[__name__].__class__ = _DeterministicModule
