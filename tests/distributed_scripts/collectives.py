"""Rank script: every collective of lantern.distributed against its definition, computed locally from what each
rank contributes (rank r's data is `data(r, ...)`, known to every rank). Run by tests/test_distributed_collectives.py
under mpiexec with 2 and 4 ranks."""
import time
import warnings

import numpy as np

import lantern
from distributed_harness import Checks

checks = Checks()


def data(rank, shape=(3, 4), dtype=np.float32):
    """Rank `rank`'s contribution: small integers (exact in every dtype), different on every rank."""
    values = np.random.default_rng(rank).integers(1, 5, size=shape)
    return values.astype(dtype)


def everyone(size, shape=(3, 4), dtype=np.float32):
    return [data(r, shape, dtype) for r in range(size)]


@checks.check
def ranks_and_sizes(dist, rank, size):
    assert dist.is_initialized() and dist.is_available()
    assert 0 <= rank < size and size == dist.get_world_size(dist.group.WORLD)
    assert dist.get_backend() == "gloo"
    assert dist.get_process_group_ranks(dist.group.WORLD) == list(range(size))


@checks.check
def barrier_waits_for_everyone(dist, rank, size):
    dist.barrier()
    work = dist.barrier(async_op=True)
    assert work.wait() is True and work.is_completed()


@checks.check
def broadcast_copies_the_source(dist, rank, size):
    for src in range(size):
        t = lantern.from_numpy(data(rank))
        assert dist.broadcast(t, src=src) is None
        np.testing.assert_array_equal(t.numpy(), data(src))


@checks.check
def broadcast_into_a_non_contiguous_tensor(dist, rank, size):
    t = lantern.from_numpy(data(rank, (4, 3))).t()
    dist.broadcast(t, src=size - 1)
    np.testing.assert_array_equal(t.numpy(), data(size - 1, (4, 3)).T)


@checks.check
def all_reduce_sum_is_the_sum(dist, rank, size):
    t = lantern.from_numpy(data(rank))
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.numpy(), np.sum(everyone(size), axis=0))


@checks.check
def all_reduce_async_returns_a_work(dist, rank, size):
    t = lantern.from_numpy(data(rank))
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed() and work.is_success() and work.exception() is None
    assert work.result()[0] is t
    np.testing.assert_array_equal(t.numpy(), np.sum(everyone(size), axis=0))


@checks.check
def all_reduce_moves_no_copy_of_a_contiguous_tensor(dist, rank, size):
    t = lantern.from_numpy(data(rank))
    before = t.data_ptr()
    dist.all_reduce(t)
    assert t.data_ptr() == before
    np.testing.assert_array_equal(t.numpy(), np.sum(everyone(size), axis=0))


DTYPES = {"float32": (np.float32, lantern.float32), "float64": (np.float64, lantern.float64),
          "int64": (np.int64, lantern.int64), "int32": (np.int32, lantern.int32), "uint8": (np.uint8, lantern.uint8),
          "bool": (np.bool_, lantern.bool), "bfloat16": (lantern.bfloat16.np, lantern.bfloat16),
          "float16": (np.float16, lantern.float16), "complex64": (np.complex64, lantern.complex64)}
