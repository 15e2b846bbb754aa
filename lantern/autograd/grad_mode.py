"""Grad modes (thread-local): no_grad, enable_grad, set_grad_enabled, inference_mode; and two engine settings,
set_multithreading_enabled and enforce_grad_layout_policy.

Each is a context manager and a decorator. With grad mode off the dispatcher leaves out the Autograd key, so ops
record nothing.

>>> x = lantern.ones(2, requires_grad=True)
>>> with lantern.no_grad():
...     y = x * 2
>>> y.requires_grad, y.grad_fn is None, lantern.is_grad_enabled()
(False, True, True)
"""
import functools
import inspect
import threading

from ..core.state import tls


class _DecoratorContextManager:
    """Lets a context manager class also decorate functions (and generator functions)."""

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise RuntimeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn):
        """The mode holds while the generator runs, not while its caller does between two `next`s."""
        @functools.wraps(fn)
        def generator_context(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value
        return generator_context

    def clone(self):
        return type(self)()


class no_grad(_DecoratorContextManager):
    """Ops inside record no graph: outputs have requires_grad=False and no grad_fn."""

    def __enter__(self):
        self.prev = tls.grad_enabled
        tls.grad_enabled = False

    def __exit__(self, *exc):
        tls.grad_enabled = self.prev


class enable_grad(_DecoratorContextManager):
    """Turn grad mode back on inside a no_grad region."""

    def __enter__(self):
        self.prev = tls.grad_enabled
        tls.grad_enabled = True

    def __exit__(self, *exc):
        tls.grad_enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """set_grad_enabled(mode): a function (takes effect at once), a context manager and a decorator."""

    def __init__(self, mode):
        self.prev = tls.grad_enabled
        self.mode = bool(mode)
        tls.grad_enabled = self.mode

    def __call__(self, fn):
        tls.grad_enabled = self.prev  # used as a decorator: the mode applies inside fn only
        return super().__call__(fn)

    def __enter__(self):
        tls.grad_enabled = self.mode

    def __exit__(self, *exc):
        tls.grad_enabled = self.prev

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors made inside are inference tensors: they may never enter autograd later."""

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self.prev = (tls.grad_enabled, tls.inference_mode)
        if self.mode:
            tls.grad_enabled = False
            tls.inference_mode = True
            tls.refresh()

    def __exit__(self, *exc):
        tls.grad_enabled, tls.inference_mode = self.prev
        tls.refresh()

    def clone(self):
        return inference_mode(self.mode)


def is_grad_enabled():
    return tls.grad_enabled


def is_inference_mode_enabled():
    return tls.inference_mode


class _EngineSettings(threading.local):
    multithreading = True        # set_multithreading_enabled
    grad_layout_enforced = True  # enforce_grad_layout_policy


_engine_settings = _EngineSettings()


def is_multithreading_enabled():
    return _engine_settings.multithreading


def is_grad_layout_enforced():
    return _engine_settings.grad_layout_enforced


class set_multithreading_enabled(_DecoratorContextManager):
    """set_multithreading_enabled(mode): whether backward may run on per-device worker threads (thread-local; a
    function, a context manager and a decorator). lantern's engine runs every backward on the calling thread, which
    is what torch does for CPU tensors in either mode, so the setting changes where nothing runs."""

    def __init__(self, mode):
        self.prev = _engine_settings.multithreading
        _engine_settings.multithreading = mode
        self.mode = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _engine_settings.multithreading = self.prev

    def clone(self):
        return type(self)(self.mode)


class enforce_grad_layout_policy(_DecoratorContextManager):
    """enforce_grad_layout_policy(enable=True): whether a leaf's first gradient must follow the layout contract
    (the leaf's strides, accumulate.py). With enable=False a gradient the engine owns becomes `.grad` as it is,
    whatever its strides (a new gradient is still made in the contract's layout). Thread-local; a function, a
    context manager and a decorator."""

    def __init__(self, enable=True):
        self.prev = _engine_settings.grad_layout_enforced
        _engine_settings.grad_layout_enforced = enable
        self.mode = enable

    def __call__(self, fn):
        _engine_settings.grad_layout_enforced = self.prev  # as a decorator: the policy applies inside fn only
        return super().__call__(fn)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _engine_settings.grad_layout_enforced = self.prev

    def clone(self):
        return type(self)(self.mode)
