"""torch._dynamo.exc: the errors torch.compile raises, with torch's class tree.

>>> from lantern._dynamo.exc import Unsupported
>>> issubclass(Unsupported, RuntimeError)
True
"""


class TorchDynamoException(RuntimeError):
    pass


class InvalidBackend(TorchDynamoException):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for available backends.")


class Unsupported(TorchDynamoException):
    """What fullgraph=True cannot capture (without fullgraph, the call runs eagerly instead: a graph break)."""


class BackendCompilerFailed(TorchDynamoException):
    pass
