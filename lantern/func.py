"""lantern.func: torch.func's functional_call (the other function transforms, vmap, grad, jacrev..., are not
implemented yet: see docs/unsupported-torch-names.md).

>>> import lantern
>>> lantern.func.functional_call(lantern.nn.Linear(1, 1), {"weight": lantern.ones(1, 1), "bias": lantern.ones(1)},
...                              lantern.tensor([[2.0]]))
tensor([[3.]])
"""
from .nn.utils.stateless import _functional_call

__all__ = ["functional_call"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the given tensors (a dict, or a sequence of dicts) as its parameters/buffers."""
    return _functional_call(module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights, strict=strict)
