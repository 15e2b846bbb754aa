"""jit.ir: the SSA graph (Graph, Block, Node, Value) shared by trace, script, passes and the interpreter.

A Graph owns one top Block; a Block is a list of Nodes between a `prim::Param` node (whose outputs are the
block's inputs) and a `prim::Return` node (whose inputs are the block's outputs). Control-flow nodes own
sub-blocks. `str(graph)` prints as TorchScript does and `parse_ir` reads that text back (both live in
jit.ir_text; parse_ir is re-exported here).

>>> from lantern.jit.ir import Graph, parse_ir
>>> g = Graph()
>>> x = g.addInput("x")
>>> two = g.insertConstant(2)
>>> y = g.insertNode(g.create("aten::mul", [x, two])).output()
>>> _ = g.registerOutput(y)
>>> print(g)
graph(%x : Tensor):
  %1 : int = prim::Constant[value=2]()
  %2 : Tensor = aten::mul(%x, %1)
  return (%2)
<BLANKLINE>
>>> str(parse_ir(str(g))) == str(g)
True
"""
import contextlib

from .._tensor import Tensor
from . import types as T

__all__ = ["Graph", "Block", "Node", "Value", "Use", "parse_ir"]

# Kinds whose nodes must never be removed even when their outputs are unused.
_SIDE_EFFECT_KINDS = frozenset({
    "prim::Print", "prim::RaiseException", "prim::SetAttr", "prim::CallMethod", "prim::CallFunction",
    "aten::warn", "prim::AddStatValue", "prim::TimePoint", "prim::Enter", "prim::Exit", "aten::backward",
    "aten::append", "aten::_set_item", "aten::insert", "aten::pop", "aten::clear", "aten::extend",
    "aten::remove", "aten::__setitem__", "aten::manual_seed", "prim::rpc_async",
})


_INF = float("inf")
_TOPO_STEP = 1 << 20


class Use:
    """One use of a Value: input number `offset` of node `user`."""

    __slots__ = ("user", "offset")

    def __init__(self, user, offset):
        self.user, self.offset = user, offset

    def __eq__(self, other):
        return isinstance(other, Use) and self.user is other.user and self.offset == other.offset

    def __hash__(self):
        return hash((id(self.user), self.offset))

    def __repr__(self):
        return f"Use(user={self.user.kind()}, offset={self.offset})"


