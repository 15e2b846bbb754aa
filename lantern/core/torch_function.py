"""The `__torch_function__` protocol's state and its handler: what PyTorch's Python argument parser does before
dispatch (torch/csrc/utils/python_arg_parser.cpp, torch.overrides.handle_torch_function).

A public function (a generated binding, a Tensor method or operator) first asks `has_torch_function(args)`: is a
TorchFunctionMode on, or is an argument a Tensor subclass (or any object) with its own `__torch_function__`? If
so, `handle_torch_function` hands the call to the innermost mode, then to each such argument's class, subclasses
before their bases, until one answers something other than NotImplemented.

The question costs nothing for plain tensors: bindings test `ACTIVE[0]` first, which is True only while a mode is
pushed or a class that overrides `__torch_function__` exists (Tensor.__init_subclass__ and weak references keep
the count); an object that is no Tensor but has `__torch_function__` fails the call and is asked in the binding's
`except`. It lives in core because the bindings (lantern.ops) read it; lantern.overrides is its public face.

>>> import lantern
>>> class Logged(lantern.Tensor):
...     @classmethod
...     def __torch_function__(cls, func, types, args=(), kwargs=None):
...         print("called", func.__name__)
...         return super().__torch_function__(func, types, args, kwargs)
>>> y = lantern.add(lantern.ones(2).as_subclass(Logged), 1)
called add
>>> type(y).__name__
'Logged'
"""
import threading
import weakref

from . import tensor_impl

ACTIVE = [False]  # the bindings' one test: True while a mode is pushed or an overriding class is alive

_overriding_classes = [0]  # live Tensor subclasses whose __torch_function__ is not the disabled one
_pushed_modes = [0]        # modes pushed on any thread's stack


class _ThreadState(threading.local):
    modes = None             # this thread's TorchFunctionMode stack (a list, innermost last), made on first push
    subclasses_disabled = False  # inside DisableTorchFunctionSubclass (or DisableTorchFunction)
    all_disabled = False         # inside DisableTorchFunction: modes are skipped too


_state = _ThreadState()
_watchers = []  # called with the new value whenever ACTIVE changes (lantern._tensor_subclasses checks methods)


def _refresh():
    active = bool(_pushed_modes[0] or _overriding_classes[0])
    if active is not ACTIVE[0]:
        ACTIVE[0] = active
        for watcher in _watchers:
            watcher(active)


def watch(callback):
    """Call callback(active) each time the check switches on or off."""
    _watchers.append(callback)


class _DisabledTorchFunction:
    """The `__torch_function__` of classes that opt out (nn.Parameter): calls on them run as on plain tensors. An
    object, not a function, so that reading it from an instance gives this very object (no bound method), as
    PyTorch's built-in does."""

    def __call__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

    def __repr__(self):
        return "<built-in function _disabled_torch_function_impl>"


_disabled_torch_function_impl = _DisabledTorchFunction()


def note_tensor_subclass(cls):
    """Called for each new Tensor subclass: one that overrides `__torch_function__` switches the check on for as
    long as the class lives."""
    if getattr(cls, "__torch_function__", None) is not _disabled_torch_function_impl:
        _overriding_classes[0] += 1
        weakref.finalize(cls, _forget_class)
        _refresh()


def _forget_class():
    _overriding_classes[0] -= 1
    _refresh()


# ---- the mode stack ----------------------------------------------------------------------------------------------
def _modes():
    if _state.modes is None:
        _state.modes = []
    return _state.modes


def push_mode(mode):
    _modes().append(mode)
    _pushed_modes[0] += 1
    _refresh()


def pop_mode():
    modes = _modes()
    if not modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = modes.pop()
    _pushed_modes[0] -= 1
    _refresh()
    return mode


def stack_len():
    return len(_state.modes or ())


def mode_at(level):
    return _modes()[level]


