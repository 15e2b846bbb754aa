"""torch.distributed.elastic: what programs launched by torchrun import from it. lantern's launcher is
lantern.distributed.run (over MPI); here is only the error recording a training script decorates its entry point
with (`multiprocessing.errors.record`)."""
