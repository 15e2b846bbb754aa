"""Variable (torch.autograd.variable): the old name for a tensor that records history.

Variable and Tensor have been one class since PyTorch 0.4; the name stays a class so that old programs'
`isinstance(x, Variable)` holds for every tensor, and calling it hands back a tensor.

>>> import lantern
>>> from lantern.autograd import Variable
>>> v = Variable(lantern.ones(2), requires_grad=True)
>>> type(v).__name__, v.requires_grad, isinstance(lantern.zeros(1), Variable)
('Tensor', True, True)
"""
from ..core.tensor_impl import TensorImpl
from .engine import ExecutionEngine

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, TensorImpl)


class Variable(metaclass=_VariableMeta):
    """Calling Variable(data, requires_grad) returns `data` itself, or a detached copy of it requiring grad."""

    _execution_engine = ExecutionEngine()  # programs reach the engine's queue_callback here, as in PyTorch

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, TensorImpl):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad) if requires_grad else data
