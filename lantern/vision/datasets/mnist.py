"""MNIST, FashionMNIST and KMNIST read from their IDX files under `root/<ClassName>/raw` (or, as torchvision does
when they are there, from the `processed/training.pt` and `test.pt` that torchvision before 0.9 saved).

The IDX format (Yann LeCun's): a big-endian header of two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B
int16, 0x0C int32, 0x0D float32, 0x0E float64) and the number of dimensions, one int32 per dimension, then the values.

>>> import numpy as np, io
>>> read_idx(io.BytesIO(bytes([0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6])))
array([[1, 2, 3],
       [4, 5, 6]], dtype=uint8)
"""
import gzip
import os
import shutil

import numpy as np

from ... import as_tensor, int64
from ...serialization import load
from .vision import VisionDataset, raise_not_downloadable

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "read_idx"]

IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(file):
    """The array stored in an IDX file (a path or a binary file object)."""
    if isinstance(file, (str, os.PathLike)):
        with open(file, "rb") as f:
            return read_idx(f)
    header = file.read(4)
    if len(header) != 4 or header[:2] != b"\0\0" or header[2] not in IDX_TYPES:
        raise RuntimeError(f"not an IDX file: header {header!r}")
    ndim = header[3]
    shape = tuple(int(n) for n in np.frombuffer(file.read(4 * ndim), dtype=">i4"))
    values = np.frombuffer(file.read(), dtype=IDX_TYPES[header[2]])
    if values.size != int(np.prod(shape)):
        raise RuntimeError(f"IDX file holds {values.size} values, its header says shape {shape}")
    return values.astype(values.dtype.newbyteorder("=")).reshape(shape)


class MNIST(VisionDataset):
    """The MNIST digits: `data` a uint8 tensor N x 28 x 28, `targets` int64; items are (PIL image, int label)
    after the transforms. Reads `{train,t10k}-{images-idx3,labels-idx1}-ubyte` from `root/MNIST/raw`."""

    resources = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        processed = os.path.join(self.root, type(self).__name__, "processed")
        legacy_files = [os.path.join(processed, name) for name in ("training.pt", "test.pt")]
        if all(os.path.isfile(path) for path in legacy_files):  # what torchvision before 0.9 saved; read first

            self.data, self.targets = load(legacy_files[0 if train else 1], weights_only=True)
            return
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        prefix = "train" if train else "t10k"
        self.data = as_tensor(read_idx(os.path.join(self.raw_folder, f"{prefix}-images-idx3-ubyte")))
        self.targets = as_tensor(read_idx(os.path.join(self.raw_folder, f"{prefix}-labels-idx1-ubyte"))).to(int64)

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self):
        return {name: i for i, name in enumerate(self.classes)}

    def _check_exists(self):
        return all(os.path.isfile(os.path.join(self.raw_folder, name)) for name in self.resources)

    def download(self):
        """Nothing to fetch if the files are there; gzipped copies (`<name>.gz`, as published) are unpacked; else
        a RuntimeError says which files are missing (lantern does not download)."""
        if self._check_exists():
            return
        packed = [os.path.join(self.raw_folder, name + ".gz") for name in self.resources]
        if not all(os.path.isfile(path) for path in packed):
            raise_not_downloadable(type(self).__name__, self.raw_folder, [name + ".gz" for name in self.resources])
        for path in packed:
            with gzip.open(path, "rb") as source, open(path[:-3], "wb") as target:
                shutil.copyfileobj(source, target)

    def __getitem__(self, index):
        from PIL import Image

        return self._apply(Image.fromarray(self.data[index].numpy()), int(self.targets[index]))

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: MNIST's format and sizes, ten kinds of clothing; files in root/FashionMNIST/raw."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: MNIST's format, ten cursive Japanese characters; files in root/KMNIST/raw."""

    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
