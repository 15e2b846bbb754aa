"""`lantern.onnx.export`: trace the model, convert its graph to ONNX, write the ModelProto.

>>> import io, onnx, lantern
>>> model = lantern.nn.Sequential(lantern.nn.Linear(4, 3), lantern.nn.ReLU())
>>> f = io.BytesIO()
>>> export(model, (lantern.randn(2, 4),), f, input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "n"}})
>>> proto = onnx.load_from_string(f.getvalue())
>>> [n.op_type for n in proto.graph.node], [i.name for i in proto.graph.initializer]
(['Gemm', 'Relu'], ['0.weight', '0.bias'])
>>> proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param
'n'
"""
import enum
import os
import warnings

import lantern
from ..core.tensor_impl import TensorImpl
from ..nn import Module
from .errors import OnnxExporterError
from ..core import user_warnings

__all__ = ["export", "TrainingMode", "is_in_onnx_export"]

DEFAULT_OPSET = 20   # torch 2.13's default for the TorchScript-based exporter
MIN_OPSET, MAX_OPSET = 13, 20

_EXPORTING = [False]
_LEGACY_WARNING = (
    "You are using the legacy TorchScript-based ONNX export. Starting in PyTorch 2.9, the new torch.export-based "
    "ONNX exporter has become the default. Learn more about the new export logic: "
    "https://docs.pytorch.org/docs/stable/onnx_export.html. For exporting control flow: "
    "https://pytorch.org/tutorials/beginner/onnx/export_control_flow_model_to_onnx_tutorial.html")