class Value:
    """An SSA value: produced by exactly one node (a block's inputs come from its prim::Param node)."""

    __slots__ = ("_node", "_offset", "_type", "_unique", "_debug_name", "_uses", "__weakref__")

    def __init__(self, node, offset, unique):
        self._node, self._offset, self._unique = node, offset, unique
        self._type = T.TensorType.get()
        self._debug_name = None
        self._uses = []

    def node(self):
        return self._node

    def offset(self):
        return self._offset

    def unique(self):
        return self._unique

    def owningGraph(self):
        return self._node._graph

    def type(self):
        return self._type

    def setType(self, t):
        if not isinstance(t, T.Type):
            raise TypeError(f"setType expects a jit Type, got {type(t).__name__}")
        self._type = t
        return self

    def hasDebugName(self):
        return self._debug_name is not None

    def debugName(self):
        return self._debug_name if self._debug_name is not None else str(self._unique)

    def debugNameBase(self):
        name = self.debugName()
        base, dot, suffix = name.rpartition(".")
        return base if dot and suffix.isdigit() else name

    def setDebugName(self, name):
        """Name the value (printed `%name`); a value already holding the name is renamed to `name.N`."""
        names = self._node._graph._names
        if self._debug_name is not None and names.get(self._debug_name) is self:
            del names[self._debug_name]
        if not name:
            self._debug_name = None
            return self
        if name.isdigit():
            raise RuntimeError(f"Invalid name: '{name}'")
        old = names.get(name)
        if old is not None and old is not self:
            # torch renames the previous owner to base.N, N past every suffix handed out for that base
            base, suffix = name, 1
            head, dot, tail = name.rpartition(".")
            if dot and tail.isdigit():
                base, suffix = head, int(tail)
            suffixes = self._node._graph._name_suffix
            suffix = max(suffix, suffixes.get(base, 0) + 1)
            while f"{base}.{suffix}" in names:
                suffix += 1
            suffixes[base] = suffix + 1  # torch records one past the suffix it used
            old.setDebugName(f"{base}.{suffix}")
        names[name] = self
        self._debug_name = name
        return self

    def uses(self):
        return list(self._uses)

    def hasUses(self):
        return bool(self._uses)

    def replaceAllUsesWith(self, v):
        """Make every user of this value read `v` instead."""
        if v is self:
            return
        for use in self._uses:
            use.user._inputs[use.offset] = v
            v._uses.append(use)
        self._uses = []

    def replaceAllUsesAfterNodeWith(self, node, v):
        """Replace only the uses by nodes after `node` (in program order, nested blocks included)."""
        keep = []
        for use in self._uses:
            if node.isBefore(use.user):
                use.user._inputs[use.offset] = v
                v._uses.append(use)
            else:
                keep.append(use)
        self._uses = keep

    def replaceAllUsesDominatedByNodeWith(self, node, v):
        self.replaceAllUsesAfterNodeWith(node, v)

    def setTypeAs(self, other):
        return self.setType(other.type())

    def isCompleteTensor(self):
        t = self._type
        return isinstance(t, T.TensorType) and t.dtype is not None and t.sizes is not None and \
            None not in t.sizes and t.strides is not None and t.device is not None

    def requires_grad(self):
        t = self._type
        return bool(isinstance(t, T.TensorType) and t.requires_grad)

    def copyMetadata(self, other):
        self.setType(other.type())
        if other.hasDebugName():
            self.setDebugName(other.debugName())
        return self

    def toIValue(self):
        """The constant's Python value if this value comes from prim::Constant, else None."""
        if self._node._kind == "prim::Constant":
            return self._node.attrs.get("value")
        return None

    def __repr__(self):
        return f"%{self.debugName()} : {self._type}"


def _attr_setter(name, convert):
    def setter(self, attr, value):
        self.attrs[attr] = convert(value)
        return self
    setter.__name__ = name
    return setter


def _attr_getter(name):
    def getter(self, attr):
        try:
            return self.attrs[attr]
        except KeyError:
            raise RuntimeError(f"{self._kind} has no attribute '{attr}'") from None
    getter.__name__ = name
    return getter


