"""The tensor collectives (all_reduce, broadcast, reduce, all_gather, gather, scatter, reduce_scatter, all_to_all,
barrier), each a nonblocking MPI call on the group's communicator, returned as a Work.

Each function checks its arguments as PyTorch's gloo backend does, posts the MPI operation over the tensors'
memory (see lantern.distributed.tensors) and either returns the Work (async_op=True) or waits on it and returns
None. A process outside `group` does nothing and gets None, with PyTorch's warning.

>>> import lantern, lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> t = lantern.tensor([1.0, 2.0])
>>> dist.all_reduce(t, op=dist.ReduceOp.MAX)
>>> out = [lantern.zeros(2)]
>>> dist.all_gather(out, t); out
[tensor([1., 2.])]
>>> dist.destroy_process_group()
"""
import warnings

import numpy as np

from . import observe
from .mpi import MPI, as_bytes, reduction
from .process_group import get_rank, resolve
from .reduce_op import RedOpType, check_supported, kind_of
from .tensors import buffer_of, check_same_dtypes, check_tensor, check_tensor_list, read_only_array, shape_text
from .work import Work


def group_or_warn(group, name):
    """The ProcessGroup to run on, or None (after PyTorch's warning) when this process is not in `group`."""
    made = resolve(group)
    if made is None:
        warnings.warn(f"Running {name} on global rank {get_rank()} which does not belong to the given group.",
                      stacklevel=3)
        return None
    made.check_usable()
    return made


def group_peer(made, rank, group_rank, collective, default=None):
    """The group rank of a collective's root or peer, given as a global rank (`rank`) or a group rank; with
    neither, `default` (gather and scatter default to rank 0, broadcast and reduce need one)."""
    if rank is not None and group_rank is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    if rank is None and group_rank is None:
        if default is None:
            raise ValueError("Must specify global_rank or group_rank")
        rank = default
    if group_rank is None:
        if rank not in made.global_ranks:
            if made.global_ranks == list(range(made.size())):
                raise RuntimeError(f"ProcessGroupGloo::{collective}: invalid root rank: {rank}")
            raise ValueError(f"Global rank {rank} is not part of group {made}")
        return made.global_ranks.index(rank)
    if not 0 <= group_rank < made.size():
        raise RuntimeError(f"ProcessGroupGloo::{collective}: invalid root rank: {group_rank}")
    return group_rank


def launch(made, name, tensors, post, finish=None, async_op=False, result=None):
    """Post a collective through `post()` (which returns MPI requests) as a Work, seen by the profiler under
    PyTorch's names (lantern.distributed.observe); wait unless async_op."""
    with observe.collective(name, made) as follow:
        work = Work(made, name, post(), finish, tensors if result is None else result)
        follow(work)
        if async_op:
            work.keep_moving()
            return work
        work.wait()
    return None


def _reduction_setup(made, tensor, op, collective):
    kind = kind_of(op)
    check_supported(kind, tensor.dtype, made.backend, collective)
    return kind


def _scale_for_premul(kind, op, array):
    if kind is RedOpType.PREMUL_SUM:
        np.multiply(array, op.factor, out=array, casting="unsafe")


def _average_then(kind, made, array, write_back):
    def finish():
        if kind is RedOpType.AVG:
            np.true_divide(array, made.size(), out=array)
        write_back()
    return finish


def all_reduce(tensor, op=RedOpType.SUM, group=None, async_op=False):
    """Reduce `tensor` over the group's ranks with `op`, in place on every rank."""
    check_tensor(tensor)
    made = group_or_warn(group, "all_reduce")
    if made is None:
        return None
    kind = _reduction_setup(made, tensor, op, "all_reduce")
    array, write_back = buffer_of(tensor, "all_reduce")
    _scale_for_premul(kind, op, array)
    datatype, mpi_op = reduction(array.dtype, kind)
    post = lambda: [made.communicator.Iallreduce(MPI().IN_PLACE, [as_bytes(array), datatype], mpi_op)]
    return launch(made, "allreduce", [tensor], post, _average_then(kind, made, array, write_back), async_op)


