"""lantern.utils.data: datasets, samplers and the DataLoader (torch.utils.data)."""
from . import dataset, sampler, dataloader, collate, worker, distributed

__all__ = []
for _family in (dataset, sampler, dataloader, collate, worker, distributed):
    globals().update({name: getattr(_family, name) for name in _family.__all__})
    __all__ += _family.__all__
