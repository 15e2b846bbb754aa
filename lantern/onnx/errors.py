"""The ONNX exporter's exceptions, named as torch.onnx.errors names them.

>>> from lantern.onnx.errors import UnsupportedOperatorError
>>> str(UnsupportedOperatorError("aten::fft_fft", 17, None))
"Exporting the operator 'aten::fft_fft' to ONNX opset version 17 is not supported"
"""

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "SymbolicValueError", "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """Warnings from the ONNX exporter."""


class OnnxExporterError(RuntimeError):
    """Base class of every error the exporter raises."""


class UnsupportedOperatorError(OnnxExporterError):
    """An operator of the traced graph has no conversion to ONNX at the requested opset."""

    def __init__(self, name, version, supported_version):
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not supported. Support for "
                   f"this operator was added in version {supported_version}, try exporting with this version")
        elif name.startswith(("aten::", "prim::", "quantized::")):
            msg = f"Exporting the operator '{name}' to ONNX opset version {version} is not supported"
        else:
            msg = (f"ONNX export failed on an operator with unrecognized namespace {name}. If you are trying to "
                   "export a custom operator, make sure you registered it with the right domain and version.")
        super().__init__(msg)


class SymbolicValueError(OnnxExporterError):
    """A value of the traced graph that the exporter cannot express (with the node that made it)."""

    def __init__(self, msg, value):
        node = value.node()
        super().__init__(f"{msg}  [Caused by the value '{value.debugName()}' (type '{value.type()}') in the "
                         f"TorchScript graph. The containing node has kind '{node.kind()}'.] ")
