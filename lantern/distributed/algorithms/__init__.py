"""torch.distributed.algorithms: of its algorithms lantern has DistributedDataParallel's communication hooks
(`ddp_comm_hooks.default_hooks`); Join (uneven inputs), model averaging and PowerSGD are not implemented."""
