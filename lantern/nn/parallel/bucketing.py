"""Which gradients travel together: DistributedDataParallel's bucket assignment (torch's
`dist._compute_bucket_assignment_by_size`).

Gradients are all-reduced in buckets, not one by one: one collective per few megabytes amortises the collective's
fixed cost. Tensors are taken in the order given (registration order, or the order their gradients became ready
when the buckets are rebuilt); each (dtype, device) pair fills its own bucket, and a bucket closes as soon as its
bytes reach the current limit. The limits are a list: each closed bucket of a kind moves that kind on to the next
limit, and the last limit holds from then on (DDP passes [1 MiB, 25 MiB], so the first bucket, whose gradients are
the last of backward, is small and its all-reduce starts early). A tensor expected to have a sparse gradient gets a
bucket of its own, with limit 0. Without `tensor_indices` the buckets come back sorted by the smallest index they
hold; with them, in the order they closed, the unfinished ones last.

>>> import lantern
>>> tensors = [lantern.zeros(100), lantern.zeros(50, dtype=lantern.float64), lantern.zeros(300), lantern.zeros(200)]
>>> compute_bucket_assignment_by_size(tensors, [400, 1000])
([[0], [1], [2], [3]], [400, 400, 1000, 1000])
>>> compute_bucket_assignment_by_size(tensors, [2000])
([[0, 2, 3], [1]], [2000, 2000])
"""

__all__ = ["compute_bucket_assignment_by_size"]


class _OpenBucket:
    """A bucket still filling: the tensor indices it holds, their bytes, the limit in force when the last came."""

    def __init__(self):
        self.indices = []
        self.nbytes = 0
        self.size_limit = None


def compute_bucket_assignment_by_size(tensors, bucket_size_limits, expect_sparse_gradient=(), tensor_indices=()):
    """([bucket: [tensor index, ...]], [each bucket's size limit]) for `tensors`, as the module docstring says."""
    closed = []
    open_buckets = {}   # (dtype, device) -> _OpenBucket, in the order the kinds first appear
    limit_position = {}   # (dtype, device) -> index into bucket_size_limits
    for position, tensor in enumerate(tensors):
        index = tensor_indices[position] if tensor_indices else position
        if expect_sparse_gradient and expect_sparse_gradient[index]:
            closed.append(([index], 0))
            continue
        kind = (tensor.dtype, tensor.device)
        bucket = open_buckets.setdefault(kind, _OpenBucket())
        bucket.indices.append(index)
        bucket.nbytes += tensor.numel() * tensor.element_size()
        step = limit_position.setdefault(kind, 0)
        bucket.size_limit = bucket_size_limits[step]
        if bucket.nbytes >= bucket.size_limit:
            closed.append((bucket.indices, bucket.size_limit))
            open_buckets[kind] = _OpenBucket()
            limit_position[kind] = min(step + 1, len(bucket_size_limits) - 1)
    buckets = closed + [(b.indices, b.size_limit) for b in open_buckets.values() if b.indices]
    if not tensor_indices:
        buckets.sort(key=lambda bucket: min(bucket[0]))
    return [indices for indices, _ in buckets], [limit for _, limit in buckets]
