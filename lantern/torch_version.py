"""torch.torch_version: `TorchVersion`, the string `torch.__version__` is, which also compares as a version.

Programs test the version they run on in every spelling: `torch.__version__ >= "2.0"`, `>= (1, 12)`,
`version.parse(torch.__version__)`, `.split("+")[0]`. As a plain string, "2.13.0" < "2.2" would be True; a
TorchVersion compares by PEP 440 (packaging's Version) against a string, a Version or a tuple of numbers, and falls
back to string comparison for something that is not a version at all.

>>> v = TorchVersion("2.13.0+lantern.0.1.0")
>>> v >= "2.2", v >= (2, 13), v < (2, 14, 1), v.split("+")[0]
(True, True, True, '2.13.0')
"""
from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from .version import __version__ as internal_version

__all__ = ["TorchVersion", "Version", "InvalidVersion", "internal_version"]


class TorchVersion(str):
    """A version string that compares as a version (see the module docstring)."""

    __slots__ = ()

    @staticmethod
    def _as_version(other):
        if isinstance(other, Version):
            return other
        if isinstance(other, str):
            return Version(other)
        if isinstance(other, Iterable):   # (2, 1) is 2.1
            return Version(".".join(str(part) for part in other))
        raise InvalidVersion(other)

    def _compare(self, other, method):
        try:
            return getattr(Version(self), method)(self._as_version(other))
        except InvalidVersion:
            return getattr(str, method)(self, other)

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    __hash__ = str.__hash__


__version__ = TorchVersion(internal_version)
