"""The dispatcher: from an op and its arguments to one kernel, highest dispatch key first.

Keys, high to low: Autocast (lantern.autocast is on: lantern.ops.autocast) > Tracer (a JIT trace is recording) >
Autograd (grad mode is on and an input requires grad) > the backend of the inputs (CUDA / CPU / Meta). A kernel may
redispatch below its own key: the autograd kernel computes through `redispatch(op, args, DispatchKey.Autograd)` and
then records a graph node.

>>> from lantern.ops import dispatcher, registry
>>> x = lantern.ones(2)
>>> dispatcher.dispatch_keys(registry.get("add"), (x, x, 1))
[<DispatchKey.CPU: 2>]
"""
import functools

from ..core.dispatch_keys import DispatchKey
from ..core.layout import strided
from ..core.math_bits import bits
from ..core.reference import mode, on_switch, specialisation
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..core.device import device as _device
from . import generated
from .op_kinds import AliasKind

_BACKENDS = {}          # device type -> Backend
_AUTOGRAD_KERNEL = [None]  # the generic autograd kernel, installed by lantern.autograd
_TRACER_KERNEL = [None]    # the JIT tracer kernel, installed by lantern.jit
_AUTOCAST = [None, None]   # the autocast kernel and its explain(op), installed by lantern.ops.autocast
_MODE_BACKEND = [None]     # backend -> it behind the dispatch modes (Python key), installed by lantern.ops.python_key
_FORWARD_AD_KERNEL = [None]  # forward AD's tangent kernel (part of the Autograd key), installed by lantern.autograd


def register_backend(device_type, backend):
    _BACKENDS[device_type] = backend


def backend_for_device(dev):
    try:
        return _BACKENDS[_device(dev).type]
    except KeyError:
        from ..core.device import device_unavailable_error
        raise device_unavailable_error(_device(dev).type) from None


def set_autograd_kernel(fn):
    _AUTOGRAD_KERNEL[0] = fn


def set_tracer_kernel(fn):
    _TRACER_KERNEL[0] = fn


def set_autocast_kernel(fn, explain):
    _AUTOCAST[:] = [fn, explain]


def set_mode_backend(fn):
    _MODE_BACKEND[0] = fn


def set_forward_ad_kernel(fn):
    _FORWARD_AD_KERNEL[0] = fn


def _mixed_devices(op, tensors):
    """Pick the backend when inputs sit on several devices: dense CPU 0-dim tensors may join any device (a
    0-dim sparse, masked or quantized one still chooses its key), and copy_ runs on its destination's device (it
    is how data moves between devices). A wrapper subclass among them takes the call (its __torch_dispatch__)."""
    wrapper = next((t._backend for t in tensors if t._backend.key is DispatchKey.Python), None)
    if wrapper is not None:  # a wrapper subclass's __torch_dispatch__ takes the call, whatever the other devices
        return wrapper
    if op.name == "copy_":
        return tensors[0]._backend
    backends = {t._backend for t in tensors if t._size or t._backend.key is not DispatchKey.CPU}
    if len(backends) == 1:
        return backends.pop()
    if not backends:
        return tensors[0]._backend
    layout_backend = _highest_layout_backend(backends)
    if layout_backend is not None:
        return layout_backend
    a, b = sorted(str(b.device) for b in backends)[:2]
    raise RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}! "
        f"({op.name}: move the inputs to one device with .to(device))")


def _highest_layout_backend(backends):
    """Inputs on one device in several layouts (dense + sparse): the highest key's backend (SparseCPU over CPU)
    runs the op, as PyTorch's dispatch key set picks; None if the devices differ."""
    if len({b.device for b in backends}) != 1:
        return None
    return max(backends, key=lambda b: b.key)


def _scan(op, args):
    """(backend, any input requires grad) from the tensor arguments."""
    backend = None
    needs_grad = False
    tensors = None
    for i in op.tensor_positions:
        a = args[i]
        if isinstance(a, TensorImpl):
            if a._requires_grad:
                needs_grad = True
            b = a._backend
            if backend is None:
                backend = b
            elif b is not backend:
                tensors = tensors or []
                tensors.append(a)
    for i in op.list_positions:
        for a in args[i]:
            if isinstance(a, TensorImpl):
                if a._requires_grad:
                    needs_grad = True
                if backend is None:
                    backend = a._backend
                elif a._backend is not backend:
                    tensors = tensors or []
                    tensors.append(a)
    if tensors:
        allt = [a for i in op.tensor_positions if isinstance(args[i], TensorImpl) for a in (args[i],)]
        allt += [a for i in op.list_positions for a in args[i] if isinstance(a, TensorImpl)]
        backend = _mixed_devices(op, allt)
    if backend is None:
        pos = op.device_position
        dev = args[pos] if pos is not None else None
        if dev is None and pos is not None:  # a factory given no device: the default (lantern.set_default_device)
            dev = tls.default_device
        backend = _BACKENDS["cpu"] if dev is None else backend_for_device(dev)
    return backend, needs_grad


