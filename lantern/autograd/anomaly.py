"""Anomaly detection: remember where each node was made in the forward, and fail loudly on NaN in backward.

While it is on during the forward, every node keeps the traceback of the call that made it; while it is on during
the backward, a node's error (or, with check_nan, a NaN in its output) is reported with that traceback.

>>> with lantern.autograd.detect_anomaly():
...     x = lantern.tensor([0.], requires_grad=True)
...     y = x.sqrt() * 0   # d/dx sqrt(0) = inf, times 0 gives nan
...     try:
...         y.sum().backward()
...     except RuntimeError as e:
...         print(e)
Function 'SqrtBackward0' returned nan values in its 0th output.
"""
import os
import threading
import traceback

from ..core.dtype import is_differentiable
from ..core.state import tls
from ..core import user_warnings

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _CheckNan(threading.local):
    value = True


_check_nan = _CheckNan()


def remember_forward(node):
    """Keep the user's part of the stack: the frames below lantern's own (binding, dispatcher, this kernel)."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith((_PACKAGE_DIR, "<lantern"))]
    node._trace = "".join(traceback.format_list(frames))


def _warn_forward_trace(node):
    if node._trace is None:
        detail = ("No forward pass information available. Enable detect anomaly during forward pass for more "
                  "information.")
    else:
        detail = f"Traceback of forward call that caused the error:\n{node._trace}"
    user_warnings.warn(f"Error detected in {node.name()}. {detail}", UserWarning, stacklevel=4)


def run_with_anomaly(node, grads):
    """node.apply(grads), reporting the forward traceback of a node that fails or (check_nan) returns NaN."""
    try:
        outs = node.apply(grads)
    except Exception:
        _warn_forward_trace(node)
        raise
    if _check_nan.value:
        for i, g in enumerate(outs):
            if g is not None and is_differentiable(g.dtype) and g.isnan().any().item():
                _warn_forward_trace(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
    return outs


class detect_anomaly:
    """Context manager (and decorator): record forward tracebacks and check every backward output for NaN."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        user_warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self.prev = (tls.anomaly, _check_nan.value)
        tls.anomaly, _check_nan.value = True, self.check_nan
        tls.refresh()

    def __exit__(self, *exc):
        tls.anomaly, _check_nan.value = self.prev
        tls.refresh()

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """set_detect_anomaly(mode, check_nan=True): takes effect at once; also a context manager."""

    def __init__(self, mode, check_nan=True):
        self.prev = (tls.anomaly, _check_nan.value)
        tls.anomaly, _check_nan.value = bool(mode), bool(check_nan)
        tls.refresh()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        tls.anomaly, _check_nan.value = self.prev
        tls.refresh()


def is_anomaly_enabled():
    return tls.anomaly


def is_anomaly_check_nan_enabled():
    return _check_nan.value
