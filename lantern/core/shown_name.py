"""The library name that reprs print before a dtype, a Size, a layout: `lantern`, or `torch` while lantern.compat
runs a PyTorch program, so that the program prints (and compares, in `str(t.dtype) == "torch.float32"`) what it
would under PyTorch.

>>> qualified("float32")
'lantern.float32'
>>> show_as("torch"); qualified("Size([2])")
'torch.Size([2])'
>>> show_as("lantern")
"""


class _Shown:
    name = "lantern"


def qualified(name):
    """`name` after the library name a program sees."""
    return f"{_Shown.name}.{name}"


def show_as(library):
    """Print `library` before names from now on (lantern.compat.install sets "torch", uninstall "lantern")."""
    _Shown.name = library