# The names a generated entry reads besides its op: the header of lantern/_generated/dispatch.py
ENTRY_IMPORTS = """\
from lantern.core.state import observing_threads as observing, tls
from lantern.core.tensor_impl import TensorImpl as T
from lantern.ops.dispatcher import _AUTOGRAD_KERNEL as autograd_kernel
from lantern.ops.dispatcher import _scan, call_observed, raise_missing_kernel, refuse_inference_write
"""
_entry_namespace = {}


def entry_shape(op):
    """What an op's entry depends on, as a name: which arguments are tensors ('t0_t1'; 'scan' for tensor lists or
    none) and which one the op writes ('_writes_0'). Ops of one shape share one generated factory."""
    shape = "scan" if op.list_positions or not op.tensor_positions else "_".join(f"t{i}" for i in op.tensor_positions)
    mutated = written_argument(op)
    return shape if mutated is None else f"{shape}_writes_{mutated}"


def written_argument(op):
    """The position of the tensor an op writes into (an in-place op's self, an out= op's out), or None."""
    return {AliasKind.INPLACE: 0, AliasKind.OUT: len(op.schema.args) - 1}.get(op.schema.alias)


def entry_source(op):
    """The source of the factory make_dispatch_<shape>(op) of `op`'s dispatcher entry: `call(op, args)` without
    the call, its argument scan unrolled over the op's tensor arguments. While no thread has a watcher on, the
    watcher test is one global read; the common all-on-one-device case is a few attribute reads; anything else
    falls back to the general _scan. Ops that write into a tensor also refuse
    inference tensors outside inference_mode (only they pay for that check)."""
    shape = entry_shape(op)
    mutated = written_argument(op)
    if op.list_positions or not op.tensor_positions:
        what = "tensor lists, or no tensor arguments"
    else:
        what = "tensor arguments " + ", ".join(f"args[{i}]" for i in op.tensor_positions)
    lines = [f"def make_dispatch_{shape}(op):",
             f'    """The entry of ops with {what}{"" if mutated is None else f", writing args[{mutated}]"}."""',
             "    kernels = op.kernels",
             "",
             f"    def dispatch_{shape}(args):",
             "        if observing and tls.observed:  # a watcher on some thread: is it on this one?",
             "            return call_observed(op, args)"]
    if mutated is not None:
        lines += [f"        if args[{mutated}]._is_inference and not tls.inference_mode:",
                  f"            refuse_inference_write(args[{mutated}])"]
    lines += _scan_lines(op)
    lines += ["        if grad and tls.grad_enabled and autograd_kernel[0] is not None:",
              "            return autograd_kernel[0](op, args, backend)",
              "        kernel = kernels.get(backend.key)",
              "        if kernel is None:",
              "            raise_missing_kernel(op, backend)",
              "        return kernel(op, args)",
              f"    return dispatch_{shape}"]
    return "\n".join(lines) + "\n"


def _scan_lines(op):
    """The entry's lines finding the backend and whether an input requires grad: the general _scan for tensor lists
    (or no tensors), else one unrolled test per tensor argument."""
    if op.list_positions or not op.tensor_positions:
        return ["        backend, grad = _scan(op, args)"]
    lines = ["        backend = None", "        grad = mixed = False"]
    for i in op.tensor_positions:
        lines += [f"        a = args[{i}]",
                  "        if isinstance(a, T):",
                  "            if a._requires_grad:",
                  "                grad = True",
                  "            if backend is None:",
                  "                backend = a._backend",
                  "            elif a._backend is not backend:",
                  "                mixed = True"]
    return lines + ["        if backend is None or mixed:", "            backend, grad = _scan(op, args)"]


@specialisation(
    replaces="dispatcher.dispatch, unrolled over one op's tensor arguments",
    when="outside reference mode, for every op (lantern/_generated/dispatch.py)",
    parity_test="tests/test_reference_mode.py::test_generated_entries_and_runners_match_the_readable_ones")
def _generated_entry(op):
    """The dispatcher's entry for one op, from lantern/_generated/dispatch.py (or compiled, for an op of a shape
    that has none there: see lantern.ops.generated)."""
    if not _entry_namespace:
        _entry_namespace.update(generated.imported(ENTRY_IMPORTS))
    factory = generated.define("dispatch", f"make_dispatch_{entry_shape(op)}", entry_source(op), _entry_namespace)
    fn = factory(op)
    fn.source = factory.source
    return fn