def reduce(tensor, dst=None, op=RedOpType.SUM, group=None, async_op=False, group_dst=None):
    """Reduce `tensor` over the group's ranks into rank `dst`'s tensor."""
    check_tensor(tensor)
    made = group_or_warn(group, "reduce")
    if made is None:
        return None
    root = group_peer(made, dst, group_dst, "reduce")
    kind = _reduction_setup(made, tensor, op, "reduce")
    array, write_back = buffer_of(tensor, "reduce")
    _scale_for_premul(kind, op, array)
    datatype, mpi_op = reduction(array.dtype, kind)
    mine = [as_bytes(array), datatype]
    if made.rank() == root:
        post = lambda: [made.communicator.Ireduce(MPI().IN_PLACE, mine, mpi_op, root)]
    else:
        post = lambda: [made.communicator.Ireduce(mine, None, mpi_op, root)]
    return launch(made, "reduce", [tensor], post, _average_then(kind, made, array, write_back), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank `src`'s tensor into every rank's tensor."""
    check_tensor(tensor)
    made = group_or_warn(group, "broadcast")
    if made is None:
        return None
    root = group_peer(made, src, group_src, "broadcast")
    array, write_back = buffer_of(tensor, "broadcast")
    post = lambda: [made.communicator.Ibcast([as_bytes(array), MPI().BYTE], root)]
    return launch(made, "broadcast", [tensor], post, write_back, async_op)


def _check_same_tensors(collective, expected, tensors, what="size"):
    for index, t in enumerate(tensors):
        if t.dtype != expected.dtype:
            raise RuntimeError(f"ProcessGroupGloo::{collective}: invalid tensor type at index {index} (expected "
                               f"{expected.dtype}, got {t.dtype})")
        if tuple(t.shape) != tuple(expected.shape):
            raise RuntimeError(f"ProcessGroupGloo::{collective}: invalid tensor {what} at index {index} (expected "
                               f"{shape_text(expected.shape)}, got {shape_text(t.shape)})")


def _check_list_length(collective, tensors, made, message):
    """gloo's error for a tensor list that is not one tensor per rank; `message` formats (got, expected)."""
    if len(tensors) != made.size():
        raise RuntimeError(f"ProcessGroupGloo::{collective}: " + message.format(got=len(tensors), size=made.size()))


def _copy_into(tensors, blocks):
    """A finishing step that copies each staged block into its tensor."""
    def finish():
        for t, block in zip(tensors, blocks):
            np.copyto(t._host_array(), block.reshape(tuple(t.shape)))
    return finish


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's `tensor` into every rank's `tensor_list` (in group rank order)."""
    check_tensor_list(tensor_list, "tensor_list")
    check_tensor(tensor)
    made = group_or_warn(group, "all_gather")
    if made is None:
        return None
    check_same_dtypes(tensor_list, tensor)
    _check_list_length("allgather", tensor_list, made,
                       "invalid output tensor list at index 0 (expected length {size}, got {got})")
    _check_same_tensors("allgather", tensor, tensor_list)
    mine = read_only_array(tensor, "all_gather")
    staged = np.empty((made.size(),) + mine.shape, mine.dtype)
    post = lambda: [made.communicator.Iallgather([as_bytes(mine), MPI().BYTE], [as_bytes(staged), MPI().BYTE])]
    return launch(made, "allgather", tensor_list, post, _copy_into(tensor_list, staged), async_op)


def _check_concatenated(collective, whole, part, parts):
    """`whole` must be `parts` copies of `part` stacked along dim 0 (gloo's rule), else its error."""
    for index, chunk in enumerate(whole.chunk(parts) if whole.dim() else [whole]):
        if chunk.dtype != part.dtype or tuple(chunk.shape) != tuple(part.shape):
            raise RuntimeError(f"ProcessGroupGloo::{collective}: invalid tensor size at index {index} (expected "
                               f"{shape_text(part.shape)}, got {shape_text(chunk.shape)})")
    if whole.numel() != parts * part.numel():
        raise RuntimeError(f"ProcessGroupGloo::{collective}: invalid tensor size (expected {parts} x "
                           f"{shape_text(part.shape)}, got {shape_text(whole.shape)})")


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's `input_tensor`, concatenated along dim 0 in rank order, into `output_tensor`."""
    check_tensor(output_tensor, "output_tensor")
    check_tensor(input_tensor, "input_tensor")
    made = group_or_warn(group, "all_gather_single")
    if made is None:
        return None
    _check_concatenated("allgather", output_tensor, input_tensor, made.size())
    mine = read_only_array(input_tensor, "all_gather_single")
    out, write_back = buffer_of(output_tensor, "all_gather_single")
    post = lambda: [made.communicator.Iallgather([as_bytes(mine), MPI().BYTE], [as_bytes(out), MPI().BYTE])]
    return launch(made, "_allgather_base", [output_tensor], post, write_back, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """all_gather_single's former name, deprecated in PyTorch 2.13 (with its FutureWarning)."""
    warnings.warn("`torch.distributed.all_gather_into_tensor` is deprecated. Please use "
                  "`torch.distributed.all_gather_single` instead.", FutureWarning, stacklevel=2)
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def reduce_scatter(output, input_list, op=RedOpType.SUM, group=None, async_op=False):
    """Reduce the ranks' `input_list`s element-wise; rank i gets the reduction of everyone's input_list[i]."""
    check_tensor(output, "output")
    check_tensor_list(input_list, "input_list")
    made = group_or_warn(group, "reduce_scatter")
    if made is None:
        return None
    check_same_dtypes(output, input_list)
    if len(input_list) != made.size():
        raise RuntimeError("invalid input tensor list size, must be world size")
    _check_same_tensors("reduce_scatter", output, input_list)
    kind = _reduction_setup(made, output, op, "reduce_scatter")
    staged = np.stack([read_only_array(t, "reduce_scatter") for t in input_list]) if input_list else None
    return _post_reduce_scatter(made, "reduce_scatter", output, staged, kind, op, async_op)


def reduce_scatter_single(output, input, op=RedOpType.SUM, group=None, async_op=False):
    """Reduce the ranks' `input`s element-wise; rank i gets the i-th of size() equal chunks along dim 0."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    made = group_or_warn(group, "reduce_scatter_single")
    if made is None:
        return None
    _check_concatenated("reduce_scatter", input, output, made.size())
    kind = _reduction_setup(made, output, op, "reduce_scatter_single")
    staged = read_only_array(input, "reduce_scatter_single")
    if kind is RedOpType.PREMUL_SUM:
        staged = staged.copy()  # scaled below: the input itself stays as it was
    return _post_reduce_scatter(made, "_reduce_scatter_base", output, staged, kind, op, async_op)


def reduce_scatter_tensor(output, input, op=RedOpType.SUM, group=None, async_op=False):
    """reduce_scatter_single's former name, deprecated in PyTorch 2.13 (with its FutureWarning)."""
    warnings.warn("`torch.distributed.reduce_scatter_tensor` is deprecated. Please use "
                  "`torch.distributed.reduce_scatter_single` instead.", FutureWarning, stacklevel=2)
    return reduce_scatter_single(output, input, op, group, async_op)


def _post_reduce_scatter(made, name, output, staged, kind, op, async_op):
    _scale_for_premul(kind, op, staged)
    out, write_back = buffer_of(output, name)
    datatype, mpi_op = reduction(out.dtype, kind)
    post = lambda: [made.communicator.Ireduce_scatter_block([as_bytes(staged), datatype],
                                                            [as_bytes(out), datatype], mpi_op)]
    return launch(made, name, [output], post, _average_then(kind, made, out, write_back), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's `tensor` into rank `dst`'s `gather_list` (in group rank order)."""
    check_tensor(tensor)
    made = group_or_warn(group, "gather")
    if made is None:
        return None
    root = _root(made, "gather", tensor, gather_list, dst, group_dst, "destination")
    at_root = made.rank() == root
    mine = read_only_array(tensor, "gather")
    staged = None
    if at_root:
        _check_root_list(made, "gather", tensor, gather_list, "output")
        staged = np.empty((made.size(),) + mine.shape, mine.dtype)
    receive = [as_bytes(staged), MPI().BYTE] if at_root else None
    post = lambda: [made.communicator.Igather([as_bytes(mine), MPI().BYTE], receive, root)]
    finish = _copy_into(gather_list, staged) if at_root else None
    return launch(made, "gather", [tensor], post, finish, async_op, result=gather_list or [])


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank `src`'s `scatter_list[i]` into rank i's `tensor`."""
    check_tensor(tensor)
    made = group_or_warn(group, "scatter")
    if made is None:
        return None
    root = _root(made, "scatter", tensor, scatter_list, src, group_src, "source")
    at_root = made.rank() == root
    send = None
    if at_root:
        _check_root_list(made, "scatter", tensor, scatter_list, "input")
        send = [as_bytes(np.stack([read_only_array(t, "scatter") for t in scatter_list])), MPI().BYTE]
    out, write_back = buffer_of(tensor, "scatter")
    post = lambda: [made.communicator.Iscatter(send, [as_bytes(out), MPI().BYTE], root)]
    return launch(made, "scatter", [tensor], post, write_back, async_op)


def _root(made, name, tensor, tensors, peer, group_peer_rank, role):
    """gather's and scatter's common checks: the list's dtypes, the root (`role` 'destination' or 'source'), and a
    list given on the root rank and on no other; returns the root."""
    check_same_dtypes(tensor, tensors or [])
    root = group_peer(made, peer, group_peer_rank, name, default=0)
    at_root = made.rank() == root
    if at_root and not tensors:
        raise ValueError(f"Argument ``{name}_list`` must be specified on {role} rank.")
    if not at_root and tensors:
        raise ValueError(f"Argument ``{name}_list`` must NOT be specified on non-{role} ranks.")
    return root


def _check_root_list(made, name, tensor, tensors, direction):
    """The root's list: tensors, one per rank, each like `tensor` (`direction` 'output' or 'input')."""
    check_tensor_list(tensors, f"{name}_list")
    _check_list_length(name, tensors, made, f"Incorrect {direction} list size {{got}}. {direction.capitalize()} list "
                       "size should be {size}, same as size of the process group.")
    _check_same_tensors(name, tensor, tensors)


def _counts_and_offsets(sizes):
    counts = np.asarray(sizes, dtype=np.int64)
    return counts, np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank i's `input_tensor_list[j]` into rank j's `output_tensor_list[i]` (sizes may differ per pair)."""
    check_tensor_list(output_tensor_list, "output_tensor_list")
    check_tensor_list(input_tensor_list, "input_tensor_list")
    made = group_or_warn(group, "all_to_all")
    if made is None:
        return None
    check_same_dtypes(output_tensor_list, input_tensor_list)
    _check_list_length("alltoall", input_tensor_list, made, "input tensor list size {got} does not match world size "
                       "{size}")
    _check_list_length("alltoall", output_tensor_list, made, "output tensor list size {got} does not match world "
                       "size {size}")
    sending = [read_only_array(t, "all_to_all") for t in input_tensor_list]
    send = np.concatenate([as_bytes(a) for a in sending])
    send_counts = _counts_and_offsets([a.nbytes for a in sending])
    receive_counts = _counts_and_offsets([t.numel() * t.element_size() for t in output_tensor_list])
    received = np.empty(int(receive_counts[0].sum()), np.uint8)
    post = lambda: [made.communicator.Ialltoallv([send, send_counts, MPI().BYTE],
                                                 [received, receive_counts, MPI().BYTE])]

    def finish():
        for t, (count, offset) in zip(output_tensor_list, zip(*receive_counts)):
            block = received[offset:offset + count].view(t._host_array().dtype)
            np.copyto(t._host_array(), block.reshape(tuple(t.shape)))
    return launch(made, "alltoall", output_tensor_list, post, finish, async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """all_to_all over dim 0 of one tensor: rows split among the ranks (equally unless split sizes say)."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    made = group_or_warn(group, "all_to_all_single")
    if made is None:
        return None
    check_same_dtypes(output, input)
    row_bytes = [t.element_size() * (t.numel() // t.shape[0] if t.dim() and t.shape[0] else 0) for t in (input, output)]
    send_counts = _counts_and_offsets(_split_bytes(input, input_split_sizes, made.size(), row_bytes[0]))
    receive_counts = _counts_and_offsets(_split_bytes(output, output_split_sizes, made.size(), row_bytes[1]))
    mine = read_only_array(input, "all_to_all_single")
    out, write_back = buffer_of(output, "all_to_all_single")
    post = lambda: [made.communicator.Ialltoallv([as_bytes(mine), send_counts, MPI().BYTE],
                                                 [as_bytes(out), receive_counts, MPI().BYTE])]
    return launch(made, "alltoall_base", [output], post, write_back, async_op)


def _split_bytes(tensor, split_sizes, parts, row_bytes):
    rows = tensor.shape[0] if tensor.dim() else 1
    if split_sizes is None or len(split_sizes) == 0:
        if rows % parts:
            raise RuntimeError(f"Tensor's dim 0 does not divide equally across group size (dim 0 is {rows}, "
                               f"group size is {parts})")
        split_sizes = [rows // parts] * parts
    if sum(split_sizes) != rows:
        raise RuntimeError("Split sizes doesn't match total dim 0 size")
    if len(split_sizes) != parts:
        raise RuntimeError(f"Split sizes {list(split_sizes)}: one per rank expected (group size {parts})")
    return [n * row_bytes for n in split_sizes]


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group has reached this call (or raise after `timeout`)."""
    made = group_or_warn(group, "barrier")
    if made is None:
        return None
    with observe.collective("barrier", made) as follow:
        work = Work(made, "barrier", [made.communicator.Ibarrier()])
        follow(work)
        if async_op:
            work.keep_moving()
            return work
        work.wait(timeout)
    return None
