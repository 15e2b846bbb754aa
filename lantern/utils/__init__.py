"""lantern.utils: data loading (utils.data), pytrees (utils._pytree), hook handles (utils.hooks) and the naming of a
device from outside (utils.backend_registration)."""
from . import backend_registration, data, deterministic, hooks, _pytree  # noqa: F401
from .backend_registration import generate_methods_for_privateuse1_backend, rename_privateuse1_backend  # noqa: F401
