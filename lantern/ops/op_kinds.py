"""The two enums of the op record: how an op's output is made (`OpKind`) and how it aliases its inputs (`AliasKind`).

Both are string enums: a member equals its value, so op cards, generated code and `"run_" + kind.value` read the
same words PyTorch's docs use, while the code names each kind once.

>>> from lantern.ops.registry import REGISTRY
>>> REGISTRY["add"].kind, REGISTRY["add_"].kind, REGISTRY["add.out"].alias
(<OpKind.STRUCTURED: 'structured'>, <OpKind.STRUCTURED_INPLACE: 'structured_inplace'>, <AliasKind.OUT: 'out'>)
"""
import enum


class OpKind(enum.StrEnum):
    """How an operator's output is made; each backend has a `run_<value>` runner per kind."""

    STRUCTURED = "structured"                  # meta gives (shape, dtype); the kernel fills a new output
    STRUCTURED_INPLACE = "structured_inplace"  # the same meta and kernel, writing into self (add_)
    STRUCTURED_OUT = "structured_out"          # the same meta and kernel, writing into a resized out= (add.out)
    VIEW = "view"                              # meta gives (sizes, strides, offset) over the input's storage
    CUSTOM = "custom"                          # the kernel builds its own outputs


class AliasKind(enum.StrEnum):
    """How a schema's result relates to its inputs, read from its alias annotations (Tensor(a), Tensor(a!))."""

    NEW = "new"          # a fresh tensor
    VIEW = "view"        # shares the input's storage: Tensor(a) self -> Tensor(a)
    INPLACE = "inplace"  # mutates a positional input and returns it: Tensor(a!) self
    OUT = "out"          # mutates keyword-only out= arguments and returns them
