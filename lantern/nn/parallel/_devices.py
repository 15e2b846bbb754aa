"""Reading the accelerator a DataParallel helper is asked for, as torch's CPU build reads it: there is none, so a
CPU device is refused and anything that would need the accelerator fails with torch's error."""
from ...core.device import device as make_device


def non_cpu_index(device, message="Expected a non cpu device, but got: {}"):
    """The index of an accelerator named by an int, a string or a device; a CPU device is torch's ValueError."""
    if isinstance(device, int):
        return device
    parsed = make_device(device)
    if parsed.type == "cpu":
        raise ValueError(message.format(parsed))
    return parsed.index