def is_mode_enabled():
    """A mode is pushed and DisableTorchFunction is not on."""
    return bool(_state.modes) and not _state.all_disabled


def is_enabled():
    """Subclasses' `__torch_function__` are consulted (not inside DisableTorchFunction(Subclass))."""
    return not _state.subclasses_disabled


class _Disabled:
    """A context manager setting the thread's disabled flags, restoring them on exit."""
    _all = False

    def __enter__(self):
        self._saved = _state.subclasses_disabled, _state.all_disabled
        _state.subclasses_disabled = True
        _state.all_disabled = self._all or _state.all_disabled
        return self

    def __exit__(self, *exc):
        _state.subclasses_disabled, _state.all_disabled = self._saved


class DisableTorchFunctionSubclass(_Disabled):
    """Inside it, Tensor subclasses' `__torch_function__` are not called (modes still are): how the default
    Tensor.__torch_function__ runs the function itself."""


class DisableTorchFunction(_Disabled):
    """Inside it, neither subclasses' `__torch_function__` nor TorchFunctionModes are called."""
    _all = True


# ---- the check and the handler -------------------------------------------------------------------------------------
def _overrides(obj):
    """Whether obj's class takes part: not a plain Tensor, and a `__torch_function__` that is not the disabled one."""
    cls = type(obj)
    if cls is tensor_impl.tensor_class or cls in _BASIC_TYPES:
        return False
    method = getattr(cls, "__torch_function__", None)
    return method is not None and method is not _disabled_torch_function_impl


_BASIC_TYPES = frozenset((int, float, bool, complex, str, bytes, type(None), tuple, list, dict, slice,
                          type(Ellipsis)))


def _flat(values):
    for v in values:
        if type(v) in (list, tuple):
            yield from v
        else:
            yield v


def has_torch_function(values):
    """Whether a call with these tensor arguments (lists of tensors are looked into) goes to `__torch_function__`."""
    if _state.all_disabled:
        return False
    if _state.modes:
        return True
    if _state.subclasses_disabled:
        return False
    return any(_overrides(v) for v in _flat(values))


def has_torch_function_unary(obj):
    return has_torch_function((obj,))


def has_torch_function_variadic(*objs):
    return has_torch_function(objs)


def overloaded_args(values):
    """The arguments whose class overrides `__torch_function__`, one per class, each subclass before its bases."""
    found, classes = [], set()
    if not _state.subclasses_disabled:
        for v in _flat(values):
            cls = type(v)
            if cls in classes or not _overrides(v):
                continue
            classes.add(cls)
            index = next((i for i, old in enumerate(found) if issubclass(cls, type(old))), len(found))
            found.insert(index, v)
    return found


class _PoppedMode:
    """The innermost mode, off the stack while its own `__torch_function__` runs (so calls inside it go below).
    It still counts as pushed: the check stays on, rather than being switched off and on around every call."""

    def __enter__(self):
        self.mode = _modes().pop()
        return self.mode

    def __exit__(self, *exc):
        _modes().append(self.mode)


def handle_torch_function(public_api, relevant_args, args, kwargs):
    """Call the innermost mode's, then each overriding argument's `__torch_function__` for `public_api(*args,
    **kwargs)`; the first answer other than NotImplemented is the result. (lantern.overrides.handle_torch_function
    is the public spelling, which takes *args and **kwargs.)"""
    found = overloaded_args(relevant_args)
    types = tuple(type(a) for a in found)
    if is_mode_enabled():
        with _PoppedMode() as mode:
            result = mode.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in found:
        result = arg.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = getattr(public_api, "__qualname__", None) or repr(public_api)
    handlers = "".join(f"\n  - tensor subclass {type(a)}" for a in found)
    if is_mode_enabled():
        handlers += f"\n  - mode object {_modes()[-1]}"
    raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers returned "
                    f"NotImplemented:\n{handlers}\n\nFor more information, try re-running with "
                    "TORCH_LOGS=not_implemented")
