"""cuda-as-cpu: run a program written for a GPU on the CPU, by letting the CUDA devices it names mean the CPU.

Many PyTorch programs hard-code their GPU: nanoGPT's DDP branch sets `device = f'cuda:{local_rank}'` and calls
`torch.cuda.set_device(device)`, which fails on PyTorch's CPU build (and so on lantern). Switched on, this mode
changes exactly one thing about devices, at the place every device name is parsed (`lantern.device`):

- `device('cuda')`, `device('cuda:1')`, `device('cuda', 1)` are the CPU, so `.to('cuda:0')`, `.cuda()`,
  `model.to(device)`, `torch.load(map_location='cuda:0')` and factories with `device='cuda'` all land on the CPU;
- `torch.cuda.set_device`, `current_device`, `synchronize` and the `torch.cuda.device(...)` context accept any
  CUDA device (they select "a GPU" that is the CPU; CPU work is finished when a call returns, so synchronize has
  nothing to wait for);
- pinned memory is ordinary memory: `x.pin_memory()` is a copy of `x` and factories take `pin_memory=True`
  (`is_pinned()` stays False: nothing is page-locked).

It does not pretend that a GPU exists: `torch.cuda.is_available()` stays False and `device_count()` 0, so a program
that asks takes its CPU path, and everything keyed by a device *type* string behaves as on PyTorch's CPU build:
`autocast(device_type='cuda')` disables itself with torch's warning and `GradScaler('cuda')` (or
`torch.cuda.amp.GradScaler`) is disabled, also with torch's warning. A program so run computes in float32 on the
CPU: the same numbers as the program run with `device='cpu'`, which is what one compares a CPU run with.
(DistributedDataParallel's `device_ids`, which must be None for a CPU module, may name CUDA devices here.)

Switch it on for a process and the processes it starts with `LANTERN_CUDA_AS_CPU=1` in the environment (read when
lantern is imported), `python -m lantern.compat --cuda-as-cpu script.py`, or `lantern-run --cuda-as-cpu`; in a
running process, `enable()` / `disable()`, or the `switched_on()` context:

>>> with switched_on():
...     lantern.ones(2, device='cuda:1').device, lantern.cuda.set_device('cuda:1'), lantern.cuda.current_device()
(device(type='cpu'), None, 1)
>>> lantern.device('cuda:1')
device(type='cuda', index=1)
"""
import contextlib
import os

ENVIRONMENT_VARIABLE = "LANTERN_CUDA_AS_CPU"


class _Switch:
    """Whether the mode is on (`on`, read on lantern's hot paths as one attribute) and the CUDA device index the
    program last selected."""

    def __init__(self):
        self.on = os.environ.get(ENVIRONMENT_VARIABLE, "") not in ("", "0")
        self.selected_index = 0


SWITCH = _Switch()


def enabled():
    """Whether CUDA devices mean the CPU in this process."""
    return SWITCH.on


def enable():
    """Let CUDA devices mean the CPU from now on, here and in the processes this one starts (the environment
    variable is set, so spawned workers and launched ranks inherit it)."""
    SWITCH.on = True
    os.environ[ENVIRONMENT_VARIABLE] = "1"


def disable():
    """CUDA devices are CUDA devices again (which PyTorch's CPU build, and lantern, cannot provide)."""
    SWITCH.on = False
    SWITCH.selected_index = 0
    os.environ.pop(ENVIRONMENT_VARIABLE, None)


@contextlib.contextmanager
def switched_on():
    """The mode for the block only, then as before (the environment variable too)."""
    was_on, saved_index = SWITCH.on, SWITCH.selected_index
    saved_variable = os.environ.get(ENVIRONMENT_VARIABLE)
    enable()
    try:
        yield
    finally:
        SWITCH.on, SWITCH.selected_index = was_on, saved_index
        if saved_variable is None:
            os.environ.pop(ENVIRONMENT_VARIABLE, None)
        else:
            os.environ[ENVIRONMENT_VARIABLE] = saved_variable


def cuda_index(device, optional=False):
    """The CUDA device index `device` names, read as torch.cuda.set_device reads it: an int (negative: no device),
    'cuda:1', or a device with an index; anything else is torch's ValueError. In this mode a device object of type
    'cpu' is what a CUDA device became when it was made (`torch.device('cuda:1')`): its index is gone, so it names
    the device selected now. With `optional` (torch.cuda.device's reading) a CUDA device without an index is -1."""
    from .device import device as make_device  # cycle: core.device imports core.cuda_as_cpu
    if isinstance(device, int):
        return int(device)
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        if kind == "cuda" and index.isdigit():
            return int(index)
        if kind == "cuda" and not index and optional:
            return -1
        if kind != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {make_device(device)}")
    elif isinstance(device, make_device):
        if device.type == "cpu" and SWITCH.on:
            return SWITCH.selected_index
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        if device.index is not None:
            return device.index
        if optional:
            return -1
    raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")


def select(index):
    """torch.cuda.set_device in this mode: remember the index (current_device() answers it)."""
    SWITCH.selected_index = index
