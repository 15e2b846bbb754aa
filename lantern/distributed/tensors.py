"""Tensors as MPI buffers: a tensor's own memory where it is contiguous (MPI reads and writes it in place, no
copy), a contiguous staging copy written back afterwards where it is not.

>>> import lantern
>>> t = lantern.zeros(2, 3)
>>> array, write_back = buffer_of(t, "x")
>>> array[0, 0] = 5.0; write_back(); t[0, 0].item()
5.0
>>> u = lantern.zeros(3, 2).t()
>>> staged, write_back = buffer_of(u, "x")
>>> staged[1, 2] = 7.0; write_back(); u[1, 2].item()
7.0
"""
import numpy as np

from .._tensor import Tensor
from ..core.layout import strided
from ..core.math_bits import bits


def check_tensor(value, parameter="tensor"):
    """torch's TypeError for a collective's argument that is not a Tensor."""
    if not isinstance(value, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{parameter}` of type torch.Tensor\n"
                        f"             but got {type(value)} instead.")


def check_tensor_list(values, parameter):
    """torch's TypeError for a collective's argument that is not a list of Tensors."""
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, Tensor) for v in values):
        raise TypeError(f"Invalid function argument. Expected parameter `{parameter}` of type List[torch.Tensor]\n"
                        f"             but got {type(values)} instead.")


def check_same_dtypes(*tensors_or_lists):
    """torch's ValueError when a collective's tensors mix dtypes (a complex dtype counts as its real pairs)."""
    first = None
    for tensor in (t for item in tensors_or_lists for t in (item if isinstance(item, (list, tuple)) else [item])):
        dtype = tensor.dtype.to_real() if tensor.dtype.is_complex else tensor.dtype
        if first is None:
            first = dtype
        elif dtype != first:
            raise ValueError(f"Invalid usage of tensors with different dtypesFound {first} and  {tensor.dtype}")


def host_array(tensor, collective):
    """The NumPy array over a dense CPU tensor's memory (with its strides); an error naming what is unsupported."""
    if tensor.device.type != "cpu":
        raise RuntimeError(f"{collective}: lantern's process groups run on the CPU (MPI); got a tensor on "
                           f"{tensor.device}. Move it with .cpu() first")
    if tensor.layout is not strided:
        raise RuntimeError(f"{collective}: lantern's collectives take dense (strided) tensors, not {tensor.layout}")
    if any(bits(tensor)):  # memory read conjugated or negated: MPI would move the memory, not the values
        raise RuntimeError(f"{collective}: the tensor has its conjugate or negative bit set; call "
                           ".resolve_conj().resolve_neg() first")
    return tensor._host_array()


def buffer_of(tensor, collective):
    """(C-contiguous array, write_back): the tensor's memory itself, or a staging copy and the function that
    copies it back into the tensor."""
    array = host_array(tensor, collective)
    if array.flags.c_contiguous:
        return array, _nothing
    staged = np.ascontiguousarray(array)
    return staged, lambda: np.copyto(array, staged)


def read_only_array(tensor, collective):
    """A C-contiguous array of the tensor's values, for an input MPI only reads (no copy if contiguous)."""
    return np.ascontiguousarray(host_array(tensor, collective))


def _nothing():
    pass


def shape_text(shape):
    """A shape as gloo's messages print it: (2) or (1, 2)."""
    return "(" + ", ".join(str(n) for n in shape) + ")"
