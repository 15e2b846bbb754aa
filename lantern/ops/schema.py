"""Operator schemas in native_functions.yaml syntax, parsed once at registration.

>>> s = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
>>> s.name, s.overload, [a.name for a in s.args], s.args[2].kwarg_only, s.args[2].default
('add', 'Tensor', ['self', 'other', 'alpha'], True, 1)
>>> parse_schema("view(Tensor(a) self, int[] size) -> Tensor(a)").alias
<AliasKind.VIEW: 'view'>
"""
import re
from dataclasses import dataclass

from ..core import dtype as dt
from .op_kinds import AliasKind

_ARG = re.compile(r"^(?P<type>[A-Za-z]+(?:\([a-z]\d*!?\))?\??(?:\[\d*\])?\??)\s+(?P<name>\w+)(?:=(?P<default>.+))?$")
_LITERALS = {"None": None, "True": True, "False": False, "[]": (), "contiguous_format": "contiguous_format"}


@dataclass(frozen=True)
class Argument:
    name: str
    type: str            # base type: Tensor, Scalar, int, float, bool, str, ScalarType, Device, ...
    is_list: bool        # int[] / Tensor[]
    optional: bool       # trailing '?'
    kwarg_only: bool
    default: object      # NO_DEFAULT when required
    alias: str = None    # 'a' for Tensor(a), 'a!' for Tensor(a!)

    @property
    def is_tensor(self):
        return self.type == "Tensor"

    @property
    def required(self):
        return self.default is NO_DEFAULT


class _NoDefault:
    def __repr__(self):
        return "<required>"


NO_DEFAULT = _NoDefault()


@dataclass(frozen=True)
class Schema:
    name: str
    overload: str
    args: tuple
    returns: tuple       # Arguments (names may be empty)
    text: str
    alias: AliasKind = AliasKind.NEW

    @property
    def full_name(self):
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def __str__(self):
        return self.text


def qualified_name(name):
    """An op's name with its namespace, as PyTorch's profiler and graphs print it: 'add' -> 'aten::add'; a
    lantern.library op's 'mylib::foo' already has one."""
    return name if "::" in name else f"aten::{name}"


def _parse_default(text, type_):
    text = text.strip()
    if text in _LITERALS:
        return _LITERALS[text]
    if text.startswith("[") and text.endswith("]"):
        return tuple(int(x) for x in text[1:-1].split(",") if x.strip())
    if text.startswith(("'", '"')):
        return text[1:-1]
    if type_ == "ScalarType":  # a dtype's name: ScalarType dtype=float32
        return getattr(dt, text)
    try:
        return int(text)
    except ValueError:
        return float(text)


def _parse_arg(text, kwarg_only):
    m = _ARG.match(text.strip())
    if not m:
        raise ValueError(f"bad schema argument: {text!r}")
    t = m["type"]
    optional = t.endswith("?")
    t = t.rstrip("?")
    is_list = "[" in t
    t = t.split("[")[0].rstrip("?")  # Tensor?[]: a list whose items may be None
    alias = None
    if "(" in t:
        t, alias = t[:-1].split("(")
    default = NO_DEFAULT if m["default"] is None else _parse_default(m["default"], t)
    return Argument(m["name"], t, is_list, optional, kwarg_only, default, alias)


def _split_top(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def parse_schema(text):
    head, _, ret = text.partition("->")
    name_part, _, arg_part = head.strip().partition("(")
    arg_part = arg_part.rstrip()[:-1]
    name, _, overload = name_part.partition(".")
    args, kwarg_only = [], False
    for piece in _split_top(arg_part):
        if piece == "*":
            kwarg_only = True
            continue
        args.append(_parse_arg(piece, kwarg_only))
    ret = ret.strip()
    if ret.startswith("("):
        ret = ret[1:-1]
    returns = tuple(_parse_arg(r if " " in r else r + " _", False) for r in _split_top(ret))
    mutated = [a for a in args if a.alias and a.alias.endswith("!")]
    if any(a.name == "out" for a in mutated) or (mutated and all(a.kwarg_only for a in mutated)):
        alias = AliasKind.OUT
    elif mutated:
        alias = AliasKind.INPLACE
    elif any(r.alias for r in returns):
        alias = AliasKind.VIEW
    else:
        alias = AliasKind.NEW
    return Schema(name, overload, tuple(args), returns, text, alias)
