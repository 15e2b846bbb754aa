"""saved_tensors_hooks: transform tensors as the graph saves them (pack) and when backward reads them (unpack).

>>> packed = []
>>> with lantern.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or len(packed) - 1,
...                                                 lambda i: packed[i]):
...     x = lantern.ones(2, requires_grad=True)
...     y = x * x
>>> y.sum().backward(); len(packed), x.grad.tolist()
(2, [2.0, 2.0])
"""
from ..core.state import tls


def current_hooks():
    return tls.saved_tensor_hooks[-1] if tls.saved_tensor_hooks else None


class saved_tensors_hooks:
    """Context manager: every tensor saved for backward inside goes through pack_hook, and comes back through
    unpack_hook when backward needs it."""

    def __init__(self, pack_hook, unpack_hook):
        self.pair = (pack_hook, unpack_hook)

    def __enter__(self):
        tls.saved_tensor_hooks += (self.pair,)
        tls.refresh()

    def __exit__(self, *exc):
        tls.saved_tensor_hooks = tls.saved_tensor_hooks[:-1]
        tls.refresh()


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors on the CPU (lantern's tensors already live there unless on another device)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(lambda t: (t.device, t.cpu()), lambda packed: packed[1].to(packed[0]))


def disable_saved_tensors_hooks(error_message):
    raise NotImplementedError("disable_saved_tensors_hooks is not supported by lantern")
