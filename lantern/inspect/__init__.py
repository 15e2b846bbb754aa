"""Seeing inside lantern: tensors and their storage, autograd graphs, memory, drawn as text and pictures.

>>> import lantern
>>> x = lantern.arange(6.).view(2, 3)
>>> e = lantern.inspect.explain(x.t())      # print(e) for the whole report, e.save("x.png") for the picture
>>> print(str(e).splitlines()[0])
tensor float32[3, 2] on cpu, a view (not contiguous)
>>> e.covered.tolist()
[0, 1, 2, 3, 4, 5]
>>> lantern.inspect.memory_stats()["allocated_bytes.all.current"] > 0
True
"""
from .autograd_graph import AutogradGraph, autograd_graph
from .explain import TensorExplanation, explain
from .op_card import OpCard, op_card
from .memory import (max_memory_allocated, memory_allocated, memory_reserved, memory_stats, memory_summary,
                     reset_peak_memory_stats)
from .render import render

__all__ = ["autograd_graph", "AutogradGraph", "explain", "TensorExplanation", "op_card", "OpCard",
           "memory_stats", "memory_summary",
           "reset_peak_memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved", "render"]
