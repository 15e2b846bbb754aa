"""torch.distributed.elastic.multiprocessing: lantern's ranks are started by mpiexec (lantern.distributed.launcher),
so only `errors` (the @record decorator) is here."""
