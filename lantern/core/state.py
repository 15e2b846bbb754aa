"""Thread-local dispatch state (PyTorch's TLS): grad mode, inference mode, autocast, and the observers of dispatch.

`observed` is True while anything watches the dispatcher (a JIT tracer, the dispatch trace); the dispatcher's hot
path tests only that one flag, and only when `observing_threads` says some thread may have it set: a module global
costs a hot path ≈ 20 instructions where a thread-local read costs ≈ 640. Grad mode and the flags stay per thread.

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
        """Recompute the two summary flags after a setting above changed, and this thread's place in the sets of
        threads where they are unusual."""
        self.observed = (self.tracer is not None or self.dispatch_trace is not None or self.inference_mode
                         or self.autocast is not None or bool(self.dispatch_modes) or self.forward_ad)
        self.plain_recording = not (self.anomaly or self.saved_tensor_hooks)
        _mark(observing_threads, self.observed)
        _mark(unplain_threads, not self.plain_recording)


# The threads where `observed` is True / `plain_recording` is False. Hot paths read the per-thread flag only when
# the set is not empty. A thread that ends with its flag set stays in the set: the hot paths then read the flag.
observing_threads = set()
unplain_threads = set()


def _mark(threads, unusual):
    """Put the calling thread in `threads` or take it out (set.add and set.discard are atomic under the GIL)."""
    if unusual:
        threads.add(threading.get_ident())
    else:
        threads.discard(threading.get_ident())


tls = _DispatchState()
