"""Parameters to and from one flat vector (torch.nn.utils.convert_parameters).

>>> import lantern
>>> from lantern.nn.utils import parameters_to_vector, vector_to_parameters
>>> a, b = lantern.zeros(2, 2), lantern.zeros(3)
>>> parameters_to_vector([a, b]).shape
lantern.Size([7])
>>> vector_to_parameters(lantern.arange(7.), [a, b]); a.tolist(), b.tolist()
([[0.0, 1.0], [2.0, 3.0]], [4.0, 5.0, 6.0])
"""
import lantern

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _typename(obj):
    """torch.typename for a non-tensor: the object's own qualified name if it has one (classes, functions,
    modules), else its class's; 'builtins.' is left off."""
    if hasattr(obj, "__qualname__") or hasattr(obj, "__name__"):
        module = getattr(obj, "__module__", "") or ""
        name = getattr(obj, "__qualname__", None) or obj.__name__
    else:
        module, name = type(obj).__module__ or "", type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


def _check_device(param, device):
    """The device index every parameter must share (-1 for CPU); TypeError when they differ."""
    here = param.get_device() if param.device.type == "cuda" else -1
    if device is not None and here != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return here


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor (a copy)."""
    device = None
    flat = []
    for param in parameters:
        device = _check_device(param, device)
        flat.append(param.view(-1))
    return lantern.cat(flat)


def vector_to_parameters(vec, parameters):
    """Point each parameter's data at its slice of vec (viewed to the parameter's shape)."""
    if not isinstance(vec, lantern.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    device = None
    start = 0
    for param in parameters:
        device = _check_device(param, device)
        n = param.numel()
        param.data = vec[start:start + n].view_as(param).data
        start += n
