"""Module: the base class of every layer (torch.nn.Module), plus the global module hooks.

A Module keeps three ordered registries, `_parameters`, `_buffers` and `_modules`; assigning a Parameter, a Buffer
or a Module to an attribute files it in the right one. Everything else (named_parameters, state_dict, to, train,
repr) walks those registries. Calling a module runs `_call_impl`: with no hooks it goes straight to `forward`.

>>> import lantern
>>> from lantern import nn
>>> class Scale(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.w = nn.Parameter(lantern.ones(2))
...         self.register_buffer("steps", lantern.zeros(()))
...     def forward(self, x):
...         return x * self.w
>>> m = Scale()
>>> list(m.state_dict()), [n for n, _ in m.named_parameters()]
(['w', 'steps'], ['w'])
>>> m(lantern.tensor([1., 2.]))
tensor([1., 2.], grad_fn=<MulBackward0>)
>>> m.load_state_dict({"w": lantern.tensor([3., 4.]), "steps": lantern.tensor(1.)})
<All keys matched successfully>
"""
import functools
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import lantern
from ...autograd.graph import RemovableHandle
from ...core.device import device as _device
from ...core.dtype import dtype as _dtype
from ...core.layout import memory_format as _memory_format
from ...core.tensor_impl import TensorImpl
from ...ops.meta_util import type_name
from ..parameter import Buffer, Parameter, is_lazy
from ...core import user_warnings

__all__ = ["Module"]  # the register_module_* functions live here too, as in torch, but not in lantern.nn

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys the module expected but did not get, and the keys it did not know."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _typename(obj):
    """torch.typename: 'torch.FloatTensor' for a tensor, 'int' for a builtin, 'pkg.mod.Class' otherwise."""
    if isinstance(obj, TensorImpl):
        return type_name(obj)
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _addindent(text, spaces):
    """Indent every line but the first (a child's repr nested inside its parent's)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return first + "\n" + "\n".join(spaces * " " + line if line.strip() else "" for line in lines)


class _WrappedHook:
    """A hook called with the module (held weakly) as its first argument; picklable with its module."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if self.with_module:
            self.module = weakref.ref(module)

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


# ---- global hooks: every module runs these (debugging, profiling) ------------------------------------------------
_global_buffer_registration_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_is_full_backward_hook = None
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()


