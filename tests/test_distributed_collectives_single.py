"""lantern.distributed in one process (a world of one, no launcher), against torch's gloo in the same process:
the same results, return values and errors (class and message) for each collective, the group queries, and the
init_process_group rules; plus lantern's own rendezvous errors, which torch has no counterpart for."""
import datetime
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.distributed as tdist

import lantern
import lantern.distributed as ldist


@pytest.fixture
def worlds():
    """Both libraries' default group over a world of one, for one test."""
    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    ldist.init_process_group("gloo", rank=0, world_size=1)
    yield
    tdist.destroy_process_group()
    ldist.destroy_process_group()


def both(fn, *arrays):
    """fn(dist, lib, *tensors) on torch and on lantern: (torch's outcome, lantern's), each a value or the error."""
    outcomes = []
    for dist, lib in ((tdist, torch), (ldist, lantern)):
        tensors = [lib.from_numpy(a.copy()) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                outcomes.append((fn(dist, lib, *tensors), tensors))
            except Exception as error:  # compared below: class and message
                outcomes.append((error, None))
    return outcomes


def assert_same_error(fn, *arrays):
    (theirs, _), (ours, _) = both(fn, *arrays)
    assert isinstance(theirs, Exception), f"torch did not raise: {theirs}"
    assert type(ours) is type(theirs) or isinstance(ours, type(theirs)), (ours, theirs)
    assert str(ours).splitlines()[0].replace("lantern.", "torch.") == str(theirs).splitlines()[0]


def assert_same_result(fn, *arrays):
    (theirs, their_tensors), (ours, our_tensors) = both(fn, *arrays)
    assert not isinstance(theirs, Exception), theirs
    assert not isinstance(ours, Exception), ours
    assert (theirs is None) == (ours is None)
    for t, o in zip(their_tensors, our_tensors):
        assert str(o.dtype) == str(t.dtype).replace("torch", "lantern")
        np.testing.assert_array_equal(o.float().numpy() if o.dtype == lantern.bfloat16 else o.numpy(),
                                      t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy())


def _waited(work):
    work.wait()
    return work


X = np.arange(12, dtype=np.float32).reshape(3, 4)
DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool", "float16", "complex64"]


@pytest.mark.parametrize("op", ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_all_reduce_of_every_op_and_dtype(worlds, op, dtype):
    array = (X % 3).astype(dtype)
    fn = lambda dist, lib, t: dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    (theirs, _), _ = both(fn, array)
    (assert_same_error if isinstance(theirs, Exception) else assert_same_result)(fn, array)


def test_premul_sum_is_refused_by_gloo(worlds):
    assert_same_error(lambda dist, lib, t: dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0)), X)


@pytest.mark.parametrize("name, fn", [
    ("broadcast", lambda dist, lib, t: dist.broadcast(t, src=0)),
    ("reduce", lambda dist, lib, t: dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)),
    ("all_gather", lambda dist, lib, t: dist.all_gather([lib.zeros(3, 4)], t)),
    ("all_gather_into_tensor", lambda dist, lib, t: dist.all_gather_into_tensor(lib.zeros(3, 4), t)),
    ("reduce_scatter", lambda dist, lib, t: dist.reduce_scatter(lib.zeros(3, 4), [t])),
    ("reduce_scatter_tensor", lambda dist, lib, t: dist.reduce_scatter_tensor(lib.zeros(3, 4), t)),
    ("gather", lambda dist, lib, t: dist.gather(t, [lib.zeros(3, 4)], dst=0)),
    ("scatter", lambda dist, lib, t: dist.scatter(lib.zeros(3, 4), [t], src=0)),
    ("all_to_all", lambda dist, lib, t: dist.all_to_all([lib.zeros(3, 4)], [t])),
    ("all_to_all_single", lambda dist, lib, t: dist.all_to_all_single(lib.zeros(3, 4), t)),
    ("barrier", lambda dist, lib, t: dist.barrier()),
    ("gather to rank 0 by default", lambda dist, lib, t: dist.gather(t, [lib.zeros(3, 4)])),
    ("scatter from rank 0 by default", lambda dist, lib, t: dist.scatter(lib.zeros(3, 4), [t])),
    ("objects from rank 0 by default", lambda dist, lib, t: (dist.broadcast_object_list([1]),
                                                             dist.gather_object(1, [None]),
                                                             dist.scatter_object_list([None], [1]))),
    ("async all_reduce", lambda dist, lib, t: dist.all_reduce(t, async_op=True).wait()),
    ("async broadcast result", lambda dist, lib, t: _waited(dist.broadcast(t, 0, async_op=True)).result()[0] is t),
])
def test_each_collective_in_a_world_of_one(worlds, name, fn):
    assert_same_result(fn, X)


