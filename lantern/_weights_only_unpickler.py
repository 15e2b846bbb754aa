"""The unpickler behind `lantern.load(weights_only=True)`: it reads a pickle one opcode at a time and builds only data.

Python's own unpickler imports any global a file names and applies BUILD (attribute setting) to any object on its
stack, including the shared objects an allow-list hands out. This one keeps PyTorch's weights-only rules
(torch/_weights_only_unpickler.py) and adds "created in this load" to them:
  - GLOBAL / STACK_GLOBAL: only names `resolve_global` allows (the caller's allow-list); modules sys, os, posix and
    nt are refused whatever the allow-list says.
  - REDUCE / NEWOBJ: only callables that came from the allow-list in this load; nothing else on the stack is called.
  - BUILD: only on an object this load created (by NEWOBJ or by calling an allowed class), never on a global:
    tensors through their own `__setstate__` (user attributes only), OrderedDict through its attribute dict
    (`state_dict()._metadata`), classes the user allowed through `__setstate__` or their attribute dict.
  - APPEND(S) / SETITEM(S) / ADDITEMS: only on a list / dict, OrderedDict, Counter / set that this load created.
  - persistent ids: only ('storage', ...) tuples, handed to `persistent_load`.
  - INST, OBJ, EXT*, PERSID and out-of-band buffers are refused: they exist to run or look up code.
Every refusal is a pickle.UnpicklingError; a malformed stream (stack underflow, unknown memo key, truncated data) is
one too, and an empty stream is EOFError, as with pickle.

>>> import io, pickle
>>> def no_globals(module, name):
...     raise pickle.UnpicklingError(f"GLOBAL {module}.{name} is not allowed")
>>> Unpickler(io.BytesIO(pickle.dumps({"a": [1, 2.5, b"x"]}, protocol=4)), no_globals, None).load()
{'a': [1, 2.5, b'x']}
>>> Unpickler(io.BytesIO(b"cos\\nsystem\\n(S'echo hi'\\ntR."), no_globals, None).load()
Traceback (most recent call last):
  ...
_pickle.UnpicklingError: Trying to load unsupported GLOBAL os.system whose module os is blocked.
"""
import _compat_pickle
import collections
import pickle
import struct

from .core.tensor_impl import TensorImpl
from .nn.parameter import Parameter

__all__ = ["Unpickler", "BLOCKED_MODULES"]

BLOCKED_MODULES = ("sys", "os", "posix", "nt")

_CHUNK = 1 << 20  # read long strings in pieces, so a length field cannot make us allocate before the data is there

# The classes of the default allow-list whose instances need no BUILD (torch pickles them whole by REDUCE).
_PLAIN_TYPES = (collections.Counter, set, frozenset, bytearray, complex, tuple, list, dict)


class Unpickler:
    """Unpickle `file` by the rules above.

    resolve_global(module, name) -> the allowed object, or raises UnpicklingError;
    persistent_load(pid) -> the object for a ('storage', ...) persistent id (None: persistent ids are refused)."""

    def __init__(self, file, resolve_global, persistent_load, *, encoding="utf-8"):
        self._file = file
        self._resolve_global = resolve_global
        self._persistent_load = persistent_load
        self._encoding = encoding
        self._callables = {}   # id -> object: what the allow-list handed out in this load (may be called)
        self._created = {}     # id -> object: what this load made (may be filled in); kept alive so ids stay unique

    # ---- reading ------------------------------------------------------------------------------------------------
    def _read(self, n):
        if n <= _CHUNK:
            data = self._file.read(n)
        else:
            parts, left = [], n
            while left:
                part = self._file.read(min(left, _CHUNK))
                if not part:
                    break
                parts.append(part)
                left -= len(part)
            data = b"".join(parts)
        if len(data) != n:
            raise pickle.UnpicklingError("pickle data was truncated")
        return data

    def _readline(self):
        line = self._file.readline()
        if not line.endswith(b"\n"):
            raise pickle.UnpicklingError("pickle data was truncated")
        return line[:-1]

    def _unpack(self, fmt):
        return struct.unpack(fmt, self._read(struct.calcsize(fmt)))[0]

    # ---- the stack ----------------------------------------------------------------------------------------------
    def _pop(self):
        if not self._stack:
            raise pickle.UnpicklingError("unpickling stack underflow")
        return self._stack.pop()

    def _top(self):
        if not self._stack:
            raise pickle.UnpicklingError("unpickling stack underflow")
        return self._stack[-1]

    def _pop_mark(self):
        if not self._metastack:
            raise pickle.UnpicklingError("could not find MARK")
        items = self._stack
        self._stack = self._metastack.pop()
        return items

    def _made(self, obj):
        self._created[id(obj)] = obj
        return obj

    def _owned(self, obj, kinds, opcode):
        """`obj` if it is of one of the exact types `kinds` and this load created it, else UnpicklingError."""
        if type(obj) not in kinds:
            names = ", ".join(k.__name__ for k in kinds)
            raise pickle.UnpicklingError(f"Can only {opcode} for {names}, but got {type(obj)}")
        if self._created.get(id(obj)) is not obj:
            raise pickle.UnpicklingError(f"{opcode} on an object this file did not create is not allowed")
        return obj

    # ---- the loop -----------------------------------------------------------------------------------------------
    def load(self):
        self._stack, self._metastack, self._memo = [], [], {}
        while True:
            key = self._file.read(1)
            if not key:
                raise EOFError("Ran out of input")
            op = key[0]
            if op == pickle.STOP[0]:
                return self._pop()
            handler = _DISPATCH.get(op)
            if handler is None:
                raise pickle.UnpicklingError(f"Unsupported operand {op}")
            handler(self)