class Node:
    """An operation: a kind ('aten::add', 'prim::If'), inputs, outputs, attributes and sub-blocks."""

    __slots__ = ("_kind", "_graph", "_inputs", "_outputs", "_blocks", "attrs", "_block", "_prev", "_next",
                 "_topo", "_source_range", "_scope", "__weakref__")

    def __init__(self, graph, kind):
        self._kind, self._graph = kind, graph
        self._inputs, self._outputs, self._blocks = [], [], []
        self.attrs = {}
        self._block = self._prev = self._next = None
        self._topo = 0
        self._source_range = None
        self._scope = ""

    # -- identity -------------------------------------------------------------------------------------
    def kind(self):
        return self._kind

    def owningGraph(self):
        return self._graph

    def owningBlock(self):
        return self._block

    def sourceRange(self):
        return self._source_range

    def setSourceRange(self, sr):
        self._source_range = sr
        return self

    def scopeName(self):
        return self._scope

    # -- inputs ---------------------------------------------------------------------------------------
    def inputs(self):
        return list(self._inputs)

    def input(self, i=0):
        return self._inputs[i]

    def inputsAt(self, i):
        return self._inputs[i]

    def namedInput(self, name):
        """The input whose producing value is named `name` (best effort without schemas)."""
        for v in self._inputs:
            if v.debugNameBase() == name:
                return v
        raise RuntimeError(f"{self._kind} has no input named '{name}'")

    def inputsSize(self):
        return len(self._inputs)

    def addInput(self, v):
        v._uses.append(Use(self, len(self._inputs)))
        self._inputs.append(v)
        return v

    def insertInput(self, i, v):
        for j in range(i, len(self._inputs)):
            self._use_of(j).offset += 1
        self._inputs.insert(i, v)
        v._uses.append(Use(self, i))
        return v

    def replaceInput(self, i, v):
        old = self._inputs[i]
        old._uses.remove(Use(self, i))
        self._inputs[i] = v
        v._uses.append(Use(self, i))
        return old

    def replaceInputWith(self, old, new):
        for i, v in enumerate(self._inputs):
            if v is old:
                self.replaceInput(i, new)

    def removeInput(self, i):
        old = self._inputs[i]
        old._uses.remove(Use(self, i))
        for j in range(i + 1, len(self._inputs)):
            self._use_of(j).offset -= 1
        del self._inputs[i]

    def removeAllInputs(self):
        for i in reversed(range(len(self._inputs))):
            self.removeInput(i)

    def _use_of(self, i):
        for use in self._inputs[i]._uses:
            if use.user is self and use.offset == i:
                return use
        raise RuntimeError(f"{self._kind}: input {i} has no matching use record")

    # -- outputs --------------------------------------------------------------------------------------
    def outputs(self):
        return list(self._outputs)

    def outputsAt(self, i):
        return self._outputs[i]

    def hasMultipleOutputs(self):
        return len(self._outputs) > 1

    def hasUses(self):
        return any(v._uses for v in self._outputs)

    def replaceAllUsesWith(self, other):
        """Redirect every use of this node's outputs to the matching outputs of `other`."""
        if len(other._outputs) != len(self._outputs):
            raise RuntimeError(f"replaceAllUsesWith: {self._kind} has {len(self._outputs)} outputs, "
                               f"{other._kind} has {len(other._outputs)}")
        for a, b in zip(self._outputs, other._outputs):
            a.replaceAllUsesWith(b)

    def mustBeNone(self):
        return len(self._outputs) == 1 and isinstance(self._outputs[0]._type, T.NoneType)

    def outputsSize(self):
        return len(self._outputs)

    def output(self, i=None):
        if i is not None:
            return self._outputs[i]
        if len(self._outputs) != 1:
            raise RuntimeError(f"Tried to access a single output on node '{self._kind}' which has "
                               f"{len(self._outputs)} outputs. You may consider using node.outputs() instead.")
        return self._outputs[0]

    def addOutput(self):
        return self.insertOutput(len(self._outputs))

    def insertOutput(self, i):
        v = Value(self, i, self._graph._fresh_unique())
        self._outputs.insert(i, v)
        for j in range(i + 1, len(self._outputs)):
            self._outputs[j]._offset = j
        return v

    def eraseOutput(self, i):
        v = self._outputs[i]
        if v._uses:
            raise RuntimeError(f"{self._kind}: cannot erase output {i} (%{v.debugName()}), it still has uses")
        v.setDebugName(None)
        del self._outputs[i]
        for j in range(i, len(self._outputs)):
            self._outputs[j]._offset = j

    # -- blocks ---------------------------------------------------------------------------------------
    def blocks(self):
        return list(self._blocks)

    def addBlock(self):
        b = Block(self._graph, self)
        self._blocks.append(b)
        return b

    def eraseBlock(self, i):
        self._blocks.pop(i)._destroy()

    # -- attributes (torch's typed accessors: i, f, s, t, g, ival; plural forms for lists) ------------
    def hasAttribute(self, name):
        return name in self.attrs

    def hasAttributes(self):
        return bool(self.attrs)

    def attributeNames(self):
        return list(self.attrs)

    def kindOf(self, name):
        """The attribute's kind letter as torch reports it: 'i', 'f', 's', 't', 'g', 'is', 'ival'..."""
        v = self.attrs[name]
        for cls, k in ((bool, "i"), (int, "i"), (float, "f"), (str, "s"), (Tensor, "t"), (Graph, "g"),
                       (T.Type, "ty")):
            if isinstance(v, cls):
                return k
        if isinstance(v, list) and v:
            for cls, k in ((bool, "is"), (int, "is"), (float, "fs"), (str, "ss"), (Tensor, "ts"), (Graph, "gs")):
                if all(isinstance(x, cls) for x in v):
                    return k
        return "ival"

    def removeAttribute(self, name):
        del self.attrs[name]
        return self

    def copyAttributes(self, other):
        self.attrs = {k: _clone_attr(v) for k, v in other.attrs.items()}
        return self

    i = _attr_getter("i")
    f = _attr_getter("f")
    s = _attr_getter("s")
    t = _attr_getter("t")
    g = _attr_getter("g")
    ival = _attr_getter("ival")
    ty = _attr_getter("ty")
    fs = _attr_getter("fs")
    ss = _attr_getter("ss")
    ts = _attr_getter("ts")
    gs = _attr_getter("gs")
    i_ = _attr_setter("i_", int)
    f_ = _attr_setter("f_", float)
    s_ = _attr_setter("s_", str)
    t_ = _attr_setter("t_", lambda v: v)
    g_ = _attr_setter("g_", lambda v: v)
    ival_ = _attr_setter("ival_", lambda v: v)
    ty_ = _attr_setter("ty_", lambda v: v)
    is_ = _attr_setter("is_", lambda v: [int(x) for x in v])
    fs_ = _attr_setter("fs_", lambda v: [float(x) for x in v])
    ss_ = _attr_setter("ss_", lambda v: [str(x) for x in v])
    ts_ = _attr_setter("ts_", list)
    gs_ = _attr_setter("gs_", list)

    def __getitem__(self, name):
        return self.attrs[name]

    # -- position in the block list -------------------------------------------------------------------
    def _check_detached(self):
        if self._block is not None:
            raise RuntimeError(f"{self._kind} is already in a block; use moveBefore/moveAfter")

    def insertBefore(self, n):
        """Put this (detached) node just before `n`, in `n`'s block."""
        self._check_detached()
        if n._kind == "prim::Param":
            raise RuntimeError("cannot insert a node before a block's parameter node")
        self._link(n._prev, n)
        return self

    def insertAfter(self, n):
        """Put this (detached) node just after `n`, in `n`'s block."""
        self._check_detached()
        if n._kind == "prim::Return":
            raise RuntimeError("cannot insert a node after a block's return node")
        self._link(n, n._next)
        return self

    def _link(self, prev, nxt):
        self._prev, self._next = prev, nxt
        prev._next = self
        nxt._prev = self
        self._block = prev._block
        self._assign_topo()

    def _assign_topo(self):
        # Positions as torch keeps them: a number strictly between the neighbours', renumbering the block
        # only when no gap is left, so isBefore within a block is one comparison.
        lo, hi = self._prev._topo, self._next._topo
        if lo == -_INF and hi == _INF:
            self._topo = 0
        elif hi == _INF:
            self._topo = lo + _TOPO_STEP
        elif lo == -_INF:
            self._topo = hi - _TOPO_STEP
        elif hi - lo > 1:
            self._topo = (lo + hi) // 2
        else:
            for k, n in enumerate(self._block.nodes()):
                n._topo = k * _TOPO_STEP

    def _unlink(self):
        if self._block is None:
            return
        if self._graph._insert_before is self:
            self._graph._insert_before = self._next
        self._prev._next = self._next
        self._next._prev = self._prev
        self._prev = self._next = self._block = None

    def moveBefore(self, n):
        self._unlink()
        return self.insertBefore(n)

    def moveAfter(self, n):
        self._unlink()
        return self.insertAfter(n)

    def next(self):
        return self._next

    def prev(self):
        return self._prev

    def isBefore(self, n):
        """True if this node comes before `n` in program order (nodes are lifted to a common block)."""
        return self is not n and _order(self, n) < 0

    def isAfter(self, n):
        return self is not n and _order(self, n) > 0

    def destroy(self):
        """Remove this node from its block and graph; its outputs must be unused."""
        for v in self._outputs:
            if v._uses:
                raise RuntimeError(f"cannot destroy {self._kind}: output %{v.debugName()} still has uses "
                                   f"({', '.join(u.user.kind() for u in v._uses)})")
        self._destroy()

    def _destroy(self):
        for b in reversed(self._blocks):
            b._destroy()
        self._blocks = []
        self.removeAllInputs()
        for v in self._outputs:
            v.setDebugName(None)
        self._unlink()

    # -- semantics ------------------------------------------------------------------------------------
    def hasSideEffects(self):
        """True if removing the node could change behaviour: mutation, printing, raising, unknown calls."""
        k = self._kind
        if k in _SIDE_EFFECT_KINDS:
            return True
        if k.startswith("aten::"):
            base = k[6:]
            if base.endswith("_") and not base.endswith("__"):
                return True
            if ".out" in str(self.attrs.get("op", "")):
                return True
        return any(n.hasSideEffects() for b in self._blocks for n in b.nodes())

    def isNondeterministic(self):
        return self._kind in ("aten::rand", "aten::randn", "aten::randint", "aten::randperm", "aten::dropout",
                              "aten::bernoulli", "aten::multinomial", "aten::normal", "aten::rand_like",
                              "aten::randn_like", "aten::randint_like", "aten::uniform_", "aten::normal_")

    def __str__(self):
        from .ir_text import _Printer  # cycle: jit.ir_text imports jit.ir
        p = _Printer()
        p.node(self, 0)
        return "".join(p.out)

    __repr__ = __str__


