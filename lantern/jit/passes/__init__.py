"""lantern.jit.passes: each optimisation pass is a function Graph -> Graph, usable on its own."""
from . import inline, dead_code_elimination, constant_propagation, cse, peephole, unroll_loops, fuse, pipeline

__all__ = []
for _family in (inline, dead_code_elimination, constant_propagation, cse, peephole, unroll_loops, fuse, pipeline):
    globals().update({name: getattr(_family, name) for name in _family.__all__})
    __all__ += _family.__all__
