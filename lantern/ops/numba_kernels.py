"""The numba kernel modules of lantern.ops (nn_rnn_numba, nn_pooling_numba, nn_conv_numba, nn_misc_numba, ...),
imported when a specialisation first asks for one: numba takes about half a second to import, and is optional (the
`jit` extra). Without it the readable kernels run.

>>> kernels = optional_kernels("nn_misc_numba")
>>> kernels is None or callable(kernels.add_rows)
True
"""
import importlib

_LOADED = {}


def optional_kernels(module, package=__package__):
    """<package>.<module> (lantern.ops.<module> by default), imported on first use, or None where numba cannot be
    imported."""
    name = f"{package}.{module}"
    if name not in _LOADED:
        try:
            _LOADED[name] = importlib.import_module(name)
        except ImportError:
            _LOADED[name] = None
    return _LOADED[name]
