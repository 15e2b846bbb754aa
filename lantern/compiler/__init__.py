"""torch.compiler: compile, reset, is_compiling, disable and list_backends over lantern's torch.compile
(lantern._dynamo.eval_frame).

>>> import lantern
>>> lantern.compiler.is_compiling(), lantern.compiler.list_backends()
(False, ['cudagraphs', 'inductor', 'openxla', 'tvm'])
"""
from .._dynamo.eval_frame import compile, disable, is_compiling, list_backends, reset

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "list_backends", "reset",
           "allow_in_graph", "assume_constant_result"]

is_dynamo_compiling = is_compiling


def allow_in_graph(fn):
    """Accepted as in torch; lantern's capture already traces through every function."""
    return fn


def assume_constant_result(fn):
    """Accepted as in torch; lantern's capture records what fn returns for each specialisation."""
    return fn