INTEGRAL = ("int64", "int32", "uint8", "bool")
DEFINITIONS = {  # each op's definition on two ranks' arrays; bool SUM/PRODUCT are OR/AND as gloo's
    "SUM": lambda a, b: np.logical_or(a, b) if a.dtype == np.bool_ else a + b,
    "PRODUCT": lambda a, b: np.logical_and(a, b) if a.dtype == np.bool_ else a * b,
    "MIN": np.minimum, "MAX": np.maximum, "BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}


def contribution(rank, dtype_name, shape=(3, 4)):
    np_dtype = DTYPES[dtype_name][0]
    if dtype_name == "bool":
        return data(rank, shape, np.int64) % 2 == 0
    values = data(rank, shape, np.float64)
    if dtype_name == "complex64":
        return (values + 1j * data(rank + 100, shape, np.float64)).astype(np_dtype)
    return values.astype(np_dtype)


def definition(op, size, dtype_name, shape=(3, 4)):
    arrays = [contribution(r, dtype_name, shape) for r in range(size)]
    result = arrays[0]
    for a in arrays[1:]:
        result = DEFINITIONS[op](result, a).astype(result.dtype)
    return result


def applies(op, dtype_name):
    if dtype_name == "complex64":
        return op == "SUM"
    return op in ("SUM", "PRODUCT", "MIN", "MAX") or dtype_name in INTEGRAL


def assert_equal(actual, expected, dtype_name):
    if dtype_name in ("bfloat16", "float16", "float32", "complex64", "float64"):
        np.testing.assert_allclose(actual.astype(np.complex128 if dtype_name == "complex64" else np.float64),
                                   expected.astype(np.complex128 if dtype_name == "complex64" else np.float64),
                                   rtol=1e-2 if dtype_name in ("bfloat16", "float16") else 1e-6)
    else:
        np.testing.assert_array_equal(actual, expected)


def as_tensor(array, dtype_name):
    return lantern.tensor(array.astype(np.float32) if dtype_name == "bfloat16" else array, dtype=DTYPES[dtype_name][1])


def values_of(tensor):
    return tensor.float().numpy() if tensor.dtype == lantern.bfloat16 else tensor.numpy()


def _all_reduce_check(op):
    def check(dist, rank, size):
        for dtype_name in DTYPES:
            if not applies(op, dtype_name):
                continue
            t = as_tensor(contribution(rank, dtype_name), dtype_name)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            assert t.dtype == DTYPES[dtype_name][1]
            expected = definition(op, size, dtype_name)
            assert_equal(values_of(t), expected.astype(np.float32) if dtype_name == "bfloat16" else expected,
                         dtype_name)
    check.__name__ = f"all_reduce_{op.lower()}_every_dtype"
    return check


for _op in DEFINITIONS:
    checks.check(_all_reduce_check(_op))


@checks.check
def all_reduce_avg_divides_the_sum(dist, rank, size):
    for dtype_name in ("float32", "float64", "bfloat16", "complex64"):
        t = as_tensor(contribution(rank, dtype_name), dtype_name)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        expected = definition("SUM", size, dtype_name).astype(np.complex128 if dtype_name == "complex64" else
                                                               np.float64) / size
        np.testing.assert_allclose(values_of(t), expected, rtol=1e-2)
    try:
        dist.all_reduce(lantern.ones(2, dtype=lantern.int64), op=dist.ReduceOp.AVG)
        raise AssertionError("AVG of an int64 tensor did not raise")
    except RuntimeError as error:
        assert "can't be cast to the desired output type Long" in str(error)


@checks.check
def all_reduce_of_a_non_contiguous_tensor(dist, rank, size):
    base = lantern.from_numpy(data(rank, (4, 6)))
    view = base[:, ::2]
    untouched = base[:, 1::2].clone()
    dist.all_reduce(view, op=dist.ReduceOp.MAX)
    np.testing.assert_array_equal(view.numpy(), np.max(everyone(size, (4, 6)), axis=0)[:, ::2])
    np.testing.assert_array_equal(base[:, 1::2].numpy(), untouched.numpy())


@checks.check
def premul_sum_needs_the_mpi_backend(dist, rank, size):
    try:
        dist.all_reduce(lantern.ones(2), op=dist._make_nccl_premul_sum(2.0))
        raise AssertionError("PREMUL_SUM on gloo did not raise")
    except RuntimeError as error:
        assert str(error) == "Cannot use ReduceOp.PREMUL_SUM with Gloo"
    mpi_group = dist.new_group(backend="mpi")
    t = lantern.from_numpy(data(rank))
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5), group=mpi_group)
    np.testing.assert_allclose(t.numpy(), 0.5 * np.sum(everyone(size), axis=0))
    dist.destroy_process_group(mpi_group)


@checks.check
def reduce_reaches_the_destination(dist, rank, size):
    for dst in range(size):
        for op, combine in (("SUM", np.sum), ("MAX", np.max)):
            t = lantern.from_numpy(data(rank))
            dist.reduce(t, dst=dst, op=getattr(dist.ReduceOp, op))
            if rank == dst:
                np.testing.assert_array_equal(t.numpy(), combine(everyone(size), axis=0))


