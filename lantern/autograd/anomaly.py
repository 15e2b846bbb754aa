"""Anomaly detection: remember where each node was made in the forward, and fail loudly on NaN in backward.

>>> with lantern.autograd.detect_anomaly():
...     x = lantern.tensor([0.], requires_grad=True)
...     y = x.sqrt() * 0   # d/dx sqrt(0) = inf, times 0 gives nan
...     try:
...         y.sum().backward()
...     except RuntimeError as e:
...         print(str(e).split(".")[0])
Function 'SqrtBackward0' returned nan values in its 0th output
"""
import sys
import traceback
import warnings

from ..core.state import tls


def remember_forward(node):
    node._trace = "".join(traceback.format_stack()[:-3])


def run_with_anomaly(node, grads):
    try:
        outs = node.apply(grads)
    except Exception:
        sys.stderr.write(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                         f"{node._trace}")
        raise
    for i, g in enumerate(outs):
        if g is not None and g.dtype.category >= 2 and g.isnan().any().item():
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                          f"{node._trace}", UserWarning, stacklevel=2)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
    return outs


class detect_anomaly:
    """Context manager: record forward tracebacks and check every backward output for NaN."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)
        self.prev = tls.anomaly
        tls.anomaly = True

    def __exit__(self, *exc):
        tls.anomaly = self.prev


class set_detect_anomaly:
    """set_detect_anomaly(mode): takes effect at once; also a context manager."""

    def __init__(self, mode, check_nan=True):
        self.prev = tls.anomaly
        tls.anomaly = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        tls.anomaly = self.prev


def is_anomaly_enabled():
    return tls.anomaly
