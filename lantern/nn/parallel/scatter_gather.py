"""scatter and gather (torch.nn.parallel.scatter_gather): split inputs across accelerators and gather outputs back.

Both walk nested tuples, lists, namedtuples and dicts as torch's do. Without accelerators a tensor cannot be sent
anywhere: scattering one fails as in torch's CPU build (a CPU target is refused; otherwise torch's CPU build lacks
the kernel, `torch._C._scatter`), and gathering CPU tensors is refused. What holds no tensor is copied per target.

>>> scatter({"lr": 0.1, "steps": (1, 2)}, [0, 1])
[{'lr': 0.1, 'steps': (1, 2)}, {'lr': 0.1, 'steps': (1, 2)}]
>>> gather([None, None], 0) is None
True
"""
from ..._tensor import Tensor
from ._devices import non_cpu_index

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs, target_gpus, dim=0):
    """`inputs` split along `dim` into one piece per target; see the module docstring."""
    def scatter_map(obj):
        if isinstance(obj, Tensor):
            for device in target_gpus:
                non_cpu_index(device)
            raise AttributeError("module 'torch._C' has no attribute '_scatter'")
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and obj:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in target_gpus]
    return scatter_map(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """scatter for positional and keyword arguments, padded to the same number of pieces."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """The per-device `outputs` joined along `dim` on `target_device`; see the module docstring."""
    def gather_map(outputs):
        out = outputs[0]
        if isinstance(out, Tensor):
            raise AssertionError("Gather function not implemented for CPU tensors")
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outputs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outputs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outputs)))
        return type(out)(map(gather_map, zip(*outputs)))
    return gather_map(outputs)
