"""LazyModuleMixin (torch.nn.modules.lazy): modules whose parameter shapes come from their first input.

A lazy module starts with UninitializedParameter/UninitializedBuffer placeholders. A forward pre-hook calls
`initialize_parameters(*input)` on the first call, which materializes them from the input's shape and runs the
usual initialisation; the module then becomes its `cls_to_become` (LazyLinear becomes Linear) and the hooks go.
Loading a state_dict into a lazy module materializes the placeholders from the checkpoint's shapes.

>>> import lantern
>>> layer = lantern.nn.LazyLinear(3)
>>> layer
LazyLinear(in_features=0, out_features=3, bias=True)
>>> _ = layer(lantern.ones(2, 5))
>>> layer
Linear(in_features=5, out_features=3, bias=True)
"""
from ... import no_grad
from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixed in before a Module class: the placeholders, the first-call hook and the state_dict handling."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Placeholders are saved as they are (detaching one would give an empty tensor)."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        for name, member in (*self._parameters.items(), *self._buffers.items()):
            key = prefix + name
            if key in state_dict and member is not None and is_lazy(member) and not is_lazy(state_dict[key]):
                with no_grad():
                    member.materialize(state_dict[key].shape)

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the placeholders from the first input (each lazy module says how)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self):
        return any(is_lazy(t) for t in (*self._parameters.values(), *self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
