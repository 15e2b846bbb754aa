"""ops layer of lantern (see README.md for the map)."""

import importlib

NAMESPACES = {"aten"}  # the op namespaces lantern.ops has as attributes; lantern.library's Libraries add theirs


def __getattr__(name):
    """`lantern.ops.aten` and the namespaces of lantern.library's Libraries (`lantern.ops.mylib`): operator
    namespaces (lantern.ops.op_namespaces), as torch.ops has them."""
    if name not in NAMESPACES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    namespace = globals()[name] = importlib.import_module(f"{__name__}.op_namespaces").OpNamespace(name)
    return namespace
