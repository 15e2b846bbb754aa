"""FakeData: random images that are the same for the same index (each drawn under its own seed).

>>> from lantern.vision.datasets import FakeData
>>> image, label = FakeData(size=4, image_size=(3, 8, 8), num_classes=5)[1]
>>> image.size, image.mode, 0 <= label < 5
((8, 8), 'RGB', True)
"""
from ... import int64, randint, randn
from ...random import get_rng_state, manual_seed, set_rng_state
from ..transforms import ToPILImage
from .vision import VisionDataset

__all__ = ["FakeData"]


class FakeData(VisionDataset):
    """`size` items (PIL image from a standard-normal C x H x W tensor, int label below `num_classes`); item i is
    drawn under seed `i + random_offset` and the global random state is left as it was."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None,
                 random_offset=0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index):

        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        state = get_rng_state()
        manual_seed(index + self.random_offset)
        image = randn(*self.image_size)
        target = randint(0, self.num_classes, size=(1,), dtype=int64)[0]
        set_rng_state(state)
        image, target = self._apply(ToPILImage()(image), target)
        return image, target.item()

    def __len__(self):
        return self.size