_ops_with_entries = set()


def _make_entry(op):
    """op's entry, kept as `op.scan`: the generated one, or in reference mode `dispatch` bound to op."""
    _ops_with_entries.add(op)
    op.scan = _generated_entry(op) if mode.fast else functools.partial(dispatch, op)
    return op.scan


def _entries_chosen_again():
    """Reference mode switched: every op makes its entry again on its next call, in the new mode."""
    for op in _ops_with_entries:
        op.scan = None
    _ops_with_entries.clear()


on_switch(_entries_chosen_again)


def entry(op):
    """`op`'s entry: entry(op)(args) is call(op, args) (bindings call it directly)."""
    return op.scan or _make_entry(op)


def call(op, args):
    """Run `op` on `args` (a tuple in schema order) through the highest applicable dispatch key."""
    return (op.scan or _make_entry(op))(args)


def dispatch(op, args):
    """The dispatcher's entry as readable code (what reference mode runs): watchers first, then a write into an
    inference tensor is refused, the tensors tell the backend and whether autograd records, and the highest key's
    kernel runs. Each generated entry is this function unrolled over one op's tensor arguments."""
    if tls.observed:
        return call_observed(op, args)
    written = written_argument(op)
    if written is not None and args[written]._is_inference and not tls.inference_mode:
        refuse_inference_write(args[written])
    backend, needs_grad = _scan(op, args)
    if needs_grad and tls.grad_enabled and _AUTOGRAD_KERNEL[0] is not None:
        return _AUTOGRAD_KERNEL[0](op, args, backend)
    kernel = op.kernels.get(backend.key)
    if kernel is None:
        raise_missing_kernel(op, backend)
    return kernel(op, args)


def redispatch(op, args, below):
    """Run `op` with every key at or above `below` excluded (used by the autocast, tracer and autograd kernels)."""
    if below > DispatchKey.Tracer and tls.tracer is not None and _TRACER_KERNEL[0] is not None:
        return _TRACER_KERNEL[0](op, args)
    backend, needs_grad = _scan(op, args)
    if below > DispatchKey.Autograd and tls.forward_ad and _FORWARD_AD_KERNEL[0] is not None and \
            backend.key is not DispatchKey.FuncTorchBatched:  # vmap's layer runs first: its rules' ops carry tangents
        return _FORWARD_AD_KERNEL[0](op, args)  # a dual level is on (the dispatcher takes the observed path then)
    if tls.dispatch_modes:  # a TorchDispatchMode is on: the Python key runs below autograd (ops/python_key.py)
        backend = _MODE_BACKEND[0](backend)
    if below > DispatchKey.Autograd and needs_grad and tls.grad_enabled and _AUTOGRAD_KERNEL[0] is not None:
        return _AUTOGRAD_KERNEL[0](op, args, backend)
    kernel = op.kernels.get(backend.key)
    if kernel is None:
        raise_missing_kernel(op, backend)
    return kernel(op, args)


def raise_missing_kernel(op, backend):
    fix = "Move the inputs to a device it supports (e.g. .cpu())." if backend.layout is strided else \
        f"Convert the {backend.layout.name} inputs with .to_dense() first."
    key = backend.device.type if backend.key is DispatchKey.PrivateUse1 else backend.key.name  # torch names it so
    raise NotImplementedError(
        f"Could not run '{op.name}' with arguments from the '{key}' backend: lantern has no {key} kernel for this "
        f"op. {fix}")


def dispatch_keys(op, args):
    """The keys this call goes through, highest first."""
    return [k for k, _ in explain_keys(op, args)]


