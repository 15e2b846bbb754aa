"""How processes meet: MPI's launcher already placed them, so a rendezvous is a check that what the program says
(init_method, rank, world_size, torchrun's environment variables) agrees with MPI's world.

torch's env:// rendezvous reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. Under MPI the ranks come from the
launcher (`python -m lantern.distributed.run`, or `mpiexec -n N`); those variables are optional, and when set they
must match. MASTER_ADDR:MASTER_PORT name no server to connect to: MPI has its own wiring. A process started without
an MPI launcher is a world of one, which is fine for world_size 1 and an error naming the launcher otherwise.

>>> world_rank_and_size(None, -1, -1, rank_and_size=(0, 1), environ={})
(0, 1)
>>> world_rank_and_size("env://", -1, -1, rank_and_size=(0, 1), environ={"WORLD_SIZE": "2", "RANK": "1"})
Traceback (most recent call last):
RuntimeError: init_process_group: WORLD_SIZE is 2 but this process was not started by an MPI launcher (MPI sees a world of 1 process). lantern's process groups run on MPI: start the program with `python -m lantern.distributed.run --nproc-per-node 2 script.py` (or the venv's `mpiexec -n 2`), or start its ranks with torch.multiprocessing.spawn; processes started otherwise (torchrun, multiprocessing.Process, start_method='fork') cannot join each other
"""
import os

_KNOWN_SCHEMES = ("env://", "tcp://", "file://")


def world_rank_and_size(init_method, world_size, rank, *, rank_and_size, environ=os.environ):
    """This process's (rank, world size), from MPI's `rank_and_size`, after checking the program's claims."""
    mpi_rank, mpi_size = rank_and_size
    if init_method is not None and not init_method.startswith(_KNOWN_SCHEMES):
        raise RuntimeError(f"No rendezvous handler for {init_method.split('://')[0]}://")
    claims = {"world_size": world_size, "rank": rank}
    if init_method is None or init_method.startswith("env://"):
        for name, variable in (("world_size", "WORLD_SIZE"), ("rank", "RANK")):
            if claims[name] == -1 and environ.get(variable) is not None:
                claims[name] = int(environ[variable])
                claims[name + " source"] = variable
    claimed_size = claims["world_size"]
    if claimed_size not in (-1, mpi_size):
        source = claims.get("world_size source", "world_size")
        if mpi_size == 1:
            raise RuntimeError(
                f"init_process_group: {source} is {claimed_size} but this process was not started by an MPI launcher "
                f"(MPI sees a world of 1 process). lantern's process groups run on MPI: start the program with "
                f"`python -m lantern.distributed.run --nproc-per-node {claimed_size} script.py` (or the venv's "
                f"`mpiexec -n {claimed_size}`), or start its ranks with torch.multiprocessing.spawn; processes "
                "started otherwise (torchrun, multiprocessing.Process, start_method='fork') cannot join each other")
        raise ValueError(f"init_process_group: {source} is {claimed_size} but the MPI launcher started "
                         f"{mpi_size} processes")
    if claims["rank"] not in (-1, mpi_rank):
        source = claims.get("rank source", "rank")
        raise ValueError(f"init_process_group: {source} is {claims['rank']} but MPI gave this process rank "
                         f"{mpi_rank}")
    return mpi_rank, mpi_size
