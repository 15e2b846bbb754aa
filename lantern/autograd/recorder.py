"""Generated recorders: the one-output autograd kernel's work for one op, its formula arguments unrolled.

The autograd kernel (lantern/autograd/kernel.py) records any call in phases: check, compute, build the node, save,
set the history. For the commonest call (an op that returns one Tensor, is neither in-place nor out=, and whose
formulas each take one Tensor argument) `make_record_<n>(op)` builds, once per op, a function that does all of it
in one frame, with the op's facts (its derivative, the positions of its n formula arguments, whether its kernel
calls other ops, whether it makes a view) bound when the recorder is made instead of looked up per call. Its
source comes from `recorder_source`, is written to lantern/_generated/recorders.py by `make codegen` and loaded
from there (lantern.ops.generated), like the dispatcher's entries.

A recorder returns None, having done nothing, for a call it does not fit (a number where a formula takes a tensor;
anomaly mode or saved-tensor hooks on; a vmap level; no formula argument requires grad): the caller then records
through the phases.

>>> x = lantern.ones(2, requires_grad=True)
>>> record = recorder_for(lantern.ops.registry.get("mul"))
>>> record.__name__, record((x, x), x._backend).grad_fn.name()
('record_2', 'MulBackward0')
>>> record((x, 3), x._backend) is None     # a number where mul takes a tensor: the phases record it
True
"""
from ..ops import generated
from .graph import InputMeta

RECORDER_IMPORTS = """\
from lantern.autograd.graph import SavedTensor, _sequence as sequence, gradient_edge
from lantern.autograd.kernel import _BATCHED, _DIRECT_KINDS, _NO_EDGE, _VIEW, _compute, _node_class, _save_outputs
from lantern.autograd.node import save_value
from lantern.autograd.recorder import _INPUT_METAS as INPUT_METAS, input_metas
from lantern.autograd.views import record_view
from lantern.core.state import tls, unplain_threads as unplain
from lantern.core.tensor_impl import TensorImpl as T
from lantern.ops.derivative import TensorMeta
new = object.__new__
"""
_namespace = {}


def recorder_source(n):
    """The source of make_record_<n>(op): the recorder of ops whose n formulas each take one Tensor argument."""
    names = [f"a{k}" for k in range(n)]
    lines = [f"def make_record_{n}(op):",
             f'    """The one-output recorder of ops with {n} formula argument(s), each one Tensor."""',
             "    d, kernels = op.derivative, op.kernels",
             "    direct, view = op.kind in _DIRECT_KINDS, op.schema.alias is _VIEW",
             f"    {', '.join(f'i{k}' for k in range(n))}, = d.arg_indices",
             "",
             f"    def record_{n}(args, backend):",
             f"        {', '.join(names)} = {', '.join(f'args[i{k}]' for k in range(n))}",
             f"        if {' or '.join(f'not isinstance({a}, T)' for a in names)}:",
             "            return None",
             "        key = backend.key  # read once: a class attribute, which CPython 3.11 reads slowly",
             "        if (unplain and not tls.plain_recording) or key is _BATCHED:  # anomaly, saved hooks, vmap",
             "            return None"]
    for k, a in enumerate(names):
        lines += _edge_lines(k, a)
    lines += [f"        needs = ({', '.join(f'r{k}' for k in range(n))},)",
              "        if True not in needs:", "            return None",
              "        kernel = kernels.get(key)",
              "        result = kernel(op, args) if direct and kernel is not None else _compute(op, args, backend)",
              "        to_save, saves_result = d._plans.get(needs) or d.plan(needs)",
              "        node = new(d.node_cls or _node_class(d, args))",
              f"        node.next_functions, node._seq = ({', '.join(f'e{k}' for k in range(n))},), next(sequence)",
              "        metas = INPUT_METAS.get(result._size)",
              "        if metas is None or metas[0].dtype is not result.dtype or metas[0].backend is not result._backend:",
              "            metas = input_metas(result)",
              "        saved = {}",
              "        node._input_meta, node.derivative, node.needs, node.edge_counts, node.saved = metas, d, needs, None, saved"]
    lines += _save_lines()
    lines += ["        if result.dtype.is_floating_point or result.dtype.is_complex:",
              "            result._requires_grad, result._grad_fn = True, node",
              "        if view:",
              "            record_view(result, a0)",
              "        if saves_result:  # after the history is set: as the phases do",
              "            _save_outputs(node, result, saves_result)",
              "        return result",
              f"    return record_{n}"]
    return "\n".join(lines) + "\n"


def _save_lines():
    """Lines saving what the formulas that will run read of the arguments (_save_inputs, no saved-tensor hooks on:
    SavedTensor(a) and TensorMeta(a) with their fields set directly)."""
    return ["        for name, index, kind in to_save:",
            "            a = args[index]",
            "            if kind == 'tensor' and isinstance(a, T) and not a._is_inference:",
            "                st = saved[name] = new(SavedTensor)",
            "                st.tensor, st.version, st.is_output, st.output_nr, st.hooks_packed, st.unpack_hook = (",
            "                    a, a._vc[0], False, 0, False, None)",
            "            elif kind == 'meta':",
            "                m = saved[name] = new(TensorMeta)",
            "                m.size, m.stride, m.offset, m.dtype, m.device = (",
            "                    a._size, a._stride, a._offset, a.dtype, a._backend.device)",
            "            else:",
            "                saved[name] = save_value(a) if kind == 'tensor' else a"]


def _edge_lines(k, a):
    """Lines setting r<k> (does argument a require grad) and e<k> (its edge): gradient_edge's common cases."""
    return [f"        r{k} = {a}._requires_grad",
            f"        if not r{k}:",
            f"            e{k} = _NO_EDGE",
            "        else:",
            f"            meta, fn = {a}._autograd, {a}._grad_fn",
            "            if meta is not None and meta.attr_version is not None:  # a view changed in place",
            f"                e{k} = gradient_edge({a})",
            "            elif fn is not None:",
            f"                e{k} = (fn, {a}._output_nr)",
            "            elif meta is not None and meta.grad_accumulator is not None:",
            f"                e{k} = (meta.grad_accumulator, 0)",
            "            else:",
            f"                e{k} = gradient_edge({a})"]


_INPUT_METAS = {}  # shape -> the latest (InputMeta,) made for an output of that shape


def input_metas(t):
    """(InputMeta(t),), shared by the nodes of every output with t's shape, dtype and device (an InputMeta is never
    changed once made): one dict lookup instead of a new object per recorded op."""
    metas = _INPUT_METAS.get(t._size)
    if metas is None or metas[0].dtype is not t.dtype or metas[0].backend is not t._backend:
        metas = (InputMeta(t),)
        if len(_INPUT_METAS) < 4096 or t._size in _INPUT_METAS:
            _INPUT_METAS[t._size] = metas
    return metas


def recorder_for(op):
    """op's generated recorder (from lantern/_generated/recorders.py when that file is current)."""
    if not _namespace:
        _namespace.update(generated.imported(RECORDER_IMPORTS))
    n = len(op.derivative.arg_indices)
    factory = generated.define("recorders", f"make_record_{n}", recorder_source(n), _namespace)
    record = factory(op)
    record.op, record.source = op, factory.source
    return record
