"""Launching a job's ranks through MPI (torch.distributed.launcher's job, on mpiexec): see lantern.distributed.run
for the command line, api for the configuration and the supervision of mpiexec, worker for what each rank does
before the program starts, failures for the error records and the report of a failed job."""
from .api import LaunchConfig, Program, launch_agent
from .failures import ChildFailedError

__all__ = ["LaunchConfig", "Program", "launch_agent", "ChildFailedError"]
