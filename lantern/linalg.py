"""lantern.linalg: torch.linalg's functions, declared in lantern/ops/linalg.py and exported here by name."""
from .ops import linalg as _linalg

globals().update({name: getattr(_linalg, name) for name in getattr(_linalg, "LINALG_ALL", ())})