@checks.check
def all_gather_fills_the_list_in_rank_order(dist, rank, size):
    out = [lantern.zeros(3, 4) for _ in range(size)]
    dist.all_gather(out, lantern.from_numpy(data(rank)))
    for r in range(size):
        np.testing.assert_array_equal(out[r].numpy(), data(r))
    strided = [lantern.zeros(4, 3).t() for _ in range(size)]
    dist.all_gather(strided, lantern.from_numpy(data(rank)))
    for r in range(size):
        np.testing.assert_array_equal(strided[r].numpy(), data(r))


@checks.check
def all_gather_into_tensor_concatenates_along_dim_0(dist, rank, size):
    out = lantern.zeros(size * 3, 4)
    before = out.data_ptr()
    dist.all_gather_into_tensor(out, lantern.from_numpy(data(rank)))
    assert out.data_ptr() == before
    np.testing.assert_array_equal(out.numpy(), np.concatenate(everyone(size)))


@checks.check
def reduce_scatter_gives_rank_i_the_reduction_of_entry_i(dist, rank, size):
    inputs = [lantern.from_numpy(data(rank * size + i)) for i in range(size)]
    out = lantern.zeros(3, 4)
    dist.reduce_scatter(out, inputs)
    expected = np.sum([data(r * size + rank) for r in range(size)], axis=0)
    np.testing.assert_array_equal(out.numpy(), expected)
    dist.reduce_scatter(out, inputs, op=dist.ReduceOp.MIN)
    np.testing.assert_array_equal(out.numpy(), np.min([data(r * size + rank) for r in range(size)], axis=0))


@checks.check
def reduce_scatter_tensor_gives_rank_i_chunk_i(dist, rank, size):
    whole = lantern.from_numpy(data(rank, (size * 2, 3)))
    kept = whole.clone()
    out = lantern.zeros(2, 3)
    dist.reduce_scatter_tensor(out, whole, op=dist.ReduceOp.AVG)
    expected = np.mean(everyone(size, (size * 2, 3)), axis=0)[rank * 2:rank * 2 + 2]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(whole.numpy(), kept.numpy())


@checks.check
def gather_collects_at_the_destination(dist, rank, size):
    for dst in range(size):
        gathered = [lantern.zeros(3, 4) for _ in range(size)] if rank == dst else None
        dist.gather(lantern.from_numpy(data(rank)), gathered, dst=dst)
        if rank == dst:
            for r in range(size):
                np.testing.assert_array_equal(gathered[r].numpy(), data(r))


@checks.check
def scatter_hands_out_the_sources_list(dist, rank, size):
    for src in range(size):
        pieces = [lantern.from_numpy(data(100 * src + r)) for r in range(size)] if rank == src else None
        out = lantern.zeros(4, 3).t()
        dist.scatter(out, pieces, src=src)
        np.testing.assert_array_equal(out.numpy(), data(100 * src + rank))


@checks.check
def all_to_all_exchanges_blocks_of_any_size(dist, rank, size):
    sending = [lantern.full((rank + peer + 1,), float(10 * rank + peer)) for peer in range(size)]
    receiving = [lantern.zeros(peer + rank + 1) for peer in range(size)]
    dist.all_to_all(receiving, sending)
    for peer in range(size):
        np.testing.assert_array_equal(receiving[peer].numpy(), np.full(peer + rank + 1, 10.0 * peer + rank))


@checks.check
def all_to_all_single_splits_dim_0(dist, rank, size):
    send = lantern.from_numpy(np.repeat(np.arange(size, dtype=np.float32)[:, None] + 10 * rank, 2, axis=1))
    out = lantern.zeros(size, 2)
    dist.all_to_all_single(out, send)
    np.testing.assert_array_equal(out.numpy()[:, 0], [10 * peer + rank for peer in range(size)])
    input_splits = [peer + 1 for peer in range(size)]  # rank r sends peer+1 rows to each peer
    output_splits = [rank + 1] * size
    send = lantern.full((sum(input_splits), 3), float(rank))
    out = lantern.zeros(sum(output_splits), 3)
    dist.all_to_all_single(out, send, output_splits, input_splits)
    np.testing.assert_array_equal(out.numpy()[:, 0], np.repeat(np.arange(size), rank + 1))


