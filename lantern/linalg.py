"""lantern.linalg: torch.linalg's functions, gathered by lantern/ops/linalg.py and exported here by name.

>>> A = lantern.tensor([[4., 1.], [1., 3.]])
>>> lantern.linalg.solve(A, A @ lantern.tensor([1., 2.])).tolist()
[1.0, 2.0]
>>> issubclass(lantern.linalg.LinAlgError, RuntimeError)
True
"""
from .ops import autocast as _autocast, autocast_policy as _autocast_policy, linalg as _linalg

__all__ = list(_linalg.LINALG_ALL)
globals().update({name: getattr(_linalg, name) for name in __all__})
# the functions with an autocast policy (named "linalg.<name>" there) get the Autocast stage in front
globals().update({name: _autocast.stage(f"linalg.{name}", getattr(_linalg, name)) for name in __all__
                  if f"linalg.{name}" in _autocast_policy.FUNCTIONS})