def _register(hooks, hook, extra_dict=None, prepend=False):
    """Add hook to the ordered dict hooks (first when prepend); the handle also clears its id from extra_dict."""
    handle = RemovableHandle(hooks, extra_dict=extra_dict)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _run_registration_hooks(hooks, module, name, value):
    """Pass value through the global registration hooks: each hook(module, name, value) may return a replacement."""
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def register_module_buffer_registration_hook(hook):
    """hook(module, name, buffer) runs on every register_buffer; a non-None return replaces the buffer."""
    return _register(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """hook(module, name, submodule) runs whenever a submodule is registered; a non-None return replaces it."""
    return _register(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """hook(module, name, param) runs on every register_parameter; a non-None return replaces the parameter."""
    return _register(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook):
    """hook(module, args) runs before every module's forward (before the module's own pre-hooks)."""
    return _register(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """hook(module, args, output) runs after every module's forward (before the module's own forward hooks)."""
    handle = _register(_global_forward_hooks, hook, extra_dict=_global_forward_hooks_always_called)
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def _set_global_full(full):
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module "
                           "hook. Please use only one of them.")
    _global_is_full_backward_hook = full


def register_module_backward_hook(hook):
    """The legacy global backward hook (on the grad_fn of the output); prefer the full one."""
    _set_global_full(False)
    return _register(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook):
    """hook(module, grad_output) runs for every module before its own backward pre-hooks."""
    return _register(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """hook(module, grad_input, grad_output) runs for every module before its own full backward hooks."""
    _set_global_full(True)
    return _register(_global_backward_hooks, hook)


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _hook_dicts():
    return {name: OrderedDict() for name in (
        "_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
        "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
        "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")}


def _as_assigned(param, input_param):
    """What load_state_dict(assign=True) sets: the checkpoint's tensor, made a Parameter (with the model
    parameter's requires_grad) where the model held a Parameter."""
    if not isinstance(param, Parameter):
        return input_param
    if not isinstance(input_param, Parameter):
        return Parameter(input_param, requires_grad=param.requires_grad)
    return input_param.requires_grad_(param.requires_grad)


class Module:
    """Base class for all neural-network modules; subclasses call `super().__init__()` and define `forward`."""

    dump_patches = False
    _version = 1  # saved as state_dict._metadata[prefix]['version'] for _load_from_state_dict to see
    training: bool
    call_super_init = False
    _compiled_call_impl = None

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_is_full_backward_hook"] = None
        d.update(_hook_dicts())
        d["_modules"] = {}
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # ---- registration ---------------------------------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Add a tensor (or None) as module state that is not a parameter; `persistent=False` keeps it out of
        state_dict."""
        _check_new_member(self, "buffer", "_buffers", name)
        if tensor is not None and not isinstance(tensor, TensorImpl):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' (torch Tensor or None "
                            "required)")
        self._buffers[name] = _run_registration_hooks(_global_buffer_registration_hooks, self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a Parameter (or None) under `name`."""
        _check_new_member(self, "parameter", "_parameters", name)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' (torch.nn.Parameter "
                            "or None required)")
        if param.grad_fn:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = _run_registration_hooks(_global_parameter_registration_hooks, self, name, param)

    def add_module(self, name, module):
        """Add a child module (or None) under `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = _run_registration_hooks(_global_module_registration_hooks, self, name, module)

    def register_module(self, name, module):
        """Alias of add_module."""
        self.add_module(name, module)

    # ---- lookup by dotted path --------------------------------------------------------------------------------
    def get_submodule(self, target):
        """The submodule at the dotted path `target` ('' is self); AttributeError naming the missing step."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Put `module` at the dotted path `target` (its parent must exist; with strict, so must the name)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target):
        """The Parameter at the dotted path `target`."""
        _, name, param = _member_at(self, target)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at the dotted path `target`."""
        mod, name, buffer = _member_at(self, target)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return buffer

    def get_extra_state(self):
        """Override (with set_extra_state) to store extra picklable state in state_dict under '_extra_state'."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    def set_extra_state(self, state):
        """Override (with get_extra_state) to restore what get_extra_state saved."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    # ---- conversion -------------------------------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """Apply fn to every parameter, gradient and buffer. Parameters keep their identity (their .data is
        swapped; not across the meta device), so optimizers made before `.double()` or `.to(device)` still hold the
        live tensors."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with lantern.no_grad():
                param_applied = fn(param)
            grad = param._grad
            if _can_set_data(param, param_applied):
                param.data = param_applied
                if grad is not None:
                    with lantern.no_grad():
                        grad.data = fn(grad)
                continue
            new_param = Parameter(param_applied, param.requires_grad)
            self._parameters[key] = new_param
            if grad is not None:
                with lantern.no_grad():
                    new_param.grad = fn(grad).requires_grad_(grad.requires_grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        """Call fn on every submodule (children first, as `.children()` orders them) and then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def cuda(self, device=None):
        """Move every parameter and buffer to the GPU."""
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        """Move every parameter and buffer to the CPU."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        """Cast every parameter and buffer to dst_type."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        """Cast floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Cast floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Cast floating-point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        """Cast floating-point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device, recurse=True):
        """Move parameters and buffers to `device` without copying their values."""
        return self._apply(lambda t: lantern.empty_like(t, device=device), recurse=recurse)

    def to(self, *args, **kwargs):
        """to(device=None, dtype=None, non_blocking=False) / to(dtype) / to(tensor) / to(memory_format=...):
        moves every parameter and buffer, casting only the floating-point and complex ones."""
        device, dtype, non_blocking, memory_format = _parse_to(args, kwargs)
        if dtype is not None:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")
            if dtype.is_complex:
                user_warnings.warn(
                    "Complex modules are a new feature under active development whose design may change, and some "
                    "modules might not work as expected when using complex tensors as parameters or buffers. Please "
                    "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml if a "
                    "complex module does not work as expected.", stacklevel=2)

        def convert(t):
            cast = dtype if t.is_floating_point() or t.is_complex() else None
            try:
                if memory_format is not None and t.dim() in (4, 5):
                    return t.to(device, cast, non_blocking, memory_format=memory_format)
                return t.to(device, cast, non_blocking)
            except NotImplementedError as e:
                if str(e) == "Cannot copy out of meta tensor; no data!":
                    raise NotImplementedError(f"{e} Please use torch.nn.Module.to_empty() instead of "
                                              "torch.nn.Module.to() when moving module from meta to a different "
                                              "device.") from None
                raise

        return self._apply(convert)

    # ---- hooks ------------------------------------------------------------------------------------------------
    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or new grad_output, run before the module's input gradients are
        computed."""
        return _register(self._backward_pre_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook):
        """Legacy: hook(module, grad_input, grad_output) on the grad_fn of the output. Prefer the full hook."""
        _set_full_backward(self, False)
        return _register(self._backward_hooks, hook)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or new grad_input; grad_input covers the positional
        tensor arguments."""
        _set_full_backward(self, True)
        return _register(self._backward_hooks, hook, prepend=prepend)

    def _get_backward_hooks(self):
        full, non_full = [], []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        if _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self):
        return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (a non-tuple is wrapped); with_kwargs: hook(module, args, kwargs)
        -> None or (args, kwargs)."""
        handle = _register(self._forward_pre_hooks, hook, extra_dict=self._forward_pre_hooks_with_kwargs,
                           prepend=prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or a new output; with_kwargs: hook(module, args, kwargs, output);
        always_call: also run when forward raises."""
        handle = _register(self._forward_hooks, hook,
                           extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called],
                           prepend=prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    # ---- calling ----------------------------------------------------------------------------------------------
    def _call_impl(self, *args, **kwargs):
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks or self._forward_pre_hooks
                or _global_backward_pre_hooks or _global_backward_hooks
                or _global_forward_hooks or _global_forward_pre_hooks):
            return self.forward(*args, **kwargs)
        return _call_with_hooks(self, args, kwargs)

    __call__ = _call_impl

    # ---- pickling and attributes ------------------------------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name, value in _hook_dicts().items():
            self.__dict__.setdefault(name, value)
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def __getattr__(self, name):
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d:
                members = d[registry]
                if name in members:
                    return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__

        def remove_from(*containers):
            for c in containers:
                if name in c:
                    if isinstance(c, dict):
                        del c[name]
                    else:
                        c.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' (torch.nn.Parameter or "
                                "None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = _run_registration_hooks(_global_module_registration_hooks, self, name, value)
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' (torch.nn.Module or "
                                "None expected)")
            modules[name] = _run_registration_hooks(_global_module_registration_hooks, self, name, value)
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, TensorImpl):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' (torch.nn.Buffer, "
                                "torch.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    # ---- state_dict ---------------------------------------------------------------------------------------------
    def _register_state_dict_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None or a new state_dict (used at the root only)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was previously "
                               "registered via register_state_dict_post_hook")
        return _register(self._state_dict_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None, run after this module's state_dict."""
        hook._from_public_api = True
        return _register(self._state_dict_hooks, hook)

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) -> None, run before this module's state_dict."""
        return _register(self._state_dict_pre_hooks, hook)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Put this module's own parameters and persistent buffers (not its children's) into destination."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if getattr(self.__class__, "get_extra_state", Module.get_extra_state) is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer: own parameters, own buffers, then each child's
        under 'name.'; tensors are detached unless keep_vars. `._metadata` holds each module's version."""
        if args:
            user_warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to https://pytorch.org/"
                          "docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict for details.",
                          FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if result is not None:
                    destination = result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs), with the
        module first when with_module."""
        return _register(self._load_state_dict_pre_hooks, _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None; it may edit the key lists in place."""
        return _register(self._load_state_dict_post_hooks, hook)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Copy this module's own entries of state_dict in (not its children's), recording problems in the lists."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        local_state.update((k, v) for k, v in self._buffers.items()
                           if v is not None and k not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, TensorImpl):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(input_param)}")
                continue
            self._load_one_entry(name, param, input_param, key, assign, error_msgs)
        self._load_extra_state(state_dict, prefix, strict, missing_keys, unexpected_keys)
        if strict:
            unexpected_keys.extend(self._unexpected_keys(state_dict, prefix, local_state))

    def _load_one_entry(self, name, param, input_param, key, assign, error_msgs):
        """Copy (or with assign=True, assign) one checkpoint tensor into parameter or buffer `name`; a shape that
        does not fit, or a copy that fails, becomes a message in error_msgs."""
        lazy = is_lazy(param)
        if not lazy and len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
            input_param = input_param[0]
        if not lazy and input_param.shape != param.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape {_torch_size(input_param)} "
                              f"from checkpoint, the shape in current model is {_torch_size(param)}.")
            return
        if param.is_meta and not input_param.is_meta and not assign:
            user_warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta parameter in "
                          "the current model, which is a no-op. (Did you mean to pass `assign=True` to assign "
                          "items in the state dictionary to their corresponding key in the module instead of "
                          "copying them in place?)", stacklevel=3)
        try:
            with lantern.no_grad():
                if assign:
                    setattr(self, name, _as_assigned(param, input_param))
                else:
                    param.copy_(input_param)
        except Exception as ex:
            error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                              f"{_torch_size(param)} and whose dimensions in the checkpoint are "
                              f"{_torch_size(input_param)}, an exception occurred : {ex.args}.")

    def _load_extra_state(self, state_dict, prefix, strict, missing_keys, unexpected_keys):
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(self.__class__, "set_extra_state", Module.set_extra_state) is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)

    def _unexpected_keys(self, state_dict, prefix, local_state):
        """The keys under this module's prefix that name neither its own entries nor a child (nor extra state)."""
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        unexpected = []
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                head = key[len(prefix):].split(".", 1)
                if (head[0] not in self._modules) if len(head) > 1 else (head[0] not in local_state):
                    unexpected.append(key)
        return unexpected

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from state_dict into this module and its children. Returns
        `_IncompatibleKeys(missing_keys, unexpected_keys)`; with strict, any of either raises RuntimeError.
        `assign=True` puts the given tensors in (as Parameters where needed) instead of copying into the old."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ---- iteration ----------------------------------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        """Every Parameter (shared ones once), in registration order, children after their parent's own."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Parameter) pairs; a Parameter shared by two modules appears once unless remove_duplicate
        is False."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        """Every buffer (persistent or not)."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, buffer) pairs."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self):
        """The direct submodules (each once)."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """(name, submodule) for the direct submodules (each once)."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate=True):
        """self and every submodule, depth first."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for self ('' or prefix) and every submodule, depth first."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    # ---- modes and grads ----------------------------------------------------------------------------------------
    def train(self, mode=True):
        """Set training mode on self and every submodule (Dropout, BatchNorm look at it)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's .grad: to None (the default) or to zeros in place."""
        for p in self.parameters():
            grad = p.grad
            if grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    def share_memory(self):
        """Move every parameter and buffer to shared memory (what lantern's tensors support of it)."""
        return self._apply(lambda t: t.share_memory_())

    # ---- repr ---------------------------------------------------------------------------------------------------
    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        """The text inside this module's parentheses in repr (override it, e.g. 'in_features=2, ...')."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        return sorted(key for key in keys if not key[0].isdigit())

    def _replicate_for_data_parallel(self):
        replica = self.__new__(type(self))
        replica.__dict__ = self.__dict__.copy()
        replica._parameters = {}
        replica._buffers = replica._buffers.copy()
        replica._modules = replica._modules.copy()
        replica._is_replica = True
        return replica


# ---- full backward hooks ------------------------------------------------------------------------------------------
class BackwardHookFunction(lantern.autograd.Function):
    """Identity on its tensor arguments. Wrapping a module's inputs (and outputs) in it gives one graph node whose
    hooks see every input's (output's) gradient at once. Its outputs are views that may not be modified in place."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    """Runs a module's full backward pre-hooks and hooks during one backward pass.

    The outputs' BackwardHookFunction node fires first (it sees grad_output, runs the pre-hooks, which may replace
    it); the inputs' node fires once every input gradient is known (it runs the hooks with grad_input and the saved
    grad_output; a hook may replace grad_input). Non-tensor arguments show up as None."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values):
        return tuple(values[idx] for idx in indices)

    def _set_user_hook(self, grad_fn):
        def hook(grad_input, _):
            if self.grad_outputs is None:
                return None  # the gradient reached the inputs without passing the outputs (double backward)
            grad_input = tuple(lantern.zeros(meta[0], dtype=meta[1], device=meta[2]) if g is None and meta else g
                               for g, meta in zip(grad_input, self._no_grad_inputs))
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, got "
                                       f"{len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return self._unpack_none(self.input_tensors_index, res)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args):
        """Pass the tensors among args through BackwardHookFunction and call fn on its node; returns the new args
        and the tensors' positions (None when no tensor needs grad)."""
        tensors_idx = [i for i, a in enumerate(args) if isinstance(a, TensorImpl)]
        tensors = [args[i] for i in tensors_idx]
        if not (any(t.requires_grad for t in tensors) and lantern.is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        if len(new_tensors) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input Tensors.")
        grad_fns = [t.grad_fn for t in new_tensors
                    if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        if not grad_fns:
            raise RuntimeError("Error while setting up backward hooks. Please open an issue with a code sample to "
                               "reproduce this.")
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        return (tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)), tensors_idx

    def setup_input_hook(self, args):
        # torch hands the hooks zeros (not None) for tensor inputs that need no grad
        self._no_grad_inputs = [None if a.requires_grad else (a.shape, a.dtype, a.device)
                                for a in args if isinstance(a, TensorImpl)]
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        def fn(grad_fn):
            def hook(_, grad_output):
                self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
                if self.user_pre_hooks:
                    expected = len(self.grad_outputs)
                    for user_pre_hook in self.user_pre_hooks:
                        out = user_pre_hook(self.module, self.grad_outputs)
                        if out is None:
                            continue
                        if len(out) != expected:
                            raise RuntimeError("Backward pre hook returned an invalid number of grad_output, got "
                                               f"{len(out)}, but expected {expected}")
                        self.grad_outputs = out
                local_grad_outputs = self.grad_outputs
                if self.input_tensors_index is None:
                    # no input needs grad: the hooks run now, with grad_input all None
                    user_warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                                  "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                                  "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for "
                                  "more details.", stacklevel=5)
                    grad_inputs = self._pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients.")
                    self.grad_outputs = None
                if local_grad_outputs is not None:
                    return tuple(local_grad_outputs[i] for i in self.output_tensors_index)
                return None

            grad_fn.register_hook(hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]