@pytest.mark.parametrize("name, fn", [
    ("broadcast from a rank outside the world", lambda dist, lib, t: dist.broadcast(t, src=3)),
    ("all_reduce of a list", lambda dist, lib, t: dist.all_reduce([t])),
    ("all_gather into a list of the wrong sizes", lambda dist, lib, t: dist.all_gather([lib.zeros(3)], t)),
    ("all_gather into a list of the wrong dtype",
     lambda dist, lib, t: dist.all_gather([lib.zeros(3, 4, dtype=lib.int64)], t)),
    ("all_gather_into_tensor of the wrong size", lambda dist, lib, t: dist.all_gather_into_tensor(lib.zeros(5), t)),
    ("gather without a list at the destination", lambda dist, lib, t: dist.gather(t, None, dst=0)),
    ("scatter without a list at the source", lambda dist, lib, t: dist.scatter(t, None, src=0)),
    ("send to oneself", lambda dist, lib, t: dist.send(t, dst=0)),
    ("new_group with a rank outside the world", lambda dist, lib, t: dist.new_group([1])),
    ("bitwise reduction of floats", lambda dist, lib, t: dist.all_reduce(t, op=dist.ReduceOp.BAND)),
    ("MIN of complex numbers", lambda dist, lib, t: dist.all_reduce(t.to(lib.complex64), op=dist.ReduceOp.MIN)),
    ("AVG of integers", lambda dist, lib, t: dist.all_reduce(t.long(), op=dist.ReduceOp.AVG)),
    ("initializing twice", lambda dist, lib, t: dist.init_process_group("gloo")),
    ("broadcast without a source", lambda dist, lib, t: dist.broadcast(t)),
    ("reduce without a destination", lambda dist, lib, t: dist.reduce(t)),
    ("broadcast from a global and a group rank", lambda dist, lib, t: dist.broadcast(t, src=0, group_src=0)),
    ("isend to no one", lambda dist, lib, t: dist.isend(t)),
    ("isend to a global and a group rank", lambda dist, lib, t: dist.isend(t, dst=0, group_dst=0)),
    ("all_gather into a list per rank too many", lambda dist, lib, t: dist.all_gather([t, t], t)),
    ("reduce_scatter from a list per rank too many", lambda dist, lib, t: dist.reduce_scatter(t, [t, t])),
    ("gather into a list per rank too many", lambda dist, lib, t: dist.gather(t, [t, t])),
    ("scatter from a list per rank too many", lambda dist, lib, t: dist.scatter(t, [t, t])),
    ("scatter of the wrong size", lambda dist, lib, t: dist.scatter(t, [t[:2]])),
    ("all_to_all with a list per rank too many", lambda dist, lib, t: dist.all_to_all([t, t], [t, t])),
    ("all_to_all_single with splits that miss dim 0",
     lambda dist, lib, t: dist.all_to_all_single(lib.zeros(3, 4), t, [1], [2])),
])
def test_misuse_raises_torchs_error(worlds, name, fn):
    assert_same_error(fn, X)


def test_group_queries(worlds):
    for dist in (tdist, ldist):
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        assert dist.get_backend() == "gloo" and dist.get_process_group_ranks(dist.group.WORLD) == [0]
        assert dist.group.WORLD is dist.GroupMember.WORLD and dist.group.WORLD.size() == 1
        sub = dist.new_group([0])
        assert dist.get_rank(sub) == 0 and dist.get_world_size(sub) == 1 and dist.get_global_rank(sub, 0) == 0
        dist.destroy_process_group(sub)


def test_work_handles_match(worlds):
    for dist, lib in ((tdist, torch), (ldist, lantern)):
        t = lib.ones(3)
        work = dist.all_reduce(t, async_op=True)
        assert work.wait() is True
        assert work.is_completed() and work.is_success() and work.exception() is None
        assert work.result()[0] is t


def test_recv_from_anyone_in_a_world_of_one_is_refused_by_neither(worlds):
    """No peer exists, so torch and lantern both leave an any-source receive pending."""
    for dist, lib in ((tdist, torch), (ldist, lantern)):
        work = dist.irecv(lib.zeros(1))
        assert not work.is_completed()


