"""The TorchScript runtime names torch re-exports at its top level (torch.Graph, torch.Node, torch.IntType,
torch.ScriptFunction, torch.Future, torch.fork, torch.parse_ir, torch.JITException, ...): here they are lantern's
own JIT classes and functions, which play those parts (a scripted function's `.graph` is a lantern.Graph, its nodes
lantern.Node, a fork gives a lantern.Future).

>>> import lantern as torch
>>> @torch.jit.script
... def f(x):
...     return x + 1
>>> isinstance(f, torch.ScriptFunction), isinstance(f.graph, torch.Graph), str(torch.IntType.get())
(True, True, 'int')
"""
from .jit import CompilationUnit, Future, ScriptFunction, ScriptMethod, fork, parse_ir, wait  # noqa: F401
from .jit import Error as JITException  # noqa: F401
from .jit.ir import Block, Graph, Node, Value  # noqa: F401
from .jit.types import (  # noqa: F401
    AnyType, BoolType, ClassType, DictType, FloatType, IntType, ListType, NoneType, NumberType, OptionalType,
    TensorType, TupleType, Type,
)
from .jit.types import DeviceType as DeviceObjType, StrType as StringType  # noqa: F401

__all__ = ["CompilationUnit", "Future", "ScriptFunction", "ScriptMethod", "fork", "parse_ir", "wait", "JITException",
           "Block", "Graph", "Node", "Value", "AnyType", "BoolType", "ClassType", "DictType", "FloatType", "IntType",
           "ListType", "NoneType", "NumberType", "OptionalType", "TensorType", "TupleType", "Type", "DeviceObjType",
           "StringType"]
