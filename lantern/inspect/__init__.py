"""Seeing inside lantern: tensors and their storage, autograd graphs, memory, drawn as text and pictures.

>>> import lantern
>>> print(lantern.inspect.explain(lantern.arange(6.).view(2, 3).t()))  # doctest: +SKIP
"""
from .render import render

__all__ = ["render"]
