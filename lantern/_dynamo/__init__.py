"""torch._dynamo: torch.compile's front end. In lantern, a compiled function is captured by lantern's tracer into a
JIT graph per input specialisation and run by the JIT's executor (lantern._dynamo.eval_frame).

>>> import lantern
>>> lantern._dynamo.reset()
>>> lantern._dynamo.config.suppress_errors, "inductor" in lantern._dynamo.list_backends()
(False, True)
"""
from . import config, exc
from .eval_frame import OptimizedModule, is_compiling, list_backends, optimize, reset

__all__ = ["config", "exc", "OptimizedModule", "is_compiling", "list_backends", "optimize", "reset"]
