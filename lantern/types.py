"""lantern.types: the type aliases typed code imports (`from torch.types import Number, Device`), as torch.types.

They are for annotations only; nothing in lantern checks them at run time. lantern has no symbolic sizes
(torch.SymInt and its kin belong to torch.compile's tracing), so the "...LikeType" aliases are the plain Python
types.

>>> from lantern.types import Device, Number
>>> def scale(x: Number, device: Device = None): return x
>>> scale(2.0)
2.0
>>> from lantern.types import _Number
>>> isinstance(3, _Number), isinstance("3", _Number)
(True, False)
"""
import os
from collections.abc import Sequence
from typing import IO, TypeAlias

from .core.device import device as _device
from .core.dtype import dtype as _dtype
from .core.size import Size
from ._tensor import Tensor

__all__ = ["Number", "Device", "FileLike", "Storage"]

Number: TypeAlias = int | float | bool
_Number = (int, float, bool)  # the same, as a tuple for isinstance
Device: TypeAlias = _device | str | int | None
FileLike: TypeAlias = str | os.PathLike[str] | IO[bytes]

IntLikeType: TypeAlias = int
FloatLikeType: TypeAlias = float
BoolLikeType: TypeAlias = bool
py_sym_types = ()  # no symbolic scalars in lantern (torch: SymInt, SymFloat, SymBool)

_TensorOrTensors: TypeAlias = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors: TypeAlias = Tensor | Sequence[Tensor | None]
_size: TypeAlias = Size | list[int] | tuple[int, ...]
_symsize: TypeAlias = Size | Sequence[int]
_int, _float, _bool, _complex, _str, _bytes = int, float, bool, complex, str, bytes


class Storage:
    """The interface a storage offers, for annotations (lantern.UntypedStorage is the storage itself)."""
    device: _device
    dtype: _dtype

    def element_size(self) -> int:
        raise NotImplementedError

    def nbytes(self) -> int:
        raise NotImplementedError

    def data_ptr(self) -> int:
        raise NotImplementedError

    def is_shared(self) -> bool:
        raise NotImplementedError

    def share_memory_(self):
        raise NotImplementedError

    def cpu(self):
        raise NotImplementedError
