"""The CUDA device: registered by name so that asking for it without CuPy or a GPU fails clearly.

The CuPy kernels themselves come with a later issue; until then every CUDA request raises `lantern.core.device.cuda_unavailable_error()`.

>>> lantern.cuda.is_available()
False
"""


def is_available():
    return False


def device_count():
    return 0
