"""`explain(q)` for a quantized tensor: the strided storage of its integers, and the quantizer that gives them
values.

>>> q = lantern.quantize_per_tensor(lantern.tensor([-1.0, 0.5, 2.0]), 0.1, 10, lantern.quint8)
>>> print(lantern.inspect.explain(q))  # doctest: +ELLIPSIS
quantized tensor quint8[3] on cpu, not a view
  storage          3 bytes = 3 uint8 integers, data_ptr 0x...
  storage_offset   0
  sizes            [3]
  strides          [1]
  is_contiguous    True
  location         [i] at storage[i*1]
  storage index    [0, 1, 2]
  covers           3 of the storage's 3 elements: 0-2
  live views       no other live tensor shares this storage
  version          0
  qscheme          per_tensor_affine (dispatch key QuantizedCPU)
  scale            0.1
  zero_point       10
  value            (q - 10) * 0.1, in float32
  int_repr         [ 0, 15, 30]
  dequantized      [-1. ,  0.5,  2. ]
  requires_grad    False
"""
import numpy as np

from ..backends.cpu import cpu
from ..backends.quantized import PerTensorAffine, dequantize_array, int_array
from .explain import _LABEL_WIDTH, TensorExplanation

_SHOW_VALUES = 64   # list the integers and values up to this many elements


class QuantizedTensorExplanation(TensorExplanation):
    """TensorExplanation of a quantized tensor: the storage lines count integers, and the quantizer follows."""

    def _lines(self):
        t = self.tensor
        lines = super()._lines()
        storage = t._storage
        ints = "integers" if t.dtype.elements_per_byte == 1 else \
            f"bytes, each packing {t.dtype.elements_per_byte} {t.dtype.bits}-bit integers"
        count = storage.nbytes() // t.dtype.itemsize
        lines[1] = f"  {'storage':<{_LABEL_WIDTH}}{storage.nbytes()} bytes = {count} {t.dtype.int_dtype.name} " \
                   f"{ints}, data_ptr {storage.data_ptr():#x}"
        at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("requires_grad"))
        lines[at:at] = self._quantizer_lines()
        return lines

    def _headline(self):
        return "quantized " + super()._headline()

    def _quantizer_lines(self):
        t = self.tensor
        quantizer = t._backend.quantizer
        rows = [("qscheme", f"{quantizer.qscheme.name} (dispatch key {t._backend.key.name})")]
        if isinstance(quantizer, PerTensorAffine):
            rows += [("scale", quantizer.scale), ("zero_point", quantizer.zero_point),
                     ("value", f"(q - {quantizer.zero_point}) * {quantizer.scale}, in float32")]
        else:
            rows += [("axis", quantizer.axis), ("scales", cpu.array(quantizer.scales).tolist()),
                     ("zero_points", cpu.array(quantizer.zero_points).tolist()),
                     ("value", f"(q - zero_points[c]) * scales[c], c the index along dim {quantizer.axis}, "
                               "in float32")]
        if t.numel() <= _SHOW_VALUES:
            rows += [("int_repr", int_array(t)), ("dequantized", dequantize_array(t))]
        lines = []
        for label, value in rows:
            text = np.array2string(value, separator=", ") if isinstance(value, np.ndarray) else str(value)
            first, *rest = text.split("\n")
            lines.append(f"  {label:<{_LABEL_WIDTH}}{first}")
            lines.extend(" " * (_LABEL_WIDTH + 2) + line for line in rest)
        return lines