def _check_new_member(module, kind, registry, name):
    """The checks register_buffer and register_parameter share, in torch's order (add_module's differ)."""
    if registry not in module.__dict__:
        raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if hasattr(module, name) and name not in module.__dict__[registry]:
        raise KeyError(f"attribute '{name}' already exists")


def _member_at(root, target):
    """(owner, name, value) for the attribute at the dotted path `target` below root; AttributeError naming the
    owner when it has no such attribute."""
    module_path, _, name = target.rpartition(".")
    mod = root.get_submodule(module_path)
    if not hasattr(mod, name):
        raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
    return mod, name, getattr(mod, name)


def _set_full_backward(module, full):
    """Record which kind of backward hook the module has (full or legacy); the two do not mix."""
    if module._is_full_backward_hook is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                           "Please use only one of them.")
    module._is_full_backward_hook = full


def _can_set_data(tensor, applied):
    """Whether _apply may swap `.data` in place. As in torch, a move to or from the meta device (a different kind of
    tensor there) makes a new Parameter instead."""
    return tensor.is_meta == applied.is_meta


def _torch_size(t):
    """'torch.Size([2, 3])', as torch's messages print shapes."""
    return "torch.Size([" + ", ".join(str(s) for s in t.shape) + "])"


def _parse_to(args, kwargs):
    """Module.to's arguments -> (device, dtype, non_blocking, memory_format). Unlike Tensor.to there is no copy."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    memory_format = kwargs.pop("memory_format", None)
    if "copy" in kwargs:
        raise RuntimeError(".to() does not accept copy argument")
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if a is None:
            continue
        if isinstance(a, _dtype):
            dtype = a
        elif isinstance(a, TensorImpl):
            dtype, device = a.dtype, a.device
        elif isinstance(a, _memory_format):
            memory_format = a
        elif isinstance(a, bool):
            non_blocking = a
        elif isinstance(a, (str, _device, int)):
            device = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
    if device is not None:
        device = _device(device)
    return device, dtype, non_blocking, memory_format


def _call_with_hooks(module, args, kwargs):
    """The slow path of Module.__call__, in torch's order: global then module forward pre-hooks, backward-hook
    wrapping of the inputs, forward, global then module forward hooks, backward-hook wrapping of the outputs.
    Forward hooks registered with always_call run even when something above raises."""
    result = None
    called_always = set()
    try:
        full_backward_hooks, non_full_backward_hooks, backward_pre_hooks = [], [], []
        if module._backward_pre_hooks or _global_backward_pre_hooks:
            backward_pre_hooks = module._get_backward_pre_hooks()
        if module._backward_hooks or _global_backward_hooks:
            full_backward_hooks, non_full_backward_hooks = module._get_backward_hooks()
        if _global_forward_pre_hooks or module._forward_pre_hooks:
            with_kwargs = module._forward_pre_hooks_with_kwargs
            for hook_id, hook in (*_global_forward_pre_hooks.items(), *module._forward_pre_hooks.items()):
                if hook_id in with_kwargs:
                    out = hook(module, args, kwargs)
                    if out is not None:
                        if isinstance(out, tuple) and len(out) == 2:
                            args, kwargs = out
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {out}.")
                else:
                    out = hook(module, args)
                    if out is not None:
                        args = out if isinstance(out, tuple) else (out,)
        bw_hook = None
        if full_backward_hooks or backward_pre_hooks:
            bw_hook = BackwardHook(module, full_backward_hooks, backward_pre_hooks)
            args = bw_hook.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        if _global_forward_hooks or module._forward_hooks:
            for hook_id, hook in (*_global_forward_hooks.items(), *module._forward_hooks.items()):
                if hook_id in module._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in module._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    out = hook(module, args, kwargs, result)
                else:
                    out = hook(module, args, result)
                if out is not None:
                    result = out
        if bw_hook:
            if not isinstance(result, (TensorImpl, tuple)):
                user_warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(result)}", stacklevel=3)
            result = bw_hook.setup_output_hook(result)
        if non_full_backward_hooks:
            _attach_legacy_backward_hooks(module, non_full_backward_hooks, args, result)
        return result
    except Exception:
        _run_always_called(module, args, kwargs, result, called_always)
        raise


def _run_always_called(module, args, kwargs, result, called):
    """After an exception: the always_call forward hooks that have not run yet, global ones first; their own errors
    only warn. As in torch, global hooks get no kwargs here."""
    for hooks, always_called, with_kwargs, owner in (
            (_global_forward_hooks, _global_forward_hooks_always_called, (), "global module"),
            (module._forward_hooks, module._forward_hooks_always_called, module._forward_hooks_with_kwargs, "module")):
        for hook_id, hook in hooks.items():
            if hook_id in always_called and hook_id not in called:
                try:
                    if hook_id in with_kwargs:
                        out = hook(module, args, kwargs, result)
                    else:
                        out = hook(module, args, result)
                    if out is not None:
                        result = out
                except Exception as e:
                    user_warnings.warn(f"{owner} forward hook with ``always_call=True`` raised an exception that was "
                                  f"silenced as another error was raised in forward: {str(e)}", stacklevel=3)


def _attach_legacy_backward_hooks(module, hooks, args, result):
    """register_backward_hook's old behaviour: the hooks go on the grad_fn of the (first) output tensor."""
    var = result
    while not isinstance(var, TensorImpl):
        if isinstance(var, dict):
            var = next(v for v in var.values() if isinstance(v, TensorImpl))
        else:
            var = var[0]
    grad_fn = var.grad_fn
    if grad_fn is not None:
        for hook in hooks:
            grad_fn.register_hook(_WrappedHook(hook, module))
        _warn_non_full_backward_hook(args, result, grad_fn)


