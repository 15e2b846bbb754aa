"""saved_tensors_hooks: transform tensors as the graph saves them (pack) and when backward reads them (unpack).

>>> packed = []
>>> with lantern.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or len(packed) - 1,
...                                                 lambda i: packed[i]):
...     x = lantern.ones(2, requires_grad=True)
...     y = x * x
>>> y.sum().backward(); len(packed), x.grad.tolist()
(2, [2.0, 2.0])
"""
import threading


class _HookStack(threading.local):
    stack = ()


_hooks = _HookStack()


def current_hooks():
    return _hooks.stack[-1] if _hooks.stack else None


class saved_tensors_hooks:
    """Context manager: every tensor saved for backward inside goes through pack_hook, and comes back through
    unpack_hook when backward needs it."""

    def __init__(self, pack_hook, unpack_hook):
        self.pair = (pack_hook, unpack_hook)

    def __enter__(self):
        _hooks.stack = _hooks.stack + (self.pair,)

    def __exit__(self, *exc):
        _hooks.stack = _hooks.stack[:-1]


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors on the CPU (lantern's tensors already live there unless on another device)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(lambda t: (t.device, t.cpu()), lambda packed: packed[1].to(packed[0]))


def disable_saved_tensors_hooks(error_message):
    raise NotImplementedError("disable_saved_tensors_hooks is not supported by lantern")