def _ancestors(n):
    chain = [n]
    while n._block is not None and n._block._owning_node is not None:
        n = n._block._owning_node
        chain.append(n)
    return chain


def _order(a, b):
    """-1 if a comes before b, 1 if after, 0 when one contains the other (or they sit in sibling blocks)."""
    chain_b = _ancestors(b)
    on_b_chain = {id(x) for x in chain_b}
    for x in _ancestors(a):
        if id(x) in on_b_chain:
            return 0
        for y in chain_b:
            if y._block is x._block and y._block is not None:
                return -1 if x._topo < y._topo else 1
    raise RuntimeError("isBefore: the nodes are not in the same graph")


class Block:
    """An ordered list of nodes with block parameters (inputs) and returned values (outputs)."""

    __slots__ = ("_graph", "_owning_node", "_param", "_return", "__weakref__")

    def __init__(self, graph, owning_node):
        self._graph, self._owning_node = graph, owning_node
        self._param = Node(graph, "prim::Param")
        self._return = Node(graph, "prim::Return")
        self._param._block = self._return._block = self
        self._param._next, self._return._prev = self._return, self._param
        self._param._topo, self._return._topo = -_INF, _INF

    def owningNode(self):
        return self._owning_node

    def owningGraph(self):
        return self._graph

    def param_node(self):
        return self._param

    paramNode = param_node

    def return_node(self):
        return self._return

    returnNode = return_node

    def addInputToBlock(self):
        return self.addInput()

    def addNode(self, kind, inputs=()):
        """Create a one-output node of `kind` and append it to this block."""
        return self.appendNode(self._graph.create(kind, inputs))

    def findNode(self, kind, recurse=True):
        found = self.findAllNodes(kind, recurse)
        return found[0] if found else None

    def findAllNodes(self, kind, recurse=True):
        out = []
        for n in self.nodes():
            if n._kind == kind:
                out.append(n)
            if recurse:
                for b in n._blocks:
                    out += b.findAllNodes(kind, True)
        return out

    def nodes(self):
        """The block's nodes in order (a snapshot: safe to mutate the block while iterating)."""
        out, n = [], self._param._next
        while n is not self._return:
            out.append(n)
            n = n._next
        return out

    def inputs(self):
        return self._param.outputs()

    def outputs(self):
        return self._return.inputs()

    def addInput(self, name=None):
        v = self._param.addOutput()
        if name:
            v.setDebugName(name)
        return v

    def insertInput(self, i, name=None):
        v = self._param.insertOutput(i)
        if name:
            v.setDebugName(name)
        return v

    def eraseInput(self, i):
        self._param.eraseOutput(i)

    def registerOutput(self, v):
        self._return.addInput(v)
        return len(self._return._inputs) - 1

    def insertOutput(self, i, v):
        self._return.insertInput(i, v)
        return i

    def eraseOutput(self, i):
        self._return.removeInput(i)

    def appendNode(self, n):
        return n.insertBefore(self._return)

    def prependNode(self, n):
        return n.insertAfter(self._param)

    def _destroy(self):
        self._return.removeAllInputs()
        for n in reversed(self.nodes()):
            n._destroy()
        for v in self._param._outputs:
            v.setDebugName(None)

    def __str__(self):
        from .ir_text import _Printer  # cycle: jit.ir_text imports jit.ir
        p = _Printer()
        p.block_body(self, 0)
        return "".join(p.out)


