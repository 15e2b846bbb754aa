"""What every backend provides: allocation, array views of tensors, and the runners for each kind of op.

A backend is a device plus an array library (`xp`: NumPy, CuPy) plus an allocator. Kernels written once against
`xp` run on every backend; a backend only decides how outputs are allocated and how a tensor becomes an array.

>>> from lantern.backends.cpu import cpu
>>> cpu.empty((2, 3), lantern.float32).stride()
(3, 1)
"""
from math import prod as _prod

from ..core.contiguity import has_cached_contiguous_strides
from ..core.layout import strided
from ..core.promotion import can_cast
from ..core.reference import mode, on_switch, specialisation
from ..core.storage import UntypedStorage
from ..core.tensor_impl import TensorImpl, contiguous_strides, make_tensor
from ..ops import generated, registry
from ..ops.meta_util import pointwise_strides, shape_str
from ..ops.op_kinds import OpKind
from ..core import user_warnings


def internal_overlap_check(t, op_name):
    """Refuse writes into memory several elements share (an expanded tensor), as PyTorch does."""
    if 0 in t._size:  # no elements, so nothing shared (torch writes into empty stride-0 tensors)
        return
    for n, s in zip(t._size, t._stride):
        if s == 0 and n > 1:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                f"location. Please clone() the tensor before performing the operation. (in {op_name}, written-to "
                f"tensor of shape {shape_str(t._size)} and strides {list(t._stride)})")


def check_cast(op, result_dtype, out):
    if op.exact_out_dtype and result_dtype is not out.dtype:
        raise RuntimeError(f"Found dtype {out.dtype.legacy} but expected {result_dtype.legacy} (in {op.name}: "
                           f"give an out tensor of dtype {result_dtype})")
    op_name = op.name
    if not can_cast(result_dtype, out.dtype):
        raise RuntimeError(
            f"result type {result_dtype.legacy} can't be cast to the desired output type {out.dtype.legacy} "
            f"(in {op_name})")


def meta_with_cast_check_first(op, args, out):
    """op.meta(*args), except that when the meta refuses the dtype for want of a kernel (a NotImplementedError
    carrying the op's `result_dtype`, see lantern.ops.pointwise_common._kernel_check), an `out` that result cannot
    be cast to is reported first, as PyTorch's TensorIterator checks the cast before a kernel looks at the dtype:
    int32.bitwise_and_(float32) is "result type Float can't be cast to the desired output type Int", not
    "bitwise_and_cpu not implemented for 'Float'"."""
    try:
        return op.meta(*args)
    except NotImplementedError as e:
        result_dtype = getattr(e, "result_dtype", None)
        if result_dtype is not None and not op.exact_out_dtype:  # those (lerp_) check the exact dtype afterwards
            check_cast(op, result_dtype, out)
        raise


# The names a generated runner reads besides its backend and op: the header of lantern/_generated/runners.py
RUNNER_IMPORTS = """\
from lantern.core.tensor_impl import _STRIDES_CACHE, TensorImpl as T
"""
_runner_namespace = {}


def runner_shape(op):
    """What a structured op's runner depends on, as a name: its number of arguments, which are tensors, and
    whether the output follows the inputs' layout ('3_args_t0_t1_pointwise'). Ops of one shape share a factory."""
    tensors = "".join(f"_t{i}" for i in op.tensor_positions)
    return f"{len(op.schema.args)}_args{tensors}{'_pointwise' if op.pointwise else ''}"


def _runner_body(op, tensor_names):
    """The lines of a runner that read its tensors' arrays and allocate its output."""
    # a tensor's cached array, read inline (a call per operand costs as much as the rest of the check)
    array = "{n}._nd if {n}._nd is not None and {n}._nd_gen == {n}._storage._gen else arr({n})"
    if op.pointwise:
        # contiguous inputs (the common case) are recognised by their cached stride tuples; an operand broadcast
        # in every dim (stride 0 throughout: an expanded scalar, as in a sum's gradient) says nothing of layout
        # (core.contiguity.has_cached_contiguous_strides written out: a call per operand would cost small ops ~4%).
        # Each operand is tested for being a tensor once, for both its array and its layout.
        operands = "".join(
            f"        if isinstance({n}, T):\n"
            f"            x{i} = {array.format(n=n)}\n"
            f"            c{i} = {n}._stride is cached_contiguous_strides({n}._size) or not any({n}._stride)\n"
            f"        else:\n"
            f"            x{i}, c{i} = {n}, True\n" for i, n in tensor_names)
        contiguous = " and ".join(f"c{i}" for i, _ in tensor_names)
        allocate = (f"        if {contiguous}:\n            out = empty(shape, dtype)\n"
                    "        else:\n            out = output(op, shape, dtype, args)\n")
        return operands + allocate
    arrays = "".join(f"        x{i} = ({array.format(n=n)}) if isinstance({n}, T) else {n}\n" for i, n in tensor_names)
    return "        out = empty(shape, dtype)\n" + arrays