# ---- opcode handlers: one small function each, registered by opcode ------------------------------------------------

_DISPATCH = {}


def _handles(*opcodes):
    def register(fn):
        for code in opcodes:
            _DISPATCH[code[0]] = fn
        return fn
    return register


@_handles(pickle.PROTO)
def _proto(u):
    if u._read(1)[0] > pickle.HIGHEST_PROTOCOL:
        raise pickle.UnpicklingError("unsupported pickle protocol")


@_handles(pickle.FRAME)
def _frame(u):
    u._read(8)  # frames only group opcodes for buffered readers


# -- globals and calls

def _push_global(u, module, name):
    if (module, name) in _compat_pickle.NAME_MAPPING:  # protocol 2 spells Python 3 names the Python 2 way
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    if module in BLOCKED_MODULES:
        raise pickle.UnpicklingError(f"Trying to load unsupported GLOBAL {module}.{name} whose module {module} is "
                                     "blocked.")
    obj = u._resolve_global(module, name)
    if callable(obj):
        u._callables[id(obj)] = obj
    u._stack.append(obj)


@_handles(pickle.GLOBAL)
def _global(u):
    module = u._readline().decode("utf-8")
    name = u._readline().decode("utf-8")
    _push_global(u, module, name)


@_handles(pickle.STACK_GLOBAL)
def _stack_global(u):
    name, module = u._pop(), u._pop()
    if type(name) is not str or type(module) is not str:
        raise pickle.UnpicklingError("STACK_GLOBAL requires str")
    _push_global(u, module, name)


def _allowed_callable(u, fn, opcode):
    if u._callables.get(id(fn)) is not fn:
        raise pickle.UnpicklingError(f"Trying to call {opcode} for unrecognized function {fn!r}: only the allowed "
                                     "globals of this file may be called")
    return fn


def _fresh(u, fn, result):
    """Calling an allowed class makes a new instance (which BUILD may then fill in); a function's result is not
    known to be new, so BUILD stays refused on it unless it is a tensor a rebuild function made."""
    if isinstance(fn, type) or isinstance(result, TensorImpl):
        u._made(result)
    return result


@_handles(pickle.REDUCE)
def _reduce(u):
    args = u._pop()
    fn = _allowed_callable(u, u._pop(), "REDUCE")
    if type(args) is not tuple:
        raise pickle.UnpicklingError(f"REDUCE arguments must be a tuple, got {type(args)}")
    u._stack.append(_fresh(u, fn, fn(*args)))


def _new_object(u, cls, args, kwargs):
    _allowed_callable(u, cls, "NEWOBJ")
    if not isinstance(cls, type):
        raise pickle.UnpicklingError(f"NEWOBJ needs a class, got {cls!r}")
    if type(args) is not tuple or type(kwargs) is not dict:
        raise pickle.UnpicklingError("NEWOBJ arguments must be a tuple (and a dict)")
    obj = Parameter(*args, **kwargs) if cls is Parameter else cls.__new__(cls, *args, **kwargs)
    u._stack.append(u._made(obj))


