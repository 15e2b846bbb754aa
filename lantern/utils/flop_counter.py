"""torch.utils.flop_counter: count the floating-point operations of a program, per op and per module.

`FlopCounterMode` is a dispatch mode (lantern.utils._python_dispatch): it sees every op below autograd, forward and
backward, and adds each op's count from its formula (`register_flop_formula`) under every module running at the
time (lantern.utils.module_tracker). Matrix products and convolutions have formulas, as in torch; a product counts
2 flops per multiply-add. Composites arrive decomposed (F.linear as t + addmm, attention as bmm's), so their
products are counted.

>>> import lantern
>>> with FlopCounterMode(display=False) as counter:
...     _ = lantern.ones(8, 16) @ lantern.ones(16, 4)
>>> counter.get_total_flops(), counter.get_flop_counts()
(1024, {'Global': {<OpOverloadPacket(op='aten.mm')>: 1024}})
"""
from collections import defaultdict
from functools import wraps
from math import prod

from .. import ops
from ..core.tensor_impl import TensorImpl
from ..ops.op_namespaces import OpOverloadPacket
from ._python_dispatch import TorchDispatchMode
from ._pytree import tree_map
from .module_tracker import ModuleTracker
from ..core import user_warnings

__all__ = ["FlopCounterMode", "register_flop_formula"]

aten = ops.aten
flop_registry = {}


def get_shape(i):
    return i.shape if isinstance(i, TensorImpl) else i


def shape_wrapper(f):
    """f(*shapes, out_shape=...) called with the op's arguments, each tensor replaced by its shape."""
    @wraps(f)
    def with_shapes(*args, out_val=None, **kwargs):
        args, kwargs, out_shape = tree_map(get_shape, (args, kwargs, out_val))
        return f(*args, out_shape=out_shape, **kwargs)
    return with_shapes


def register_flop_formula(targets, get_raw=False):
    """Decorator: the flop formula of the ops `targets` (an OpOverloadPacket such as lantern.ops.aten.mm, or a
    list of them). The formula gets the op's arguments with tensors as shapes (their values with get_raw=True)
    and out_shape=, and returns a count."""
    def register_fun(formula):
        if not get_raw:
            formula = shape_wrapper(formula)
        for target in targets if isinstance(targets, (list, tuple)) else [targets]:
            if not isinstance(target, OpOverloadPacket):
                raise ValueError(f"register_flop_formula(targets): expected each target to be OpOverloadPacket "
                                 f"(i.e. torch.ops.mylib.foo), got {target} which is of type {type(target)}")
            if target in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[target] = formula
        return formula
    return register_fun


@register_flop_formula(aten.mm)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs):
    """(m, k) @ (k, n): m * n * k multiply-adds, 2 flops each."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    return m * n * 2 * k


@register_flop_formula(aten.addmm)
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs):
    """The product's flops (the addition of self is not counted, as in torch)."""
    return mm_flop(a_shape, b_shape)


@register_flop_formula(aten.bmm)
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs):
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


@register_flop_formula(aten.baddbmm)
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs):
    return bmm_flop(a_shape, b_shape)


def conv_flop_count(x_shape, w_shape, out_shape, transposed=False):
    """A convolution's flops: for each point of the output (of the input, transposed) a filter's worth of
    multiply-adds per pair of channels, for each batch element; the bias is not counted."""
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


@register_flop_formula(aten.convolution)
def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args, out_shape=None, **kwargs):
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


_SUFFIXES = ["", "K", "M", "B", "T"]


def get_suffix_str(number):
    """The suffix a table shows `number` with: one that leaves at least two digits before the point."""
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


def convert_num_with_suffix(number, suffix):
    return f"{number / 1000 ** _SUFFIXES.index(suffix):.3f}" + suffix


def convert_to_percent_str(num, denom):
    return "0%" if denom == 0 else f"{num / denom:.2%}"


class FlopCounterMode:
    """`with FlopCounterMode() as counter:` counts the flops of what runs inside; `display=True` prints the table
    (modules to `depth` levels) on exit. `custom_mapping` adds formulas ({packet: formula}) for this counter."""

    def __init__(self, mods=None, depth=2, display=True, custom_mapping=None):
        if mods is not None:
            user_warnings.warn("mods argument is not needed anymore, you can stop passing it", stacklevel=2)
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode = None
        self.flop_registry = {**flop_registry,
                              **{k: v if getattr(v, "_get_raw", False) else shape_wrapper(v)
                                 for k, v in (custom_mapping or {}).items()}}
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self):
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self):
        """{module name: {op packet: flops}}; "Global" holds every op."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None):
        """The counts as a table: each module (to `depth` levels) with its ops, in flops and % of the total."""
        depth = self.depth if depth is None else depth
        depth = 999999 if depth is None else depth
        total = self.get_total_flops()
        suffix = get_suffix_str(total)

        def rows_of(name, indent):
            flops = sum(self.flop_counts[name].values())
            pad = " " * indent
            return [[pad + name, convert_num_with_suffix(flops, suffix), convert_to_percent_str(flops, total)]] + [
                [pad + " - " + str(op), convert_num_with_suffix(n, suffix), convert_to_percent_str(n, total)]
                for op, n in self.flop_counts[name].items()]

        rows = []
        for name in sorted(self.flop_counts):
            if name != "Global" and name.count(".") + 1 <= depth:
                rows += rows_of(name, name.count("."))
        global_subsumed = any(sum(self.flop_counts[n].values()) >= total for n in self.flop_counts if n != "Global"
                              and n.count(".") + 1 <= depth)
        if "Global" in self.flop_counts and not global_subsumed:
            rows = rows_of("Global", 0) + [[" " + row[0]] + row[1:] for row in rows]
        return _simple_table(["Module", "FLOP", "% Total"], rows or [["Global", "0", "0%"]])

    def __enter__(self):
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _FlopCounterMode(self)
        self.mode.__enter__()
        return self

    def __exit__(self, *args):
        self.mode.__exit__(*args)
        self.mode = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))

    def _count_flops(self, func_packet, out, args, kwargs):
        formula = self.flop_registry.get(func_packet)
        if formula is not None:
            flops = formula(*args, **kwargs, out_val=out)
            for parent in set(self.mod_tracker.parents):
                self.flop_counts[parent][func_packet] += flops
        return out


class _FlopCounterMode(TorchDispatchMode):
    def __init__(self, counter):
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        return self.counter._count_flops(func.overloadpacket, out, args, kwargs)


def _simple_table(header, rows):
    """tabulate's "simple" format, the first column left-aligned and the others right-aligned (torch prints its
    table through tabulate; lantern needs no such dependency for three columns). Columns are at least two wider
    than their headers, as tabulate makes them."""
    widths = [max([len(h) + 2] + [len(str(r[i])) for r in rows]) for i, h in enumerate(header)]

    def line(cells):
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])
