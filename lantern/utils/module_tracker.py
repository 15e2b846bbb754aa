"""torch.utils.module_tracker: which nn.Modules are running now, in forward and in backward.

`ModuleTracker().parents` is the set of the running modules' qualified names ("Global" always, "MLP",
"MLP.fc1", ...). Forward is followed through the global module hooks; backward through gradient hooks on each
module's inputs and outputs: a module's backward starts when the gradient of one of its outputs arrives and ends
when the gradient of one of its inputs does (torch waits for all of them; lantern takes the first, which is the
same thing for a module of one tensor in and one out).

>>> import lantern
>>> net = lantern.nn.Sequential(lantern.nn.Linear(2, 2))
>>> seen = []
>>> with ModuleTracker() as tracker:
...     handle = lantern.nn.modules.module.register_module_forward_pre_hook(
...         lambda m, args: seen.append(sorted(tracker.parents)))
...     _ = net(lantern.ones(1, 2))
...     handle.remove()
>>> seen
[['Global', 'Sequential'], ['Global', 'Sequential', 'Sequential.0']]
"""
import weakref

from ..autograd.engine import _running, queue_callback
from ..core.tensor_impl import TensorImpl
from ..nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ._pytree import tree_flatten

__all__ = ["ModuleTracker"]


class ModuleTracker:
    """Context manager: while it is on, `parents` holds the qualified names of the modules running now."""

    def __init__(self):
        self.parents = {"Global"}
        self._known_modules = weakref.WeakKeyDictionary()
        self._seen_modules = weakref.WeakSet()
        self._has_callback = False
        self._hooks = []

    @property
    def is_bw(self):
        """Whether a backward pass is running now."""
        return bool(_running.tasks)

    def _reset_after_backward(self):
        """At the end of this backward pass, back to "Global" only (once per pass)."""
        if self._has_callback:
            return

        def callback():
            self.parents = {"Global"}
            self._has_callback = False
        queue_callback(callback)
        self._has_callback = True

    def _get_mod_name(self, mod):
        """A module's qualified name: its class name at the top, then the attribute names down to it."""
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for child_name, child in mod.named_children():
                self._known_modules[child] = f"{name}.{child_name}"
                self._get_mod_name(child)
            self._seen_modules.add(mod)
        return name

    def _enter(self, name, in_backward):
        def enter(*_):
            if in_backward:
                self._reset_after_backward()
            self.parents.add(name)
        return enter

    def _leave(self, name):
        def leave(*_):
            self.parents.discard(name)
        return leave

    def _on_first_gradient(self, value, fn):
        """Run fn once per backward pass, when the gradient of the first tensor of `value` that requires grad
        arrives (hooks on each; they stay until the tracker exits)."""
        tensors = [t for t in tree_flatten(value)[0] if isinstance(t, TensorImpl) and t.requires_grad]
        fired = []

        def hook(grad):
            if not fired:
                fired.append(True)
                queue_callback(fired.clear)
                fn()
        self._hooks += [t.register_hook(hook) for t in tensors]

    def _fw_pre_hook(self, mod, args):
        name = self._get_mod_name(mod)
        self._enter(name, False)()
        self._on_first_gradient(args, self._leave(name))

    def _fw_post_hook(self, mod, args, output):
        name = self._get_mod_name(mod)
        self._leave(name)()
        self._on_first_gradient(output, self._enter(name, True))

    def __enter__(self):
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *exc):
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        for handle in self._hooks:
            handle.remove()
        self._hooks.clear()