@checks.check
def send_and_recv_around_a_ring(dist, rank, size):
    right, left = (rank + 1) % size, (rank - 1) % size
    received = lantern.zeros(3, 4)
    if rank % 2 == 0:
        dist.send(lantern.from_numpy(data(rank)), dst=right)
        assert dist.recv(received, src=left) == left
    else:
        assert dist.recv(received, src=left) == left
        dist.send(lantern.from_numpy(data(rank)), dst=right)
    np.testing.assert_array_equal(received.numpy(), data(left))


@checks.check
def isend_irecv_and_receiving_from_anyone(dist, rank, size):
    if rank == 0:
        senders = set()
        for _ in range(size - 1):
            t = lantern.zeros(1)
            sender = dist.recv(t, tag=7)
            assert t.item() == sender
            senders.add(sender)
        assert senders == set(range(1, size))
        works = [dist.isend(lantern.full((2,), float(peer)), dst=peer) for peer in range(1, size)]
        for work in works:
            work.wait()
    else:
        dist.send(lantern.full((1,), float(rank)), dst=0, tag=7)
        t = lantern.zeros(2)
        work = dist.irecv(t, src=0)
        assert work.wait() and work.source_rank() == 0
        np.testing.assert_array_equal(t.numpy(), [rank, rank])


