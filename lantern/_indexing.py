"""Tensor indexing: __getitem__ / __setitem__ (filled in by the indexing work)."""


def getitem(t, index):
    raise NotImplementedError("indexing is not implemented yet")


def setitem(t, index, value):
    raise NotImplementedError("indexing is not implemented yet")
