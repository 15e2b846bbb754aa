"""The meta backend: tensors with shapes, strides and dtypes but no data. Every op runs its meta function only:
the runners are the shared ones of lantern.backends.base, whose `compute` step (and the internal-overlap
check of the memory written) this backend skips.

This is the device extension point exercised without a GPU: shape inference and error checks for any program.

>>> y = lantern.ones(2, 3, device='meta') @ lantern.ones(3, 4, device='meta')
>>> y.shape, y.device
(lantern.Size([2, 4]), device(type='meta'))
"""
from ..core.allocator import meta_allocator
from ..core.device import META
from ..core.dispatch_keys import DispatchKey
from ..ops.dispatcher import raise_missing_kernel
from .base import Backend, install_backend


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

    def array_or_none(self, t):
        return None

    def check_internal_overlap(self, written, op_name):
        """Nothing to check: a meta tensor has no memory for its elements to share (torch's meta device writes
        into an expanded tensor without complaint, too)."""

    def compute(self, op, out, dtype, args):
        """Nothing to compute: a meta tensor has no data. The other steps of the shared runners (meta, shape and
        cast checks, resizing out=, version bumps) run as on every backend."""

    def run_custom(self, op, args):
        if op.meta_kernel is None:
            raise_missing_kernel(op, self)
        return op.meta_kernel(self, *args)


meta = MetaBackend()
install_backend(meta)