def explain_keys(op, args):
    """[(key, why)] for a call: what puts each dispatch key in the key set."""
    backend, needs_grad = _scan(op, args)
    keys = []
    autocast_why = _AUTOCAST[1](op) if tls.autocast is not None and _AUTOCAST[1] is not None else None
    if autocast_why is not None:
        keys.append((DispatchKey.Autocast, autocast_why))
    if tls.tracer is not None and _TRACER_KERNEL[0] is not None:
        keys.append((DispatchKey.Tracer, "a JIT trace is recording"))
    if backend.key is DispatchKey.FuncTorchBatched:  # vmap's layer, above autograd: its rule's ops dispatch anew
        return keys + [(backend.key, backend.explain(op, args))]
    forward_why = _forward_ad_reason(op, args) if tls.forward_ad else None
    if needs_grad and _AUTOGRAD_KERNEL[0] is not None:
        if tls.grad_enabled:
            keys.append((DispatchKey.Autograd, "an input requires grad and grad mode is on"
                         + ("" if forward_why is None else "; " + forward_why)))
            forward_why = None
    if forward_why is not None:
        keys.append((DispatchKey.Autograd, forward_why))
    if backend.key is DispatchKey.Conjugate or backend.key is DispatchKey.Negative:
        keys += _math_bit_keys(op, args)
        backend = backend.under  # the fallback resolves the bit, then the device's kernel runs
    python_why = _python_key_reason(op, args, backend)
    if python_why is not None:
        keys.append((DispatchKey.Python, python_why))
        if backend.key is DispatchKey.Python:  # a wrapper subclass's handler computes: no backend kernel runs
            return keys
    has_tensors = any(isinstance(args[i], TensorImpl) for i in op.tensor_positions) or \
        any(isinstance(t, TensorImpl) for i in op.list_positions for t in args[i])
    why = f"inputs are on {backend.device}" if has_tensors else f"no tensor inputs; device argument {backend.device}"
    if backend.layout is not strided:
        why = _layout_reason(op, args, backend.layout)
    keys.append((backend.key, why))
    return keys


def _forward_ad_reason(op, args):
    """Why forward AD's kernel computes a tangent for a call (lantern/autograd/forward_kernel.py), or None."""
    tensors = [args[i] for i in op.tensor_positions] + [t for i in op.list_positions for t in args[i]]
    having = [i for i, t in enumerate(tensors) if isinstance(t, TensorImpl) and t._fw_grad is not None]
    return f"input {having[0]} is a dual tensor (forward AD)" if having else None


def _python_key_reason(op, args, backend):
    """Why the Python key is in a call's key set (lantern/ops/python_key.py), or None: a dispatch mode is on, or an
    input is a wrapper subclass."""
    if tls.dispatch_modes:
        return f"a TorchDispatchMode is on ({type(tls.dispatch_modes[-1]).__name__})"
    if backend.key is DispatchKey.Python:
        tensors = [args[i] for i in op.tensor_positions] + [t for i in op.list_positions for t in args[i]]
        first = next(i for i, t in enumerate(tensors)
                     if isinstance(t, TensorImpl) and t._backend.key is DispatchKey.Python)
        return f"input {first} is a wrapper subclass ({type(tensors[first]).__name__})"
    return None


def _math_bit_keys(op, args):
    """[(key, why)] for the Negative and Conjugate keys that a call's views put in its key set, highest first:
    "input 0 is a conjugate view" (lantern/ops/math_bits.py)."""
    tensors = [args[i] for i in op.tensor_positions] + [t for i in op.list_positions for t in args[i]]
    keys = []
    set_bits = [bits(t) if isinstance(t, TensorImpl) else (False, False) for t in tensors]
    for key, which, name in ((DispatchKey.Negative, 1, "negative"), (DispatchKey.Conjugate, 0, "conjugate")):
        having = [i for i, b in enumerate(set_bits) if b[which]]
        if having:
            keys.append((key, f"input {having[0]} is a {name} view"))
    return keys


def _layout_reason(op, args, layout):
    """Why a sparse key is in the key set: "input 0 has layout sparse_coo"."""
    tensors = [args[i] for i in op.tensor_positions] + [t for i in op.list_positions for t in args[i]]
    first = next(i for i, t in enumerate(tensors) if isinstance(t, TensorImpl) and t.layout is layout)
    return f"input {first} has layout {layout.name}"


def call_observed(op, args):
    """The dispatch path while something watches or autocast is on: the dispatch trace prints, autocast casts,
    the JIT tracer records, and inference_mode marks what it makes as inference tensors."""
    trace = tls.dispatch_trace
    if trace is not None:
        result = trace.around(op, args, lambda: _call_below_watchers(op, args))
    else:
        result = _call_below_watchers(op, args)
    if tls.inference_mode and op.schema.alias is AliasKind.NEW:
        for t in (result if isinstance(result, tuple) else (result,)):
            if isinstance(t, TensorImpl):
                t._is_inference = True
    return result


def refuse_inference_write(t):
    raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
                       "clone to get a normal tensor before doing inplace update.See "
                       "https://github.com/pytorch/rfcs/pull/17 for more details.")


def _call_below_watchers(op, args):
    """The keys beneath the watchers, highest first: Autocast while it is on, then the tracer and the rest."""
    autocast_kernel = _AUTOCAST[0]
    if tls.autocast is not None and autocast_kernel is not None:
        return autocast_kernel(op, args)
    return redispatch(op, args, DispatchKey.Autocast)
