"""layout and memory_format: how a tensor's memory is read.

A tensor's layout is the one of its backend (`t._backend.layout`): the dense `strided` layout of the CPU/CUDA/Meta
backends, or a sparse one (`sparse_coo`, `sparse_csr`: lantern.backends.sparse). `sparse_csc`, `sparse_bsr` and
`sparse_bsc` name PyTorch's other compressed layouts, which lantern does not build (converting to them raises).
`contiguous_format` / `channels_last` name the stride orders that `is_contiguous(memory_format=...)` and
`contiguous(memory_format=...)` ask about.

>>> lantern.strided
lantern.strided
"""
from .shown_name import qualified


class layout:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return qualified(self.name)

    def __reduce__(self):
        return (_by_name, (self.name,))


class memory_format:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return qualified(self.name)

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name):
    """The module's layout or memory_format object named `name` (pickles restore the singletons)."""
    return globals()[name]


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