@_handles(pickle.NEWOBJ)
def _newobj(u):
    args = u._pop()
    _new_object(u, u._pop(), args, {})


@_handles(pickle.NEWOBJ_EX)
def _newobj_ex(u):
    kwargs, args = u._pop(), u._pop()
    _new_object(u, u._pop(), args, kwargs)


@_handles(pickle.BUILD)
def _build(u):
    state = u._pop()
    inst = u._top()
    if u._created.get(id(inst)) is not inst:
        raise pickle.UnpicklingError(f"BUILD on an object this file did not create ({type(inst)}) is not allowed")
    if isinstance(inst, TensorImpl):
        inst.__setstate__(state)  # Tensor/Parameter: user attributes only, never the metadata
    elif type(inst) is collections.OrderedDict:
        _set_attributes(inst, state, None)
    elif isinstance(inst, _PLAIN_TYPES):
        raise pickle.UnpicklingError(f"Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                     f"`add_safe_globals`, but got {type(inst)}")
    elif getattr(type(inst), "__setstate__", None) is not None:
        inst.__setstate__(state)
    else:
        slots = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slots = state
        _set_attributes(inst, state, slots)


def _set_attributes(inst, state, slots):
    for values in (state, slots):
        if values is None:
            continue
        if type(values) not in (dict, collections.OrderedDict) or not all(type(k) is str for k in values):
            raise pickle.UnpicklingError(f"BUILD state must be a dict with str keys, got {type(values)}")
        if any(k.startswith("__") for k in values):
            raise pickle.UnpicklingError(f"BUILD may not set special attributes ({sorted(values)})")
    if state:
        inst.__dict__.update(state)
    for k, v in (slots or {}).items():
        setattr(inst, k, v)


@_handles(pickle.BINPERSID)
def _binpersid(u):
    pid = u._pop()
    if u._persistent_load is None:
        raise pickle.UnpicklingError("unsupported persistent id encountered")
    if type(pid) is not tuple or not pid or _ascii(pid[0]) != "storage":
        raise pickle.UnpicklingError(f"Only persistent_load of storage is allowed, but got {pid!r:.80}")
    u._stack.append(u._persistent_load(pid))


def _ascii(s):
    if isinstance(s, bytes):
        try:
            return s.decode("ascii")
        except UnicodeDecodeError:
            return None
    return s


# -- containers

@_handles(pickle.MARK)
def _mark(u):
    u._metastack.append(u._stack)
    u._stack = []


@_handles(pickle.EMPTY_LIST)
def _empty_list(u):
    u._stack.append(u._made([]))


@_handles(pickle.EMPTY_DICT)
def _empty_dict(u):
    u._stack.append(u._made({}))


@_handles(pickle.EMPTY_SET)
def _empty_set(u):
    u._stack.append(u._made(set()))


@_handles(pickle.EMPTY_TUPLE)
def _empty_tuple(u):
    u._stack.append(())


@_handles(pickle.LIST)
def _list(u):
    items = u._pop_mark()  # first: it replaces u._stack
    u._stack.append(u._made(items))


@_handles(pickle.DICT)
def _dict(u):
    items = u._pop_mark()
    if len(items) % 2:
        raise pickle.UnpicklingError("odd number of items for DICT")
    u._stack.append(u._made(dict(zip(items[::2], items[1::2]))))


@_handles(pickle.TUPLE)
def _tuple(u):
    items = u._pop_mark()
    u._stack.append(tuple(items))


def _make_tuple_n(n):
    def handler(u):
        if len(u._stack) < n:
            raise pickle.UnpicklingError("unpickling stack underflow")
        items = tuple(u._stack[-n:])
        del u._stack[-n:]
        u._stack.append(items)
    return handler


for _n, _code in enumerate((pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3), start=1):
    _DISPATCH[_code[0]] = _make_tuple_n(_n)


@_handles(pickle.FROZENSET)
def _frozenset(u):
    items = u._pop_mark()
    u._stack.append(frozenset(items))


@_handles(pickle.APPEND)
def _append(u):
    item = u._pop()
    u._owned(u._top(), (list,), "append").append(item)


@_handles(pickle.APPENDS)
def _appends(u):
    items = u._pop_mark()
    u._owned(u._top(), (list,), "extend").extend(items)


@_handles(pickle.SETITEM)
def _setitem(u):
    value, key = u._pop(), u._pop()
    u._owned(u._top(), (dict, collections.OrderedDict, collections.Counter), "SETITEM")[key] = value


@_handles(pickle.SETITEMS)
def _setitems(u):
    items = u._pop_mark()
    if len(items) % 2:
        raise pickle.UnpicklingError("odd number of items for SETITEMS")
    target = u._owned(u._top(), (dict, collections.OrderedDict, collections.Counter), "SETITEMS")
    for i in range(0, len(items), 2):
        target[items[i]] = items[i + 1]


@_handles(pickle.ADDITEMS)
def _additems(u):
    items = u._pop_mark()
    u._owned(u._top(), (set,), "ADDITEMS").update(items)


@_handles(pickle.POP)
def _op_pop(u):
    if u._stack:
        u._stack.pop()
    else:
        u._pop_mark()


@_handles(pickle.POP_MARK)
def _op_pop_mark(u):
    u._pop_mark()


@_handles(pickle.DUP)
def _dup(u):
    u._stack.append(u._top())


# -- the memo

def _get(u, index):
    if index not in u._memo:
        raise pickle.UnpicklingError(f"Memo value not found at index {index}")
    u._stack.append(u._memo[index])


@_handles(pickle.BINGET)
def _binget(u):
    _get(u, u._read(1)[0])


@_handles(pickle.LONG_BINGET)
def _long_binget(u):
    _get(u, u._unpack("<I"))


@_handles(pickle.BINPUT)
def _binput(u):
    u._memo[u._read(1)[0]] = u._top()


@_handles(pickle.LONG_BINPUT)
def _long_binput(u):
    u._memo[u._unpack("<I")] = u._top()


@_handles(pickle.MEMOIZE)
def _memoize(u):
    u._memo[len(u._memo)] = u._top()


# -- scalars and strings

def _push(opcode, read):
    _DISPATCH[opcode[0]] = lambda u: u._stack.append(read(u))


_push(pickle.NONE, lambda u: None)
_push(pickle.NEWTRUE, lambda u: True)
_push(pickle.NEWFALSE, lambda u: False)
_push(pickle.BININT, lambda u: u._unpack("<i"))
_push(pickle.BININT1, lambda u: u._read(1)[0])
_push(pickle.BININT2, lambda u: u._unpack("<H"))
_push(pickle.BINFLOAT, lambda u: u._unpack(">d"))
_push(pickle.LONG1, lambda u: pickle.decode_long(u._read(u._read(1)[0])))
_push(pickle.LONG4, lambda u: pickle.decode_long(u._read(_length(u._unpack("<i")))))
_push(pickle.SHORT_BINUNICODE, lambda u: _text(u._read(u._read(1)[0])))
_push(pickle.BINUNICODE, lambda u: _text(u._read(u._unpack("<I"))))
_push(pickle.BINUNICODE8, lambda u: _text(u._read(u._unpack("<Q"))))
_push(pickle.SHORT_BINBYTES, lambda u: u._read(u._read(1)[0]))
_push(pickle.BINBYTES, lambda u: u._read(u._unpack("<I")))
_push(pickle.BINBYTES8, lambda u: u._read(u._unpack("<Q")))
_push(pickle.BYTEARRAY8, lambda u: u._made(bytearray(u._read(u._unpack("<Q")))))
_push(pickle.SHORT_BINSTRING, lambda u: _py2_string(u, u._read(u._read(1)[0])))
_push(pickle.BINSTRING, lambda u: _py2_string(u, u._read(_length(u._unpack("<i")))))


def _length(n):
    if n < 0:
        raise pickle.UnpicklingError("negative byte count in pickle data")
    return n


def _text(data):
    return str(data, "utf-8", "surrogatepass")


def _py2_string(u, data):
    """A Python 2 str: bytes with encoding='bytes', else decoded (torch.load passes utf-8, legacy users latin1)."""
    return data if u._encoding == "bytes" else data.decode(u._encoding, "strict")
