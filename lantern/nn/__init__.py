"""lantern.nn: neural-network building blocks. For now only `functional` (the Module system comes with issue 5)."""
from . import functional  # noqa: F401
