"""The names of torch._C that Python code uses for the `__torch_function__` protocol (torch._C holds PyTorch's
C++ bindings; lantern has no C++, so this module holds just these, from lantern.core.torch_function).

>>> import lantern
>>> class Tagged(lantern.Tensor):
...     pass
>>> t = lantern.ones(2).as_subclass(Tagged)
>>> with lantern._C.DisableTorchFunctionSubclass():
...     type(t + 1).__name__, lantern._C._is_torch_function_enabled()
('Tensor', False)
"""
from .core.torch_function import (  # noqa: F401
    DisableTorchFunction, DisableTorchFunctionSubclass, _disabled_torch_function_impl,
    has_torch_function as _has_torch_function, has_torch_function_unary as _has_torch_function_unary,
    has_torch_function_variadic as _has_torch_function_variadic, is_enabled as _is_torch_function_enabled,
    is_mode_enabled as _is_torch_function_mode_enabled, mode_at as _get_function_stack_at,
    pop_mode as _pop_torch_function_stack, push_mode as _push_on_torch_function_stack,
    stack_len as _len_torch_function_stack,
)
