"""Dispatch keys, highest priority first: Autocast > Tracer (JIT) > Autograd > the backends CUDA / CPU / Meta.

>>> DispatchKey.Autograd > DispatchKey.CPU
True
"""
import enum


class DispatchKey(enum.IntEnum):
    Meta = 1
    CPU = 2
    CUDA = 3
    Autograd = 10
    Tracer = 20
    Autocast = 30


BACKEND_KEYS = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta}