def runner_source(op):
    """The source of the factory make_run_<shape>(backend, op) of a structured op's runner on a backend with an
    array library: meta, allocate, impl, each argument unpacked by name."""
    shape = runner_shape(op)
    names = [f"a{i}" for i in range(len(op.schema.args))]
    tensor_names = [(i, names[i]) for i in op.tensor_positions]
    converted = [f"x{i}" if i in op.tensor_positions else n for i, n in enumerate(names)]
    tensors = ", ".join(names[i] for i in op.tensor_positions) or "none"
    layout = "the inputs' memory order" if op.pointwise else "row-major"
    arguments = f"{len(names)} argument{'s' if len(names) != 1 else ''}"
    return (f"def make_run_{shape}(backend, op):\n"
            f'    """The runner of structured ops of {arguments} (tensors: {tensors}); output in {layout}."""\n'
            f"    meta, impl, xp = op.meta, op.impl, backend.xp\n"
            f"    empty, arr, output = backend.empty, backend.array, backend.output\n"
            f"    cached_contiguous_strides = _STRIDES_CACHE.get\n"
            f"\n"
            f"    def run_{shape}(op, args):\n"
            f"        {', '.join(names)}{',' if len(names) == 1 else ''} = args\n"
            f"        shape, dtype = meta({', '.join(names)})\n"
            f"{_runner_body(op, tensor_names)}"
            f"        impl(xp, out._nd, dtype.np, {', '.join(converted)})\n"
            f"        return out\n"
            f"    return run_{shape}\n")


