"""Every structured op's meta returns `shape, dtype` and every view op's `shape, strides, storage_offset[, dtype]`
(lantern/ops/registry.py): read from each registered meta's source, following the calls it returns (another meta,
a factory's inner meta)."""
import ast
import inspect
import textwrap

import pytest

import lantern
from lantern.ops.op_kinds import OpKind
from lantern.ops.registry import REGISTRY

OUTPUT_META = "shape, dtype"
VIEW_META = "shape, strides, storage_offset[, dtype]"
RESULT_TYPES = {OpKind.STRUCTURED: OUTPUT_META, OpKind.VIEW: VIEW_META}
_LENGTHS = {OUTPUT_META: (2,), VIEW_META: (3, 4)}


def _is_result(value, result_type):
    """Is the returned expression a tuple display of the kind's form (`return shape, dtype`)?"""
    return isinstance(value, ast.Tuple) and len(value.elts) in _LENGTHS[result_type]


def _definition(fn):
    """The ast of fn's def."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef))


def _returns(node):
    """The return statements of a def, leaving out those of defs nested in it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Return):
            yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield from _returns(child)


def _resolve(name, fn):
    """What a name in fn's body refers to: one of its closure's cells, else a global of its module."""
    names = inspect.getclosurevars(fn)
    for scope in (names.nonlocals, names.globals):
        if name in scope:
            return scope[name]
    return None


def _problems(fn, result_type, node=None, depth=0):
    """The returns of fn (or of `node`, a def inside fn) that give something other than result_type(...)."""
    node = node if node is not None else _definition(fn)
    found = []
    for ret in _returns(node):
        value = ret.value
        if _is_result(value, result_type):
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            delegate = _resolve(value.func.id, fn)
            if inspect.isfunction(delegate) and depth < 4:  # another meta, or a helper every meta shares
                found += _problems(delegate, result_type, depth=depth + 1)
                continue
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Call) and \
                isinstance(value.func.func, ast.Name):  # factory(...)(...): the meta the factory makes
            factory = _resolve(value.func.func.id, fn)
            if inspect.isfunction(factory) and depth < 4:
                inner = [d for d in ast.walk(_definition(factory)) if isinstance(d, ast.FunctionDef)][1:]
                if inner:
                    for d in inner:
                        found += _problems(factory, result_type, d, depth + 1)
                    continue
        found.append(f"{fn.__module__}.{fn.__qualname__}: return {ast.unparse(value)}")
    return found


def _metas():
    """{meta function: (its result type, an op it serves)} of every structured and view op, each function once."""
    metas = {}
    for op in REGISTRY.values():
        if op.kind in RESULT_TYPES and op.meta is not None:
            metas.setdefault(op.meta.__code__, (op.meta, RESULT_TYPES[op.kind], op.name))
    return list(metas.values())


METAS = _metas()


@pytest.mark.parametrize("meta, result_type, op_name", METAS, ids=[name for _, _, name in METAS])
def test_meta_returns_its_form(meta, result_type, op_name):
    assert not _problems(meta, result_type), f"{op_name}'s meta returns something other than `{result_type}`"


def test_the_check_reads_result_forms_and_delegation():
    def pair(self):
        return self._size, self.dtype

    def triple(self):
        return self._size, self.dtype, 0

    def view(self):
        return self._size, self._stride, 0

    def delegating(self):
        return pair(self)

    assert not _problems(pair, OUTPUT_META) and _problems(triple, OUTPUT_META) and _problems(view, OUTPUT_META)
    assert not _problems(view, VIEW_META) and _problems(pair, VIEW_META)
    assert not _problems(delegating, OUTPUT_META)


def test_results():
    x = lantern.ones(2, 3)
    assert lantern.ops.registry.get("t").meta(x) == ((3, 2), (1, 3), 0)
    assert lantern.ops.registry.get("add").meta(x, x, 1) == ((2, 3), lantern.float32)
