"""The numba kernel modules of lantern.ops (nn_rnn_numba, nn_pooling_numba, nn_misc_numba), imported when a
specialisation first asks for one: numba takes about half a second to import, and is optional (the `jit` extra).
Without it the readable kernels run.

>>> kernels = optional_kernels("nn_misc_numba")
>>> kernels is None or callable(kernels.add_rows)
True
"""
import importlib

_LOADED = {}


def optional_kernels(module):
    """lantern.ops.<module>, imported on first use, or None where numba cannot be imported."""
    if module not in _LOADED:
        try:
            _LOADED[module] = importlib.import_module(f"{__package__}.{module}")
        except ImportError:
            _LOADED[module] = None
    return _LOADED[module]
