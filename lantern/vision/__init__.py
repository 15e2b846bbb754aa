"""lantern.vision (torchvision under `python -m lantern.compat`): datasets, transforms, models and utils."""
from . import datasets, models, transforms, utils  # noqa: F401

__all__ = ["datasets", "models", "transforms", "utils"]
