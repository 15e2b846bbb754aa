"""lantern.utils: data loading (utils.data), pytrees (utils._pytree) and hook handles (utils.hooks)."""
from . import data, deterministic, hooks, _pytree  # noqa: F401
