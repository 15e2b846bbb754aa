"""GradBucket (torch.distributed.GradBucket): what a DistributedDataParallel communication hook is handed.

DDP's reducer copies the gradients of a bucket's parameters into one flat tensor; when the bucket is ready it calls
the hook registered with `DistributedDataParallel.register_comm_hook(state, hook)` as `hook(state, bucket)`, and the
hook returns a `torch.futures.Future` whose value is the tensor to use as the bucket's reduced gradients (the hook
does the averaging: DDP does not divide by the world size when a hook is registered). See
lantern.distributed.algorithms.ddp_comm_hooks for the standard hooks.

>>> import lantern
>>> flat = lantern.arange(5.0)
>>> bucket = GradBucket(0, True, flat, [flat[:2], flat[2:].view(3, 1)], [])
>>> bucket.index(), bucket.is_last(), bucket.buffer().tolist(), [g.shape for g in bucket.gradients()]
(0, True, [0.0, 1.0, 2.0, 3.0, 4.0], [lantern.Size([2]), lantern.Size([3, 1])])
"""

__all__ = ["GradBucket"]


class GradBucket:
    """One bucket of gradients: its index, whether it is the last of the step, the flat buffer, the per-parameter
    views of it and the parameters."""

    def __init__(self, index, is_last, buffer, gradients, parameters):
        self._index = index
        self._is_last = is_last
        self._buffer = buffer
        self._gradients = gradients
        self._parameters = parameters

    def index(self):
        """The bucket's position; bucket 0 holds the gradients that backward produces first."""
        return self._index

    def is_last(self):
        """Whether this is the last bucket to be all-reduced in the iteration."""
        return self._is_last

    def buffer(self):
        """The flat tensor of the bucket's gradients (a hook may change it in place)."""
        return self._buffer

    def gradients(self):
        """Each parameter's gradient, a view of buffer() in the parameter's shape."""
        return list(self._gradients)

    def parameters(self):
        """The parameters whose gradients the bucket holds, in the order of gradients()."""
        return list(self._parameters)

    def set_buffer(self, buffer):
        """Replace the flat buffer (a hook that reduces into a new tensor)."""
        self._buffer = buffer
