"""Thread-local dispatch state (PyTorch's TLS): grad mode, inference mode, autocast, and the observers of dispatch.

`observed` is True while anything watches the dispatcher (a JIT tracer, the dispatch trace); the dispatcher's hot
path tests only that one flag.

>>> from lantern.core.state import tls
>>> tls.grad_enabled
True
"""
import threading


class _DispatchState(threading.local):
    grad_enabled = True
    inference_mode = False
    anomaly = False        # autograd anomaly detection (records forward tracebacks, checks for NaN)
    tracer = None          # the active JIT tracer (the Tracer dispatch key), if any
    dispatch_trace = None  # the outermost dispatch watcher (trace printer, profiler: lantern.profiler.watchers)
    autocast = None        # while CPU autocast is on (the Autocast key): its lower-precision dtype (lantern.amp)
    observed = False       # the dispatcher's one hot-path test: anything above needs the slow path
    default_device = None  # factories' device when they are given none (lantern.set_default_device); None: CPU
    outer_default_devices = ()  # the defaults that enclosing `with lantern.device(...)` blocks will restore
    dispatch_modes = ()    # the TorchDispatchModes on (lantern.utils._python_dispatch), innermost last
    saved_tensor_hooks = ()  # the (pack, unpack) pairs of enclosing saved_tensors_hooks blocks, innermost last
    plain_recording = True   # the autograd kernel's one hot-path test: no anomaly mode, no saved-tensor hooks
    forward_ad = False       # a forward-AD dual level is entered (lantern.autograd.forward_ad): tangents may flow
    forward_level = -1       # the forward-AD level whose tangents ops compute now (-1: none; see forward_ad.py)

    def refresh(self):
        """Recompute the two summary flags after a setting above changed."""
        self.observed = (self.tracer is not None or self.dispatch_trace is not None or self.inference_mode
                         or self.autocast is not None or bool(self.dispatch_modes) or self.forward_ad)
        self.plain_recording = not (self.anomaly or self.saved_tensor_hooks)


tls = _DispatchState()
