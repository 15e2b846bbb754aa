"""Printing tensors in PyTorch's format (filled in by the printing work)."""


def tensor_repr(t):
    return f"tensor(<{list(t._size)} {t.dtype}>)"


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    raise NotImplementedError("set_printoptions is not implemented yet")


def get_printoptions():
    raise NotImplementedError("get_printoptions is not implemented yet")