@checks.check
def batch_isend_irecv_runs_every_op(dist, rank, size):
    right, left = (rank + 1) % size, (rank - 1) % size
    received = lantern.zeros(2)
    ops = [dist.P2POp(dist.isend, lantern.full((2,), float(rank)), right),
           dist.P2POp(dist.irecv, received, left)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    np.testing.assert_array_equal(received.numpy(), [left, left])


@checks.check
def many_async_collectives_in_flight(dist, rank, size):
    tensors = [lantern.full((5,), float(rank + i)) for i in range(6)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    for i in reversed(range(6)):
        works[i].wait()
        np.testing.assert_array_equal(tensors[i].numpy(), np.full(5, sum(r + i for r in range(size))))


@checks.check
def object_collectives_move_python_objects(dist, rank, size):
    objects = [{"from": rank}, [rank] * 3, None] if rank == 1 else [None, None, None]
    dist.broadcast_object_list(objects, src=1)
    assert objects == [{"from": 1}, [1, 1, 1], None]
    gathered = [None] * size
    dist.all_gather_object(gathered, ("rank", rank, "x" * rank))
    assert gathered == [("rank", r, "x" * r) for r in range(size)]
    at_root = [None] * size if rank == 0 else None
    dist.gather_object({rank: rank * rank}, at_root, dst=0)
    if rank == 0:
        assert at_root == [{r: r * r} for r in range(size)]
    out = [None]
    dist.scatter_object_list(out, [f"for {r}" * (r + 1) for r in range(size)] if rank == 0 else None, src=0)
    assert out == [f"for {rank}" * (rank + 1)]
    if rank == 0:
        dist.send_object_list([{"a": 1}, "two"], dst=size - 1)
    elif rank == size - 1:
        received = [None, None]
        assert dist.recv_object_list(received, src=0) == 0
        assert received == [{"a": 1}, "two"]


@checks.check
def new_group_runs_collectives_among_its_ranks(dist, rank, size):
    evens = list(range(0, size, 2))
    group = dist.new_group(evens)
    if rank % 2:
        assert group == dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(group) == -1 and dist.get_world_size(group) == -1
        t = lantern.ones(2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.all_reduce(t, group=group) is None and t.tolist() == [1.0, 1.0]
        assert str(caught[0].message) == f"Running all_reduce on global rank {rank} which does not belong to the " \
                                         "given group."
        return
    assert dist.get_rank(group) == evens.index(rank) and dist.get_world_size(group) == len(evens)
    assert dist.get_process_group_ranks(group) == evens
    assert dist.get_global_rank(group, len(evens) - 1) == evens[-1]
    t = lantern.full((2,), float(rank))
    dist.all_reduce(t, group=group)
    np.testing.assert_array_equal(t.numpy(), [sum(evens)] * 2)
    t = lantern.full((2,), float(rank))
    dist.broadcast(t, src=evens[-1], group=group)  # src is a global rank, as in PyTorch
    np.testing.assert_array_equal(t.numpy(), [evens[-1]] * 2)
    t = lantern.full((2,), float(rank))
    dist.broadcast(t, group=group, group_src=0)
    np.testing.assert_array_equal(t.numpy(), [0, 0])
    dist.destroy_process_group(group)


@checks.check
def new_group_with_local_synchronization_is_called_by_its_ranks_only(dist, rank, size):
    ends = [0, size - 1]
    if rank in ends:
        group = dist.new_group(ends, use_local_synchronization=True)
        t = lantern.full((1,), float(rank))
        dist.all_reduce(t, group=group)
        assert t.item() == size - 1 and dist.get_world_size(group) == 2
        dist.destroy_process_group(group)
    dist.barrier()


@checks.check
def every_collective_async_finishes_in_wait(dist, rank, size):
    """async_op=True: outputs (staged ones written back, AVG divided) are right once wait() returns."""
    strided = lantern.from_numpy(data(rank, (4, 3))).t()
    averaged = lantern.from_numpy(data(rank))
    gathered = [lantern.zeros(3, 4) for _ in range(size)]
    whole = lantern.zeros(size * 3, 4)
    scattered = lantern.zeros(3, 4)
    works = [dist.all_reduce(strided, async_op=True),
             dist.all_reduce(averaged, op=dist.ReduceOp.AVG, async_op=True),
             dist.all_gather(gathered, lantern.from_numpy(data(rank)), async_op=True),
             dist.all_gather_single(whole, lantern.from_numpy(data(rank)), async_op=True),
             dist.scatter(scattered, [lantern.from_numpy(data(10 + r)) for r in range(size)] if rank == 0 else None,
                          src=0, async_op=True)]
    for work in works:
        assert work.wait() is True
    np.testing.assert_array_equal(strided.numpy(), np.sum(everyone(size, (4, 3)), axis=0).T)
    np.testing.assert_allclose(averaged.numpy(), np.mean(everyone(size), axis=0), rtol=1e-6)
    for r in range(size):
        np.testing.assert_array_equal(gathered[r].numpy(), data(r))
    np.testing.assert_array_equal(whole.numpy(), np.concatenate(everyone(size)))
    np.testing.assert_array_equal(scattered.numpy(), data(10 + rank))


@checks.check
def object_collectives_on_a_subgroup(dist, rank, size):
    odd_out = list(range(0, size, 2))
    group = dist.new_group(odd_out)
    if rank in odd_out:
        gathered = [None] * len(odd_out)
        dist.all_gather_object(gathered, f"rank {rank}", group=group)
        assert gathered == [f"rank {r}" for r in odd_out]
        objects = [rank] if rank == odd_out[-1] else [None]
        dist.broadcast_object_list(objects, src=odd_out[-1], group=group)
        assert objects == [odd_out[-1]]
        dist.destroy_process_group(group)


@checks.check
def an_async_receive_completes_while_the_receiver_computes(dist, rank, size):
    """The progress thread moves a large message into an irecv's tensor while its rank makes no MPI call."""
    big = 4 * 2**20
    if rank == 0:
        dist.send(lantern.arange(big, dtype=lantern.float32), dst=1)
    elif rank == 1:
        received = lantern.zeros(big)
        work = dist.irecv(received, src=0)
        deadline = time.monotonic() + 30
        while received.numpy()[-1] != big - 1 and time.monotonic() < deadline:
            time.sleep(0.01)  # no MPI call here: only the progress thread can have moved the data
        assert received.numpy()[-1] == big - 1, "the message did not arrive before wait()"
        work.wait()
    dist.barrier()


if __name__ == "__main__":
    checks.run()
