"""Dispatch keys, highest priority first: Autocast > Tracer (JIT) > Autograd > the backends Masked / QuantizedCPU /
SparseCsrCPU / SparseCPU / CUDA / CPU / Meta. A sparse key outranks the dense ones: dense + sparse runs the sparse
kernel. Masked (a MaskedTensor's ops: lantern/masked/maskedtensor) outranks them all, as torch's Python key does:
MaskedTensor + Tensor runs the masked kernel. QuantizedCPU (a quantized tensor's ops: lantern/ops/quantized*.py)
outranks CPU, so float + quantized runs the quantized kernel, which refuses as torch's does. (torch ranks it below
the sparse keys; lantern's numbers were taken, and no op mixes those layouts.) Conjugate and Negative (a tensor whose
memory is read through a conjugate or negative bit: `x.conj()`, `x._neg_view()`) outrank the dense and sparse keys,
so that any op given such a tensor runs their fallback, which resolves the bit first (as torch's fallbacks do).
PrivateUse1 is the key of a device from outside lantern (lantern.backends.privateuse1; its name is
lantern.utils.rename_privateuse1_backend's).

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
    PrivateUse1 = 6
    QuantizedCPU = 7
    Masked = 8
    Python = 9       # __torch_dispatch__ of wrapper subclasses and dispatch modes (lantern/ops/python_key.py)
    Conjugate = 10   # a conjugate view's ops (lantern/ops/math_bits.py): the bit is resolved, then they run below it
    Negative = 11    # a negative view's ops, as Conjugate's
    Autograd = 12
    FuncTorchBatched = 15  # vmap's BatchedTensors (lantern/_functorch/batched_tensor.py): above Autograd, as torch's
    Tracer = 20
    Autocast = 30


BACKEND_KEYS = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta,
                "privateuseone": DispatchKey.PrivateUse1}
