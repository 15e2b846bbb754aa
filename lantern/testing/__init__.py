"""lantern.testing (torch.testing): assert_close / assert_allclose (_comparison.py), make_tensor (_creation.py) and
FileCheck (_file_check.py).

>>> import lantern
>>> from lantern.testing import assert_close, make_tensor
>>> _ = lantern.manual_seed(0)
>>> x = make_tensor((2, 2), dtype=lantern.float64, device="cpu")
>>> assert_close(x, x.clone())
"""
from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor
from ._file_check import FileCheck

__all__ = ["assert_close", "assert_allclose", "make_tensor", "FileCheck"]