class Backend:
    key = None
    device = None
    layout = strided
    xp = None
    allocator = None

    # ---- memory --------------------------------------------------------------------------------------------
    def empty(self, shape, dtype):
        """A new contiguous tensor; its array view is made once, now."""
        storage = UntypedStorage._allocate(_prod(shape) * dtype.itemsize, self.device, self.allocator)
        return make_tensor(storage, shape, contiguous_strides(shape), 0, dtype, self,
                           self.array_over(storage, shape, dtype))

    def empty_strided(self, shape, stride, dtype):
        span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
        storage = UntypedStorage._allocate(span * dtype.itemsize, self.device, self.allocator)
        return make_tensor(storage, tuple(shape), tuple(stride), 0, dtype, self)

    def array_over(self, storage, shape, dtype):
        raise NotImplementedError

    def fill(self, t, value):
        self.array(t)[...] = value

    def array(self, t):
        """The array a kernel computes on: t's memory seen through this backend's array library `xp`."""
        raise NotImplementedError

    def host_array(self, t):
        """The NumPy array a user gets from a CPU tensor (Tensor.numpy(), printing, tolist)."""
        return self.array(t)

    def arrays(self, op, args):
        """args with each tensor replaced by its array (tensor lists too); numbers pass through."""
        out = list(args)
        arr = self.array
        for i in op.tensor_positions:
            a = out[i]
            if isinstance(a, TensorImpl):
                out[i] = arr(a)
        for i in op.list_positions:
            out[i] = [None if a is None else arr(a) for a in out[i]]
        return out

    # ---- runners -------------------------------------------------------------------------------------------
    def install(self, op):
        """Give `op` this backend's kernel, according to the op's kind."""
        if op.backends is not None and self.device.type not in op.backends:
            return
        if op.kind is OpKind.STRUCTURED and not op.list_positions and self.xp is not None and mode.fast:
            op.kernels[self.key] = self._specialized_structured(op)
            return
        runner = getattr(self, "run_" + op.kind.value, None)
        if runner is not None:
            op.kernels[self.key] = runner

    def reinstall_structured(self):
        """Reference mode switched: structured ops' kernels become the generic run_structured or the generated
        runners again (only on backends with an array library: others run run_structured either way)."""
        if self.xp is not None:
            for op in registry.REGISTRY.values():
                if op.kind is OpKind.STRUCTURED and self.key in op.kernels:
                    self.install(op)

    @specialisation(
        replaces="Backend.run_structured, unrolled over one structured op's arguments",
        when="outside reference mode, on a backend with an array library (lantern/_generated/runners.py)",
        parity_test="tests/test_reference_mode.py::test_generated_entries_and_runners_match_the_readable_ones")
    def _specialized_structured(self, op):
        """run_structured unrolled for one op's arguments, from lantern/_generated/runners.py (or compiled, for an
        op that has none there: see lantern.ops.generated), as PyTorch generates its wrappers.

        Per call this saves the list building and loops of the generic runner: small ops are dominated by it.
        """
        if not _runner_namespace:
            _runner_namespace.update(generated.imported(RUNNER_IMPORTS))
        factory = generated.define("runners", f"make_run_{runner_shape(op)}", runner_source(op), _runner_namespace)
        fn = factory(self, op)
        fn.source = factory.source
        return fn

    def output(self, op, shape, dtype, args):
        """A structured op's new output: row-major, or in the inputs' memory order for pointwise ops (an empty
        output is row-major whatever its inputs, as TensorIterator makes it)."""
        if op.pointwise and all(shape):
            # an operand broadcast in every dim (an expanded scalar, stride 0 throughout) says nothing of layout
            tensors = [args[i] for i in op.tensor_positions if isinstance(args[i], TensorImpl) and any(args[i]._stride)]
            if not all(has_cached_contiguous_strides(t) for t in tensors):
                strides = pointwise_strides(shape, tensors)
                if strides != contiguous_strides(shape):
                    out = self.empty_strided(shape, strides, dtype)
                    out._nd = self.array_or_none(out)
                    return out
        return self.empty(shape, dtype)

    def array_or_none(self, t):
        return self.array(t)

    def check_internal_overlap(self, written, op_name):
        """Refuse to write a structured op's result into memory that several of its elements share."""
        internal_overlap_check(written, op_name)

    def compute(self, op, out, dtype, args):
        """Run a structured op's kernel into out's memory: the step of every runner that the meta backend, which
        has no data, skips (the checks, allocation and version bumps around it are the same on every backend)."""
        op.impl(self.xp, self.array(out), dtype.np, *self.arrays(op, args))

    def run_structured(self, op, args):
        shape, dtype = op.meta(*args)
        out = self.output(op, shape, dtype, args)
        self.compute(op, out, dtype, args)
        return out

    def run_structured_inplace(self, op, args):
        self_ = args[0]
        shape, dtype = meta_with_cast_check_first(op, args, self_)
        if shape != self_._size:
            raise RuntimeError(
                f"output with shape {shape_str(self_._size)} doesn't match the broadcast shape {shape_str(shape)} "
                f"(in {op.name}: an in-place op cannot change its tensor's shape; use the out-of-place "
                f"{op.functional.name} instead)")
        check_cast(op, dtype, self_)
        self.check_internal_overlap(self_, op.name)
        self.compute(op, self_, dtype, args)
        self_._bump_version()
        return self_

    def run_structured_out(self, op, args):
        out = args[-1]
        args = with_out_dtype(op, args)
        shape, dtype = meta_with_cast_check_first(op, args[:-1], out)
        resize_out(out, shape, op.name)
        check_cast(op, dtype, out)
        self.check_internal_overlap(out, op.name)
        self.compute(op.functional, out, dtype, args[:-1])
        out._bump_version()
        return out

    def run_view(self, op, args):
        view = op.meta(*args)  # (shape, strides, storage_offset), and a dtype where the view reinterprets elements
        base = args[0]
        root = (base._base if base._base is not None else base) if op.sets_base else None
        return make_tensor(base._storage, view[0], view[1], view[2], view[3] if len(view) == 4 else base.dtype,
                           self, None, base._vc, root)

    def run_custom(self, op, args):
        return op.impl(self, *args)


def with_out_dtype(op, args):
    """sum/prod with out= and no dtype= compute in out's dtype (PyTorch's rule for these reductions)."""
    if not op.dtype_from_out:
        return args
    i = next(i for i, a in enumerate(op.schema.args) if a.name == "dtype")
    if args[i] is not None:
        return args
    return args[:i] + (args[-1].dtype,) + args[i + 1:]


def resize_out(out, shape, op_name):
    """Resize an out= tensor to the result's shape; warn, as PyTorch does, when it held elements already."""
    if out._size == shape:
        return
    if out.numel() != 0:
        user_warnings.warn(
            f"An output with one or more elements was resized since it had shape {shape_str(out._size)}, which "
            f"does not match the required output shape {shape_str(shape)}. This behavior is deprecated, and in a "
            "future PyTorch release outputs will not be resized unless they have zero elements. You can explicitly "
            "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).", UserWarning,
            stacklevel=4)
    out._resize(shape)


def install_backend(backend):
    from ..ops import dispatcher
    dispatcher.register_backend(backend.device.type, backend)
    registry.on_register(backend.install)
    on_switch(backend.reinstall_structured)
