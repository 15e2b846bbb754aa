"""lantern.linalg: torch.linalg's functions, declared in lantern/ops/linalg.py and exported here by name.

>>> A = lantern.tensor([[4., 1.], [1., 3.]])
>>> lantern.linalg.solve(A, A @ lantern.tensor([1., 2.])).tolist()
[1.0, 2.0]
>>> issubclass(lantern.linalg.LinAlgError, RuntimeError)
True
"""
from .ops import linalg as _linalg

__all__ = list(_linalg.LINALG_ALL)
globals().update({name: getattr(_linalg, name) for name in __all__})
