"""The meta backend: tensors with shapes, strides and dtypes but no data. Every op runs its meta function only.

This is the device extension point exercised without a GPU: shape inference and error checks for any program.

>>> y = lantern.ones(2, 3, device='meta') @ lantern.ones(3, 4, device='meta')
>>> y.shape, y.device
(lantern.Size([2, 4]), device(type='meta'))
"""
from ..core.allocator import meta_allocator
from ..core.device import META
from ..core.dispatch_keys import DispatchKey
from ..ops.dispatcher import raise_missing_kernel
from ..ops.meta_util import shape_str
from .base import (Backend, check_cast, install_backend, internal_overlap_check, meta_with_cast_check_first,
                   resize_out, with_out_dtype)


class MetaBackend(Backend):
    key = DispatchKey.Meta
    device = META
    xp = None
    allocator = meta_allocator

    def array_over(self, storage, shape, dtype):
        return None

    def fill(self, t, value):
        pass

    def array(self, t):
        raise RuntimeError("Tensor on device meta is not allocated: it has no data to read. "
                           "Use a cpu or cuda tensor for values (meta tensors carry only shapes and dtypes).")

    def run_structured(self, op, args):
        shape, dtype = op.meta(*args)
        return self.output(op, shape, dtype, args)

    def array_or_none(self, t):
        return None

    def run_structured_inplace(self, op, args):
        self_ = args[0]
        shape, dtype = meta_with_cast_check_first(op, args, self_)
        if shape != self_._size:
            raise RuntimeError(f"output with shape {shape_str(self_._size)} doesn't match the broadcast shape "
                               f"{shape_str(shape)}")
        check_cast(op, dtype, self_)
        internal_overlap_check(self_, op.name)
        self_._bump_version()
        return self_

    def run_structured_out(self, op, args):
        out = args[-1]
        args = with_out_dtype(op, args)
        shape, dtype = meta_with_cast_check_first(op, args[:-1], out)
        resize_out(out, shape, op.name)
        check_cast(op, dtype, out)
        out._bump_version()
        return out

    def run_custom(self, op, args):
        if op.meta is None:
            raise_missing_kernel(op, self)
        return op.meta(self, *args)


meta = MetaBackend()
install_backend(meta)