class Graph:
    """A function in SSA form: one top block, an insert point and the value-name table."""

    def __init__(self):
        self._names = {}
        self._name_suffix = {}
        self._next_unique = 0
        self._block = Block(self, None)
        self._insert_before = self._block._return

    def _fresh_unique(self):
        u = self._next_unique
        self._next_unique += 1
        return u

    # -- structure ------------------------------------------------------------------------------------
    def block(self):
        return self._block

    def inputs(self):
        return self._block.inputs()

    def outputs(self):
        return self._block.outputs()

    def nodes(self):
        return self._block.nodes()

    def param_node(self):
        return self._block._param

    def return_node(self):
        return self._block._return

    def addInput(self, name=None):
        return self._block.addInput(name)

    def insertInput(self, i, name=None):
        return self._block.insertInput(i, name)

    def eraseInput(self, i):
        self._block.eraseInput(i)

    def registerOutput(self, v):
        return self._block.registerOutput(v)

    def eraseOutput(self, i):
        self._block.eraseOutput(i)

    def appendNode(self, n):
        return self._block.appendNode(n)

    def prependNode(self, n):
        return self._block.prependNode(n)

    def insertGraph(self, callee, inputs):
        """Inline a copy of `callee` at the insert point, reading `inputs`; returns the copied outputs."""
        if len(inputs) != len(callee.inputs()):
            raise RuntimeError(f"insertGraph: the callee takes {len(callee.inputs())} inputs, "
                               f"got {len(inputs)}")
        env = dict(zip(callee.inputs(), inputs))
        for n in callee.nodes():
            n2 = self.createClone(n, env.__getitem__)
            self.insertNode(n2)
            env.update(zip(n._outputs, n2._outputs))
        return [env[v] for v in callee.outputs()]

    def permuteInputs(self, order):
        """Reorder the graph inputs: new input i is old input order[i]."""
        p = self._block._param
        if sorted(order) != list(range(len(p._outputs))):
            raise RuntimeError(f"permuteInputs: {order} is not a permutation of the inputs")
        p._outputs = [p._outputs[i] for i in order]
        for i, v in enumerate(p._outputs):
            v._offset = i

    def all_nodes(self):
        """Every node, depth first, nested blocks included."""
        out = []

        def walk(block):
            for n in block.nodes():
                out.append(n)
                for b in n._blocks:
                    walk(b)
        walk(self._block)
        return out

    def findNode(self, kind, recurse=True):
        for n in (self.all_nodes() if recurse else self.nodes()):
            if n._kind == kind:
                return n
        return None

    def findAllNodes(self, kind, recurse=True):
        return [n for n in (self.all_nodes() if recurse else self.nodes()) if n._kind == kind]

    # -- creating nodes -------------------------------------------------------------------------------
    def create(self, kind, inputs=(), num_outputs=1):
        """A new node, not yet in any block (insert it with insertNode / insertBefore / appendNode)."""
        n = Node(self, kind)
        for v in inputs:
            n.addInput(v)
        for _ in range(num_outputs):
            n.addOutput()
        if kind.startswith("aten::"):
            n.attrs["op"] = kind[6:]
        return n

    def createClone(self, node, value_map, copy_blocks=True):
        """A copy of `node` (from any graph) whose inputs are `value_map(old_input)`."""
        vm = value_map if callable(value_map) else value_map.__getitem__
        n = Node(self, node._kind)
        n.copyAttributes(node)
        n._source_range, n._scope = node._source_range, node._scope
        for v in node._inputs:
            n.addInput(vm(v))
        for v in node._outputs:
            n.addOutput().setType(v._type)
        if copy_blocks:
            local = {}

            def inner_map(v):
                return local[v] if v in local else vm(v)
            for b in node._blocks:
                b2 = n.addBlock()
                _clone_block_into(b, b2, local, inner_map, self)
        return n

    def insertNode(self, n):
        return n.insertBefore(self._insert_before)

    def insert(self, kind, inputs=(), num_outputs=1):
        return self.insertNode(self.create(kind, inputs, num_outputs))

    def insertConstant(self, value, type=None):
        """A prim::Constant holding `value`, inserted at the insert point; returns its output."""
        n = self.create("prim::Constant")
        if value is not None:
            n.attrs["value"] = value
        n.output().setType(type if type is not None else T.type_of(value))
        return self.insertNode(n).output()

    def insertPoint(self):
        return self._insert_before

    def setInsertPoint(self, node_or_block):
        """Insert before a node, or at the end of a block."""
        if isinstance(node_or_block, Block):
            node_or_block = node_or_block._return
        self._insert_before = node_or_block

    @contextlib.contextmanager
    def insert_point_guard(self, node_or_block):
        saved = self._insert_before
        self.setInsertPoint(node_or_block)
        try:
            yield
        finally:
            self._insert_before = saved

    # -- whole-graph operations -----------------------------------------------------------------------
    def copy(self):
        """A deep copy: new nodes, values and blocks (subgraph attributes copied too, tensors shared)."""
        g = Graph()
        g._next_unique = self._next_unique
        g._name_suffix = dict(self._name_suffix)
        env = {}
        for v in self.inputs():
            env[v] = _copy_value_meta(v, g.addInput(), g)
        _clone_nodes(self._block, g._block, env, env.__getitem__, g)
        for v in self.outputs():
            g.registerOutput(env[v])
        return g

    def to_dot(self, title=None):
        """The graph in Graphviz DOT: inputs and outputs as ellipses, one box per node, edges from producers to
        users labelled with the value's name and type, constants beside their users, blocks as clusters (drawn by
        lantern.jit.visualize; `lantern.inspect.render(dot, "g.svg")` draws it)."""
        return graph_to_dot(self, title)

    def lint(self):
        from .verify import verify  # cycle: jit.verify imports jit.ir
        verify(self)

    def attribute_table(self):
        """Attribute values printed opaquely (`<Tensor>`, `<Tensors>`, `<Graph>`), in print order: pass
        this list to `parse_ir(text, attribute_table)` to restore them."""
        from .ir_text import _Printer  # cycle: jit.ir_text imports jit.ir
        p = _Printer()
        p.graph(self)
        return p.table

    def str(self, print_source_ranges=True):
        from .ir_text import _Printer  # cycle: jit.ir_text imports jit.ir
        p = _Printer(print_source_ranges)
        p.graph(self)
        return "".join(p.out)

    def __str__(self):
        return self.str()

    def __repr__(self):
        return self.str()