class TrainingMode(enum.IntEnum):
    """Which mode the model is exported in (torch.onnx.TrainingMode)."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def is_in_onnx_export():
    """True while `export` runs (models may branch on it)."""
    return _EXPORTING[0]


def export(model, args=(), f=None, export_params=True, verbose=False, training=None, input_names=None,
           output_names=None, opset_version=None, dynamic_axes=None, do_constant_folding=True,
           keep_initializers_as_inputs=None, dynamo=None, **unsupported):
    """Export `model` (a Module or function) called on `args` to ONNX, writing the model to `f` (a path or a
    binary file-like object). The graph is recorded with `lantern.jit.trace`; `dynamic_axes` maps an input or
    output name to {axis: name} or [axis, ...] for the axes whose size may differ at run time. This is torch's
    TorchScript-based exporter (dynamo=False), the only one lantern has; asking for it by name warns as torch does."""
    if dynamo:
        raise NotImplementedError("lantern.onnx.export implements the TorchScript-based exporter (dynamo=False) "
                                  "only")
    if dynamo is not None:
        user_warnings.warn(_LEGACY_WARNING, DeprecationWarning, stacklevel=2)
    if unsupported:
        raise NotImplementedError(f"lantern.onnx.export does not support {sorted(unsupported)}")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"Unsupported ONNX opset version: {opset}. Supported versions are "
                         f"{MIN_OPSET} to {MAX_OPSET} in lantern.onnx.export.")
    args = _as_tuple(args)
    is_module = isinstance(model, Module)
    restore = model.training if is_module else None
    if is_module:
        mode = TrainingMode.EVAL if training is None else TrainingMode(training)
        if mode != TrainingMode.PRESERVE:
            model.train(mode == TrainingMode.TRAINING)
    _EXPORTING[0] = True
    try:
        axes = _normalise_axes(dynamic_axes, input_names, output_names)
        proto = _export(model, args, is_module, export_params, input_names, output_names, opset, axes,
                        do_constant_folding, keep_initializers_as_inputs)
    finally:
        _EXPORTING[0] = False
        if is_module:
            model.train(restore)
    if verbose:
        from onnx import helper
        print(helper.printable_graph(proto.graph))
    if f is not None:
        data = proto.SerializeToString()
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as fh:
                fh.write(data)
        else:
            f.write(data)
    return None


def _as_tuple(args):
    if isinstance(args, TensorImpl):
        return (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict):
        if args[-1]:
            raise NotImplementedError("lantern.onnx.export: keyword arguments in args are not supported")
        args = args[:-1]
    return args


def _normalise_axes(dynamic_axes, input_names, output_names):
    """{name: {axis: dim name}}, list forms named as torch names them ('<name>_dynamic_axes_<k>'), with torch's
    warnings for unknown names and for list forms."""
    out = {}
    valid = set(input_names or []) | set(output_names or [])
    for name, axes in (dynamic_axes or {}).items():
        if name not in valid:
            user_warnings.warn(f"Provided key {name} for dynamic axes is not a valid input/output name", stacklevel=3)
        if isinstance(axes, dict):
            out[name] = {int(a): str(n) for a, n in axes.items()}
        else:
            user_warnings.warn("No names were found for specified dynamic axes of provided input.Automatically generated "
                          f"names will be applied to each dynamic axes of input {name}", stacklevel=3)
            out[name] = {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
    return out


def _flat_tensors(args):
    flat = []
    for a in args:
        if isinstance(a, TensorImpl):
            flat.append(a)
        elif isinstance(a, (list, tuple)):
            flat.extend(_flat_tensors(a))
        else:
            raise OnnxExporterError(f"lantern.onnx.export: model inputs must be tensors, got {type(a).__name__}")
    return flat


def _rebuild(args, tensors):
    it = iter(tensors)

    def go(a):
        if isinstance(a, TensorImpl):
            return next(it)
        return type(a)(go(x) for x in a)
    return tuple(go(a) for a in args)


def _trace(model, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with lantern.no_grad():
            return lantern.jit.trace(model, args if len(args) != 1 else args[0], check_trace=False).graph


def _export(model, args, is_module, export_params, input_names, output_names, opset, dynamic_axes,
            do_constant_folding, keep_initializers_as_inputs):
    # onnx is an optional dependency: imported only when exporting
    from onnx import helper

    from .builder import GraphBuilder, Var, onnx_dtype  # optional: onnx loads on the first export, not with lantern
    from .convert import convert_graph, symbolic_constants  # optional: onnx
    from .folding import fold_constants  # optional: onnx
    tensors = _flat_tensors(args)
    names = list(input_names or [])
    names += [None] * (len(tensors) - len(names))
    graph = _trace(model, args)
    graph_inputs = list(graph.inputs())
    owner = graph_inputs[0] if is_module else None
    tensor_values = graph_inputs[1:] if is_module else graph_inputs

    # a second trace with every dynamic axis one longer (the first slice repeated, so data-dependent Python
    # sees the same kind of values) shows which traced ints follow those axes
    sources, resized = [], list(tensors)
    for i, (t, name) in enumerate(zip(tensors, names)):
        for axis in dynamic_axes.get(name, {}) if name is not None else ():
            sources.append((_placeholder(i), axis, t.shape[axis], t.shape[axis] + 1))
            resized[i] = lantern.cat([resized[i], resized[i].narrow(axis, 0, 1)], axis)
    symbols = {}
    outputs_resized = None
    if sources:
        args2 = _rebuild(args, resized)
        symbols = symbolic_constants(graph, _trace(model, args2), sources)
        with lantern.no_grad():
            result = model(*args2)
        outputs_resized = _flat_tensors(result if isinstance(result, (tuple, list)) else (result,))

    g = GraphBuilder(opset)
    bound = []
    if owner is not None:
        bound.append((owner, model, None))
    for i, (value, t) in enumerate(zip(tensor_values, tensors)):
        bound.append((value, t, g.add_input(_placeholder(i), t.dtype, t.shape)))
    params = {}
    if is_module:
        for pname, p in list(model.named_parameters()) + list(model.named_buffers()):
            params.setdefault(id(p), pname)
    conv, outs = convert_graph(g, graph, bound, opset, params, export_params, symbols)
    if do_constant_folding:
        folded = fold_constants(g)
        outs = [(value, Var(folded.get(var.name, var.name), var.shape, var.dtype), example)
                for value, var, example in outs]

    final = _name_outputs(g, outs, output_names)
    g.prune([name for name, _ in final])
    _name_inputs(g, names, dynamic_axes)
    outputs = [_output_info(name, example, dynamic_axes.get(name, {}),
                            outputs_resized[k] if outputs_resized is not None else None)
               for k, (name, example) in enumerate(final)]
    extra = []
    for name, var in conv.param_inputs.items():
        extra.append(helper.make_tensor_value_info(name, onnx_dtype(var.dtype), list(var.shape)))
    if keep_initializers_as_inputs:
        for name, init in g.initializers.items():
            extra.append(helper.make_tensor_value_info(name, init.data_type, list(init.dims)))
    return g.model(outputs, producer_version=lantern.__version__, extra_inputs=extra)


def _name_outputs(g, outs, output_names):
    """Give the graph's outputs their names (the given ones, else the traced values' debug names); an Identity
    makes the name where the value is an input, an initializer, a constant or an earlier output."""
    from onnx import helper
    names = list(output_names or [])
    names += [value.debugName() for value, _, _ in outs[len(names):]]
    taken = {vi.name for vi in g.inputs} | set(g.initializers)
    renamed, final = {}, []
    for (value, var, example), name in zip(outs, names):
        producer = g.producer(var.name)
        if var.name in renamed or var.name in taken or producer is None or producer.op_type == "Constant":
            g.nodes.append(helper.make_node("Identity", [renamed.get(var.name, var.name)], [name]))
        else:
            g.rename(var.name, name)
            renamed[var.name] = name
        final.append((name, example))
    return final


def _name_inputs(g, names, dynamic_axes):
    """The given input names, or onnx::<first consumer>_<i> as torch names them; dynamic dims get their names."""
    for i, (vi, name) in enumerate(zip(list(g.inputs), names)):
        if name is None:
            consumer = next((n.op_type for n in g.nodes if vi.name in n.input), None)
            name = f"onnx::{consumer}_{i}" if consumer else f"input_{i}"
        g.rename(vi.name, name)
        _set_dims(vi, dynamic_axes.get(name, {}))


def _output_info(name, example, axes, resized):
    """An output's ValueInfo: dims named by dynamic_axes, and any other dim that changed in the resized run."""
    from onnx import helper
    from .builder import onnx_dtype  # optional: onnx
    info = helper.make_tensor_value_info(name, onnx_dtype(example.dtype), list(example.shape))
    axes = dict(axes)
    if resized is not None:
        for d, (a, b) in enumerate(zip(example.shape, resized.shape)):
            if a != b:
                axes.setdefault(d, f"{name}_dim_{d}")
    _set_dims(info, axes)
    return info


def _placeholder(i):
    return f"__input_{i}"


def _set_dims(info, axes):
    dims = info.type.tensor_type.shape.dim
    for axis, name in axes.items():
        dims[axis].ClearField("dim_value")
        dims[axis].dim_param = name
