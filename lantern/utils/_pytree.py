"""Pytrees (torch.utils._pytree): nested containers flattened to a list of leaves plus a TreeSpec, and back.

A node is an instance of a registered container type (tuple, list, dict, namedtuple, OrderedDict, defaultdict,
deque, lantern.Size, the lantern.return_types of max/sort/..., or anything added with `register_pytree_node`);
everything else, None and tensors included, is a leaf. Dicts flatten in insertion order.

>>> tree = {'b': (1, [2, 3]), 'a': None, 'c': {'d': 4}}
>>> leaves, spec = tree_flatten(tree)
>>> leaves
[1, 2, 3, None, 4]
>>> tree_unflatten(leaves, spec) == tree
True
>>> tree_map(lambda x: x + 1, {'x': 7, 'y': (42, 64)})
{'x': 8, 'y': (43, 65)}
>>> tree_map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]])    # later trees need only share a prefix
[[5, 7, 9], [6, 1, 2]]
>>> tree_structure((1, [2]))
TreeSpec(tuple, None, [*,
  TreeSpec(list, None, [*])])
"""
import dataclasses
import functools
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple

from ..core.size import Size
from ..ops.reduction import _ReturnType
from ..core import user_warnings

__all__ = ["NodeDef", "SUPPORTED_NODES", "register_pytree_node", "TreeSpec", "LeafSpec", "treespec_leaf",
           "treespec_tuple", "treespec_dict", "tree_is_leaf", "tree_flatten", "tree_unflatten", "tree_iter",
           "tree_leaves", "tree_structure", "tree_map", "tree_map_", "map_only", "tree_map_only", "tree_map_only_",
           "tree_all", "tree_any", "tree_all_only", "tree_any_only", "is_namedtuple", "is_namedtuple_class",
           "is_namedtuple_instance", "SequenceKey", "MappingKey", "GetAttrKey", "keystr", "key_get",
           "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "register_dataclass"]


class NodeDef(namedtuple("NodeDef", "type flatten_fn unflatten_fn flatten_with_keys_fn")):
    """How a node type comes apart: flatten_fn(node) -> (children, context); unflatten_fn(children, context)."""
    __slots__ = ()


SUPPORTED_NODES = {}


def _register(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn=None):
    if cls in SUPPORTED_NODES:
        user_warnings.warn(f"{cls} is already registered as pytree node. Overwriting the previous registration.",
                      stacklevel=3)
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None):
    """Make `cls` a pytree node. `flatten_fn(node)` returns `(children, context)`; `unflatten_fn(children, context)`
    rebuilds the node. The serialization arguments are accepted for compatibility and only checked."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    if (to_dumpable_context is None) != (from_dumpable_context is None):
        raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must be None or "
                         "registered.")
    _register(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def register_dataclass(cls, *, field_names=None, drop_field_names=None, serialized_type_name=None):
    """Make a dataclass (or a class built from keyword fields) a node whose children are its non-None fields.

    `field_names` is required for a class that is not a dataclass; fields set to None are kept in the context.
    """
    drop_field_names = drop_field_names or []
    if not dataclasses.is_dataclass(cls):
        if field_names is None:
            raise ValueError(f"field_names must be specified with a list of all fields used to initialize {cls}, as "
                             "it is not a dataclass.")
    elif field_names is None:
        field_names = [f.name for f in dataclasses.fields(cls) if f.init]
    else:
        init_fields = {f.name for f in dataclasses.fields(cls) if f.init} - set(drop_field_names)
        if init_fields != set(field_names):
            msg = "field_names does not include all dataclass fields.\n"
            if missing := init_fields - set(field_names):
                msg += (f"Missing fields in `field_names`: {missing}. If you want to include these fields in the "
                        "pytree, please add them to `field_names`, otherwise please add them to "
                        "`drop_field_names`.\n")
            if unexpected := set(field_names) - init_fields:
                msg += (f"Unexpected fields in `field_names`: {unexpected}. Please remove these fields, or add "
                        "them to `drop_field_names`.\n")
            raise ValueError(msg)

    def flatten(obj):
        values = {name: getattr(obj, name) for name in field_names}
        present = [n for n, v in values.items() if v is not None]
        return [values[n] for n in present], [present, [n for n, v in values.items() if v is None]]

    def unflatten(values, context):
        present, absent = context
        return cls(**dict(zip(present, values)), **dict.fromkeys(absent))

    def flatten_with_keys(obj):
        values, (present, _) = flatten(obj)
        return [(GetAttrKey(n), v) for n, v in zip(present, values)], present

    _register(cls, flatten, unflatten, flatten_with_keys)


# Key paths: how to reach a leaf from the root, one entry per level.
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    key: object

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp):
    """A key path as a string: `keystr((MappingKey('a'), SequenceKey(0))) == "['a'][0]"`."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    """The subtree of `obj` at key path `kp`."""
    for k in kp:
        obj = k.get(obj)
    return obj


def is_namedtuple_class(cls):
    return (isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)
            and all(type(f) is str for f in cls._fields) and callable(getattr(cls, "_make", None))
            and callable(getattr(cls, "_asdict", None)))


def is_namedtuple(obj):
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj):
    return is_namedtuple_class(type(obj))


def _with_keys(flatten, keys_of):
    """A flatten_with_keys_fn from a flatten_fn and a function (node, context) -> key entries."""
    def flatten_with_keys(node):
        children, context = flatten(node)
        return list(zip(keys_of(node, context), children)), context
    return flatten_with_keys


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _defaultdict_flatten(d):
    values, keys = _dict_flatten(d)
    return values, [d.default_factory, keys]


def _seq_keys(node, context):
    return [SequenceKey(i) for i in range(len(node))]


def _map_keys(node, context):
    return [MappingKey(k) for k in node]


# Every namedtuple class is a node of the one node type `namedtuple`, with the class as the context.
_BUILTIN_NODES = (
    (tuple, lambda t: (list(t), None), lambda v, c: tuple(v), _seq_keys),
    (list, lambda t: (t, None), lambda v, c: list(v), _seq_keys),
    (dict, _dict_flatten, lambda v, c: dict(zip(c, v)), _map_keys),
    (namedtuple, lambda t: (list(t), type(t)), lambda v, c: c(*v),
     lambda node, c: [GetAttrKey(f) for f in c._fields]),
    (OrderedDict, _dict_flatten, lambda v, c: OrderedDict(zip(c, v)), _map_keys),
    (defaultdict, _defaultdict_flatten, lambda v, c: defaultdict(c[0], zip(c[1], v)), _map_keys),
    (deque, lambda t: (list(t), t.maxlen), lambda v, c: deque(v, maxlen=c), _seq_keys),
)
for _cls, _flatten, _unflatten, _keys in _BUILTIN_NODES:
    _register(_cls, _flatten, _unflatten, _with_keys(_flatten, _keys))
_register(Size, lambda s: (list(s), None), lambda v, c: Size(v), _with_keys(lambda s: (list(s), None), _seq_keys))

BUILTIN_TYPES = frozenset(cls for cls, *_ in _BUILTIN_NODES)
STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})


def _get_node_type(tree):
    kind = type(tree)
    if issubclass(kind, _ReturnType):
        # lantern.return_types (max, sort, ...) are nodes of their own type, as torch's structseqs are.
        if kind not in SUPPORTED_NODES:
            _register(kind, _return_type_flatten, lambda v, c, kind=kind: kind(*v),
                      _with_keys(_return_type_flatten, _seq_keys))
        return kind
    return namedtuple if is_namedtuple_class(kind) else kind


def _return_type_flatten(r):
    return list(r), None


def tree_is_leaf(tree, is_leaf=None):
    """True unless `tree` is a registered node (or `is_leaf(tree)` says it is a leaf)."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _get_node_type(tree) not in SUPPORTED_NODES