def _as_tensor_tuple(value):
    """A lone tensor as a 1-tuple, a tuple of tensors as it is, anything else as None."""
    if isinstance(value, TensorImpl):
        return (value,)
    if isinstance(value, tuple) and all(isinstance(v, TensorImpl) for v in value):
        return value
    return None


def _warn_non_full_backward_hook(inputs, result, grad_fn):
    result = _as_tensor_tuple(result)
    if result is None:
        user_warnings.warn("Using non-full backward hooks on a Module that does not return a single Tensor or a "
                      "tuple of Tensors is deprecated and will be removed in future versions. This hook will be "
                      "missing some of the grad_output. Please use register_full_backward_hook to get the "
                      "documented behavior.", FutureWarning, stacklevel=4)
        return
    inputs = _as_tensor_tuple(inputs)
    if inputs is None:
        user_warnings.warn("Using non-full backward hooks on a Module that does not take as input a single Tensor or "
                      "a tuple of Tensors is deprecated and will be removed in future versions. This hook will "
                      "be missing some of the grad_input. Please use register_full_backward_hook to get the "
                      "documented behavior.", FutureWarning, stacklevel=4)
        return
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        user_warnings.warn("Using a non-full backward hook when outputs are nested in python data structure is "
                      "deprecated and will be removed in future versions. This hook will be missing some "
                      "grad_output.", FutureWarning, stacklevel=4)
    elif len(out_grad_fn) > 1:
        user_warnings.warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                      "deprecated and will be removed in future versions. This hook will be missing some "
                      "grad_output. Please use register_full_backward_hook to get the documented behavior.",
                      FutureWarning, stacklevel=4)
    else:
        inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
        next_functions = {n[0] for n in grad_fn.next_functions}
        if inputs_grad_fn != next_functions:
            user_warnings.warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                          "deprecated and will be removed in future versions. This hook will be missing some "
                          "grad_input. Please use register_full_backward_hook to get the documented behavior.",
                          FutureWarning, stacklevel=4)

