"""`lantern.ops.<namespace>.<op>`: operators by their qualified names, as `torch.ops.aten.add` and
`torch.ops.mylib.foo` reach them.

A namespace (`aten` for lantern's own ops, a library's name for ops defined through lantern.library) holds one
packet per op name; a packet holds the op's overloads (`default`, `Tensor`, `out`, ...). Calling an overload binds
its arguments to the schema and runs the op through the dispatcher; calling a packet picks the overload whose
schema takes the arguments.

>>> lantern.ops.aten.add
<OpOverloadPacket(op='aten.add')>
>>> lantern.ops.aten.add.default(lantern.ones(2), lantern.ones(2), alpha=2)
tensor([3., 3.])
>>> lantern.ops.aten.add.overloads()   # lantern's overload names: `default` where torch says `Tensor`
['default', 'out']
"""
import weakref

from .dispatcher import call
from .registry import REGISTRY

ATEN = "aten"


def registered_name(namespace, name, overload):
    """The registry's name of namespace::name.overload ('add.out' for aten's, 'mylib::foo' for a library's)."""
    qualified = name if namespace == ATEN else f"{namespace}::{name}"
    return f"{qualified}.{overload}" if overload else qualified


_index = {"size": -1, "names": {}}


def _by_name():
    """{op name without overload: [its Operators]}, rebuilt when an op is registered or removed."""
    if _index["size"] != len(REGISTRY) or _index.get("changed"):
        names = {}
        for op in REGISTRY.values():
            names.setdefault(op.name.partition(".")[0], []).append(op)
        _index.update(size=len(REGISTRY), names=names, changed=False)
    return _index["names"]


def registry_changed():
    """Say that ops were added or removed (lantern.library calls it), so the next lookup rebuilds the index."""
    _index["changed"] = True


class OpNamespace:
    """`lantern.ops.<namespace>`: its ops as attributes (OpOverloadPacket)."""

    def __init__(self, name):
        self.name = name

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        overloads = {op.schema.overload or "default": op
                     for op in _by_name().get(registered_name(self.name, op_name, ""), ())}
        if not overloads:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'")
        return OpOverloadPacket(self.name, op_name, overloads)

    def __repr__(self):
        return f"<module 'lantern.ops.{self.name}'>"


class OpOverloadPacket:
    """All overloads of one op name; `.default`, `.Tensor`, `.out` ... are OpOverloads."""

    def __init__(self, namespace, name, overloads):
        self._qualified = f"{namespace}.{name}"
        self._overloads = {key: OpOverload(op, f"{self._qualified}.{key}") for key, op in overloads.items()}

    def __getattr__(self, key):
        try:
            return self.__dict__["_overloads"][key]
        except KeyError:
            raise AttributeError(f"The underlying op of '{self._qualified}' has no overload name '{key}'") from None

    def overloads(self):
        return list(self._overloads)

    def __call__(self, *args, **kwargs):
        """The first overload (in registration order) whose schema binds these arguments."""
        errors = []
        for overload in self._overloads.values():
            try:
                bound = overload.bind(args, kwargs)
            except TypeError as e:
                errors.append(f"  {overload._op.schema.text}: {e}")
                continue
            return call(overload._op, bound)
        raise TypeError(f"{self._qualified}() takes none of its schemas for these arguments:\n" + "\n".join(errors))

    def __eq__(self, other):
        """Packets of one qualified name are equal (each attribute access makes a new one)."""
        return isinstance(other, OpOverloadPacket) and other._qualified == self._qualified

    def __hash__(self):
        return hash(self._qualified)

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._qualified}')>"

    def __str__(self):
        return self._qualified


class OpOverload:
    """One registered Operator, callable with its schema's arguments."""

    def __init__(self, op, qualified):
        self._op = op
        self._qualified = qualified
        self._schema = op.schema

    @property
    def namespace(self):
        return self._qualified.partition(".")[0]

    @property
    def _opname(self):
        return self._qualified.split(".")[1]

    @property
    def _overloadname(self):
        return self._qualified.rpartition(".")[2]

    @property
    def __name__(self):
        """'add.default', as torch names an overload ('add.Tensor')."""
        return f"{self._opname}.{self._overloadname}"

    @property
    def overloadpacket(self):
        """The packet this overload belongs to: lantern.ops.aten.add for aten.add.default (an op outside the
        registry, such as the Python key's detach, is a packet of its own)."""
        try:
            return getattr(OpNamespace(self.namespace), self._opname)
        except AttributeError:
            return OpOverloadPacket(self.namespace, self._opname, {self._overloadname: self._op})

    def name(self):
        """The schema's name: 'aten::add.Tensor', 'mylib::foo'."""
        namespace, _, rest = self._qualified.partition(".")
        name, _, overload = rest.partition(".")
        return f"{namespace}::{name}" + ("" if overload == "default" else f".{overload}")

    def bind(self, args, kwargs):
        """args and kwargs in schema order, defaults filled in (TypeError when they do not fit the schema)."""
        params = self._op.schema.args
        positional = [a for a in params if not a.kwarg_only]
        if len(args) > len(positional):
            raise TypeError(f"takes {len(positional)} positional arguments but {len(args)} were given")
        given = dict(zip((a.name for a in positional), args))
        for key, value in kwargs.items():
            if key in given or all(a.name != key for a in params):
                raise TypeError(f"got an unexpected or repeated argument '{key}'")
            given[key] = value
        bound = []
        for a in params:
            if a.name in given:
                bound.append(given[a.name])
            elif a.required:
                raise TypeError(f"missing required argument '{a.name}'")
            else:
                bound.append(a.default)
        return tuple(bound)

    def __call__(self, *args, **kwargs):
        return call(self._op, self.bind(args, kwargs))

    def __eq__(self, other):
        """Two OpOverloads of one registered op are equal (each attribute access makes a new one)."""
        return isinstance(other, OpOverload) and other._op is self._op

    def __hash__(self):
        return id(self._op)

    def __repr__(self):
        packet, _, overload = self._qualified.rpartition(".")
        return f"<OpOverload(op='{packet}', overload='{overload}')>"

    def __str__(self):
        return self._qualified


_OVERLOADS = weakref.WeakKeyDictionary()  # an op a library removes takes its overload with it


def overload_of(op):
    """The OpOverload a program names the registered `op` by (lantern.ops.aten.mm.default for 'mm'), made once.

    >>> from lantern.ops.registry import REGISTRY
    >>> overload_of(REGISTRY["add.out"])
    <OpOverload(op='aten.add', overload='out')>
    """
    overload = _OVERLOADS.get(op)
    if overload is None:
        qualified, _, name = op.name.partition(".")
        namespace, _, base = qualified.rpartition("::")
        overload = _OVERLOADS[op] = OpOverload(op, f"{namespace or ATEN}.{base}.{name or 'default'}")
    return overload
