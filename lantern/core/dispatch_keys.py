"""Dispatch keys, highest priority first: Autocast > Tracer (JIT) > Autograd > the backends SparseCsrCPU / SparseCPU /
CUDA / CPU / Meta. A sparse key outranks the dense ones: dense + sparse runs the sparse kernel.

>>> DispatchKey.Autograd > DispatchKey.CPU
True
"""
import enum


class DispatchKey(enum.IntEnum):
    Meta = 1
    CPU = 2
    CUDA = 3
    SparseCPU = 4
    SparseCsrCPU = 5
    Autograd = 10
    Tracer = 20
    Autocast = 30


BACKEND_KEYS = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta}
