"""torch.distributed.launcher over MPI: `LaunchConfig`, `launch_agent` and `elastic_launch` as torch's, whose ranks
mpiexec starts (api), each turning MPI's placement into torchrun's environment before the program runs (worker);
failures holds the error records and the report of a failed job. The command line is lantern.distributed.run."""
from .api import LaunchConfig, elastic_launch, launch_agent

__all__ = ["LaunchConfig", "elastic_launch", "launch_agent"]