def test_the_queries_and_errors_outside_a_group():
    for dist in (tdist, ldist):
        assert not dist.is_initialized()
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            dist.get_world_size()
        with pytest.raises(AssertionError, match="Process group cannot be None"):
            dist.destroy_process_group()


def test_init_process_group_argument_errors():
    for dist in (tdist, ldist):
        with pytest.raises(TypeError, match="Expected timeout argument to be of type datetime.timedelta, got 5"):
            dist.init_process_group("gloo", timeout=5, rank=0, world_size=1, init_method="tcp://127.0.0.1:1")
        with pytest.raises(RuntimeError, match="No rendezvous handler for bogus://"):
            dist.init_process_group("gloo", init_method="bogus://x", rank=0, world_size=1)
        assert not dist.is_initialized()


def test_env_rendezvous_reads_torchruns_variables(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    ldist.init_process_group("mpi", timeout=datetime.timedelta(seconds=30))
    assert ldist.get_backend() == "mpi" and ldist.get_world_size() == 1
    ldist.destroy_process_group()


def test_torchruns_variables_without_an_mpi_launcher_name_the_launcher(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(RuntimeError, match=r"WORLD_SIZE is 2 but this process was not started by an MPI launcher .*"
                                           r"python -m lantern.distributed.run --nproc-per-node 2"):
        ldist.init_process_group("gloo")
    assert not ldist.is_initialized()


def test_a_rank_mpi_did_not_give_is_refused():
    with pytest.raises(ValueError, match="rank is 3 but MPI gave this process rank 0"):
        ldist.init_process_group("gloo", rank=3, world_size=1)


def test_nccl_is_not_built_in():
    with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
        ldist.init_process_group("nccl", rank=0, world_size=1)


def test_a_works_future_and_its_chain(worlds):
    results = []
    for dist, lib in ((tdist, torch), (ldist, lantern)):
        t = lib.ones(3)
        future = dist.all_reduce(t, async_op=True).get_future()
        doubled = future.then(lambda f: f.value()[0] * 2)
        results.append((doubled.wait().tolist(), future.done(), future.value()[0] is t))
    assert results[0] == results[1] == ([2.0, 2.0, 2.0], True, True)


def test_the_small_queries_match(worlds, monkeypatch):
    for dist in (tdist, ldist):
        assert dist.get_pg_count() == 1
        assert [dist.supports_complex(op) for op in dist.ReduceOp.RedOpType.__members__.values()] == \
            [tdist.supports_complex(op) for op in tdist.ReduceOp.RedOpType.__members__.values()]
        assert dist.is_backend_available("gloo") and not dist.is_backend_available("nccl")
        assert not dist.is_backend_available("cpu:gloo,cuda:nccl")
        assert not dist.is_ucc_available() and not dist.is_xccl_available()
        assert dist.get_node_local_rank(fallback_rank=3) == 3
        with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
            dist.get_node_local_rank()
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert ldist.get_node_local_rank() == tdist.get_node_local_rank() == 1


@pytest.mark.parametrize("old, new", [("all_gather_into_tensor", "all_gather_single"),
                                      ("reduce_scatter_tensor", "reduce_scatter_single")])
def test_the_names_torch_deprecated_warn_and_work(worlds, old, new):
    for dist, lib in ((tdist, torch), (ldist, lantern)):
        out = lib.zeros(3)
        with pytest.warns(FutureWarning, match=f"`torch.distributed.{old}` is deprecated. Please use "
                                               f"`torch.distributed.{new}` instead."):
            getattr(dist, old)(out, lib.ones(3))
        getattr(dist, new)(out, lib.full((3,), 2.0))
        assert out.tolist() == [2.0, 2.0, 2.0]


def test_monitored_barrier_in_a_world_of_one(worlds):
    for dist in (tdist, ldist):
        assert dist.monitored_barrier(timeout=datetime.timedelta(seconds=5)) is None
        mpi_group = dist.new_group([0], backend="mpi") if dist is ldist else None
        if mpi_group is not None:
            with pytest.raises(ValueError, match="monitored_barrier is only implemented for GLOO backend."):
                dist.monitored_barrier(mpi_group)


def test_a_program_that_exits_with_a_receive_in_flight_exits():
    """The progress thread stops before MPI is finalized (MPI_Finalize would wait for it forever)."""
    program = ("import lantern, lantern.distributed as dist\n"
               "dist.init_process_group('gloo', rank=0, world_size=1)\n"
               "work = dist.irecv(lantern.zeros(1))\n")
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(lantern.__file__).parent.parent))
    done = subprocess.run([sys.executable, "-c", program], env=env, timeout=60, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
