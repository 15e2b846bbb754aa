"""The exceptions torch.distributed raises (all RuntimeErrors, so `except RuntimeError` catches them).

>>> from lantern.distributed import DistBackendError, DistError
>>> issubclass(DistBackendError, DistError) and issubclass(DistError, RuntimeError)
True
"""


class DistError(RuntimeError):
    """An error in torch.distributed."""


class DistBackendError(DistError):
    """The communication backend failed: here MPI, or a peer that did not answer within the group's timeout."""


class DistNetworkError(DistError):
    """A network failure."""


class DistStoreError(DistError):
    """A key-value store failure."""