@dataclasses.dataclass(init=False, frozen=True, eq=False, repr=False)
class TreeSpec:
    """The shape of a pytree: the root's node type, its context (dict keys, namedtuple class...) and a spec per
    child. Leaves are `LeafSpec` (shown as `*`)."""

    type: object
    _context: object
    _children: list
    num_nodes: int
    num_leaves: int
    num_children: int

    def __init__(self, type, context, children_specs):
        if type is None and (context is not None or children_specs):
            raise AssertionError("leaf node should not have a context" if context is not None
                                 else "leaf node should not have children")
        setattr_ = functools.partial(object.__setattr__, self)
        setattr_("type", type)
        setattr_("_context", context)
        setattr_("_children", children_specs)
        if type is None:
            setattr_("num_nodes", 1)
            setattr_("num_leaves", 1)
        else:
            setattr_("num_nodes", 1 + sum(c.num_nodes for c in children_specs))
            setattr_("num_leaves", sum(c.num_leaves for c in children_specs))
        setattr_("num_children", len(children_specs))

    def __repr__(self, indent=0):
        head = f"TreeSpec({self.type.__name__}, {self._context}, ["
        indent += 2
        children = ",".join(("\n" + " " * indent if i else "") + c.__repr__(indent)
                            for i, c in enumerate(self._children))
        return f"{head}{children}])"

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self):
        context = self._context
        if self.type is defaultdict:
            context = (context[0], tuple(context[1]))
        elif self.type in (dict, OrderedDict):
            context = tuple(context)
        elif self.type is not None and self.type not in BUILTIN_TYPES:
            context = None  # a user type's context may be unhashable
        return hash((self.type, context, tuple(self._children)))

    @property
    def context(self):
        return self._context

    @property
    def children_specs(self):
        return self._children

    def is_leaf(self):
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self):
        return self._children.copy()

    def child(self, index):
        return self._children[index]

    def flatten_up_to(self, tree):
        """The subtrees of `tree` where this spec has leaves; `tree` must have this spec as a prefix."""
        subtrees = []
        self._flatten_up_to(tree, subtrees)
        return subtrees

    def _flatten_up_to(self, node, out):
        if self.is_leaf():
            out.append(node)
            return
        node_type = _get_node_type(node)
        if self.type not in BUILTIN_TYPES:
            if node_type != self.type:
                raise ValueError(f"Type mismatch; expected {self.type!r}, but got {node_type!r}.")
            children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
            if len(children) != self.num_children:
                raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(children)}.")
            if context != self._context:
                raise ValueError(f"Node context mismatch for custom node type {self.type!r}.")
        else:
            both_dicts = self.type in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES
            if not both_dicts and node_type != self.type:
                raise ValueError(f"Node type mismatch; expected {self.type!r}, but got {node_type!r}.")
            if len(node) != self.num_children:
                raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(node)}.")
            if both_dicts:  # any two kinds of dict match if their keys do; the order comes from the spec
                keys = self._context[1] if self.type is defaultdict else self._context
                missing, extra = set(keys) - set(node), set(node) - set(keys)
                if missing or extra:
                    message = (f"; missing key(s): {missing}" if missing else "") + (
                        f"; extra key(s): {extra}" if extra else "")
                    raise ValueError(f"Node keys mismatch{message}.")
                children = [node[k] for k in keys]
            else:
                children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
                if node_type is not deque and context != self._context:  # a deque's maxlen may differ
                    raise ValueError(f"Node context mismatch for node type {self.type!r}; expected "
                                     f"{self._context!r}, but got {context!r}.")
        for subtree, spec in zip(children, self._children):
            spec._flatten_up_to(subtree, out)

    def unflatten(self, leaves):
        """Rebuild a pytree of this shape from `leaves`."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to "
                             f"a pytree that holds {self.num_leaves} items ({self}).")
        return self._unflatten(iter(leaves))

    def _unflatten(self, leaves):
        if self.is_leaf():
            return next(leaves)
        children = [c._unflatten(leaves) for c in self._children]
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)


class LeafSpec(TreeSpec):
    """The spec of a leaf. Deprecated in torch (use `spec.is_leaf()`); `treespec_leaf()` gives the shared one."""

    def __init__(self):
        user_warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use `isinstance(treespec, TreeSpec) and "
                      "treespec.is_leaf()` instead.", FutureWarning, stacklevel=2)
        super().__init__(None, None, [])

    def __repr__(self, indent=0):
        return "*"


with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    _LEAF_SPEC = LeafSpec()


def treespec_leaf():
    return _LEAF_SPEC


def treespec_tuple(iterable=(), /):
    children = list(iterable)
    if any(not isinstance(c, TreeSpec) for c in children):
        raise ValueError(f"Expected a tuple of TreeSpec values, got: {children!r}.")
    return TreeSpec(tuple, None, children)


def treespec_dict(mapping=(), /, **kwargs):
    d = dict(mapping, **kwargs)
    if any(not isinstance(c, TreeSpec) for c in d.values()):
        raise ValueError(f"Expected a dictionary of TreeSpec values, got: {d!r}.")
    return TreeSpec(dict, list(d.keys()), list(d.values()))


def tree_flatten(tree, is_leaf=None):
    """`(leaves, spec)`: the leaves depth-first, left to right, and the structure to rebuild the tree."""
    leaves = []
    spec = _flatten_into(tree, leaves, is_leaf)
    return leaves, spec


def _flatten_into(node, leaves, is_leaf):
    """node's spec, its leaves appended to `leaves`. A module function, not a closure that calls itself: such a
    closure is a reference cycle, which would keep every leaf (whole tensors) alive until the garbage collector runs,
    and timeit, for one, turns the collector off."""
    if tree_is_leaf(node, is_leaf):
        leaves.append(node)
        return _LEAF_SPEC
    node_type = _get_node_type(node)
    children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
    return TreeSpec(node_type, context, [_flatten_into(c, leaves, is_leaf) for c in children])


def tree_unflatten(leaves, treespec):
    """The inverse of tree_flatten (the two arguments may also come in the other order)."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of type "
                            f"{type(treespec)}.")
        leaves, treespec = treespec, leaves
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    """The leaves, lazily."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    children, _ = SUPPORTED_NODES[_get_node_type(tree)].flatten_fn(tree)
    for child in children:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree, is_leaf=None):
    return list(tree_iter(tree, is_leaf))


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """A tree of `tree`'s shape holding `func(leaf, *matching parts of rests)` at each leaf."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(map(func, *columns))


