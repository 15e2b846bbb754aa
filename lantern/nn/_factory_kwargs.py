"""factory_kwargs: a module's device/dtype/memory_format keywords, checked and merged (torch.nn.factory_kwargs).

>>> from lantern.nn import factory_kwargs
>>> factory_kwargs({"dtype": "float64", "factory_kwargs": {"device": "cpu"}}) == {"device": "cpu", "dtype": "float64"}
True
>>> factory_kwargs({"bias": True})
Traceback (most recent call last):
TypeError: unexpected kwargs {'bias'}
"""

__all__ = ["factory_kwargs"]

_SIMPLE_KEYS = ("device", "dtype", "memory_format")


def factory_kwargs(kwargs):
    """The keywords to pass to factory functions (lantern.empty, ...): `device`, `dtype` and `memory_format` from
    `kwargs`, plus those of its nested `factory_kwargs` dict (a way to name a factory keyword that the caller's own
    signature already uses). Any other key, or one given both ways, is a TypeError."""
    if kwargs is None:
        return {}
    expected = set(_SIMPLE_KEYS) | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    merged = dict(kwargs.get("factory_kwargs", {}))
    for key in _SIMPLE_KEYS:
        if key in kwargs:
            if key in merged:
                raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
            merged[key] = kwargs[key]
    return merged
