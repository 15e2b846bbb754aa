"""lantern.onnx: export models to ONNX (torch.onnx's TorchScript-based exporter).

`export` traces the model with `lantern.jit.trace`, converts each `aten::` node with its symbolic function
(symbolic.py) into ONNX nodes, stores parameters as initializers and writes the ModelProto.

>>> import io, onnx, lantern
>>> f = io.BytesIO()
>>> lantern.onnx.export(lantern.nn.Linear(3, 2), lantern.ones(1, 3), f)
>>> [n.op_type for n in onnx.load_from_string(f.getvalue()).graph.node]
['Gemm']
"""
from . import errors
from .errors import OnnxExporterError, UnsupportedOperatorError
from .export import TrainingMode, export, is_in_onnx_export

__all__ = ["export", "errors", "TrainingMode", "is_in_onnx_export", "OnnxExporterError",
           "UnsupportedOperatorError"]
