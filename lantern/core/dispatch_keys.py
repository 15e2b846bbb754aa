"""Dispatch keys, highest priority first: Autocast > Tracer (JIT) > Autograd > the backends Masked / QuantizedCPU /
SparseCsrCPU / SparseCPU / CUDA / CPU / Meta. A sparse key outranks the dense ones: dense + sparse runs the sparse
kernel. Masked (a MaskedTensor's ops: lantern/masked/maskedtensor) outranks them all, as torch's Python key does:
MaskedTensor + Tensor runs the masked kernel. QuantizedCPU (a quantized tensor's ops: lantern/ops/quantized*.py)
outranks CPU, so float + quantized runs the quantized kernel, which refuses as torch's does. (torch ranks it below
the sparse keys; lantern's numbers were taken, and no op mixes those layouts.)

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
    QuantizedCPU = 7
    Masked = 8
    Python = 9       # __torch_dispatch__ of wrapper subclasses and dispatch modes (lantern/ops/python_key.py)
    Autograd = 10
    Tracer = 20
    Autocast = 30


BACKEND_KEYS = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta}
