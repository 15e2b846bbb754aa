"""The TorchScript runtime names torch re-exports at its top level (torch.Graph, torch.Node, torch.IntType,
torch.ScriptFunction, torch.parse_ir, torch.JITException, ...): here they are lantern's own JIT classes and
functions, which play those parts (a scripted function's `.graph` is a lantern.Graph, its nodes lantern.Node).

>>> import lantern as torch
>>> @torch.jit.script
... def f(x):
...     return x + 1
>>> isinstance(f, torch.ScriptFunction), isinstance(f.graph, torch.Graph), str(torch.IntType.get())
(True, True, 'int')
"""
from .jit.frontend import CompilationUnit  # noqa: F401
from .jit.interpreter import Error as JITException  # noqa: F401
from .jit.ir import Block, Graph, Node, Value  # noqa: F401
from .jit.ir_text import parse_ir  # noqa: F401
from .jit.module import ScriptFunction, ScriptMethod  # noqa: F401
from .jit.types import (  # noqa: F401
    AnyType, BoolType, ClassType, DictType, FloatType, IntType, ListType, NoneType, NumberType, OptionalType,
    TensorType, TupleType, Type,
)
from .jit.types import DeviceType as DeviceObjType, StrType as StringType  # noqa: F401

__all__ = ["CompilationUnit", "ScriptFunction", "ScriptMethod", "parse_ir", "JITException",
           "Block", "Graph", "Node", "Value", "AnyType", "BoolType", "ClassType", "DictType", "FloatType", "IntType",
           "ListType", "NoneType", "NumberType", "OptionalType", "TensorType", "TupleType", "Type", "DeviceObjType",
           "StringType"]
