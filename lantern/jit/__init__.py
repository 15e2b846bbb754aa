"""lantern.jit: trace and script to one SSA IR, optimisation passes, an interpreter, save/load (torch.jit).

The graphs, passes and interpreter are plain Python: print a graph, run a pass on it, step through the
interpreter's instructions.
"""
from . import (types, ir, verify, tracer, frontend, module, serialization, interpreter, executor, fusion, code, passes,
               visualize, language, freezing)

__all__ = []
for _family in (types, ir, verify, tracer, frontend, module, serialization, interpreter, executor, fusion, code,
                language, freezing):
    globals().update({name: getattr(_family, name) for name in _family.__all__})
    __all__ += _family.__all__