def tree_map_(func, tree, *rests, is_leaf=None):
    """Call `func` on every leaf for its side effect; returns `tree` itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    deque(map(func, *columns), maxlen=0)
    return tree


def map_only(type_or_types_or_pred, /):
    """A decorator: the function applies to leaves of the given type(s) (or passing the predicate) only;
    other leaves pass through unchanged."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        def pred(x):
            return isinstance(x, type_or_types_or_pred)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")

    def wrapper(func):
        @functools.wraps(func)
        def wrapped(x):
            return func(x) if pred(x) else x
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None):
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, /, pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, /, pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def _key_paths(path, tree, is_leaf):
    if is_leaf and is_leaf(tree):
        yield path, tree
        return
    node_type = _get_node_type(tree)
    node = SUPPORTED_NODES.get(node_type)
    if node is None:
        yield path, tree
        return
    if not node.flatten_with_keys_fn:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node_type}. Please pass a "
                         "flatten_with_keys_fn argument to register_pytree_node.")
    for key, child in node.flatten_with_keys_fn(tree)[0]:
        yield from _key_paths((*path, key), child, is_leaf)


def tree_flatten_with_path(tree, is_leaf=None):
    """Like tree_flatten, with each leaf paired with its key path."""
    return list(_key_paths((), tree, is_leaf)), tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None):
    return list(_key_paths((), tree, is_leaf))


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    """Like tree_map, with `func(key_path, leaf, *rest_leaves)`."""
    path_leaves, spec = tree_flatten_with_path(tree, is_leaf)
    columns = list(zip(*path_leaves)) + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(*columns))