def _copy_value_meta(old, new, graph):
    new._unique = old._unique
    new.setType(old._type)
    if old._debug_name is not None:
        new.setDebugName(old._debug_name)
    return new


def _clone_nodes(src_block, dst_block, env, vm, graph):
    for n in src_block.nodes():
        n2 = Node(graph, n._kind)
        n2.copyAttributes(n)
        n2._source_range, n2._scope = n._source_range, n._scope
        for v in n._inputs:
            n2.addInput(vm(v))
        for v in n._outputs:
            env[v] = _copy_value_meta(v, n2.addOutput(), graph)
        for b in n._blocks:
            _clone_block_into(b, n2.addBlock(), env, vm, graph)
        dst_block.appendNode(n2)


def _clone_block_into(src, dst, env, vm, graph):
    for v in src.inputs():
        env[v] = _copy_value_meta(v, dst.addInput(), graph)
    _clone_nodes(src, dst, env, vm, graph)
    for v in src.outputs():
        dst.registerOutput(vm(v))


def _clone_attr(v):
    if isinstance(v, Graph):
        return v.copy()
    if isinstance(v, list):
        return [_clone_attr(x) for x in v]
    return v


# The text form (printer and parser) lives in ir_text, which needs the classes above.
from .ir_text import parse_ir  # noqa: E402
from .visualize import graph_to_dot
