"""CIFAR-10 and CIFAR-100 read from their python-version batch files under `root`.

Those batches are pickles (of dicts holding a uint8 array and lists of labels and file names). They are read with
`SafeBatchUnpickler`, which rebuilds only plain containers, numbers, strings, bytes and NumPy arrays: a file that
asks for any other global (where a crafted pickle would run code) is refused.

>>> import pickle, io
>>> SafeBatchUnpickler(io.BytesIO(pickle.dumps({"labels": [1, 2]}))).load()
{'labels': [1, 2]}
>>> SafeBatchUnpickler(io.BytesIO(pickle.dumps(print))).load()
Traceback (most recent call last):
_pickle.UnpicklingError: CIFAR batch files hold only dicts, lists, bytes and NumPy arrays; this one asks for builtins.print
"""
import codecs
import importlib
import os
import pickle

import numpy as np

from .vision import VisionDataset, raise_not_downloadable

__all__ = ["CIFAR10", "CIFAR100", "SafeBatchUnpickler"]


def _numpy_private(module, name):
    """A function of NumPy's that array pickles name, from `numpy._core` (NumPy 2) or `numpy.core` (NumPy 1)."""
    try:
        return getattr(importlib.import_module(f"numpy._core.{module}"), name)
    except ImportError:
        return getattr(importlib.import_module(f"numpy.core.{module}"), name)


class SafeBatchUnpickler(pickle.Unpickler):
    """An unpickler for CIFAR batches: NumPy's array reconstruction is the only global it will look up."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"): _numpy_private("multiarray", "_reconstruct"),  # NumPy 1.x's name
        ("numpy._core.multiarray", "_reconstruct"): _numpy_private("multiarray", "_reconstruct"),  # NumPy 2.x's name
        ("numpy.core.numeric", "_frombuffer"): _numpy_private("numeric", "_frombuffer"),  # pickle protocol 5
        ("numpy._core.numeric", "_frombuffer"): _numpy_private("numeric", "_frombuffer"),
        ("_codecs", "encode"): codecs.encode,  # how pickle protocol 2 writes bytes: a latin-1 str, encoded
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
    }

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"CIFAR batch files hold only dicts, lists, bytes and NumPy arrays; this "
                                         f"one asks for {module}.{name}")
        return self.ALLOWED[module, name]


def load_batch(path):
    """One CIFAR batch or meta file as a dict with str keys (the files were pickled by Python 2: latin-1)."""
    with open(path, "rb") as f:
        return SafeBatchUnpickler(f, encoding="latin1").load()


class CIFAR10(VisionDataset):
    """CIFAR-10: 32x32 colour images in 10 classes. `data` is an N x 32 x 32 x 3 uint8 array, `targets` a list of
    ints; items are (PIL image, int label) after the transforms. Reads `root/cifar-10-batches-py/`."""

    base_folder = "cifar-10-batches-py"
    train_list = ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"]
    test_list = ["test_batch"]
    meta = {"filename": "batches.meta", "key": "label_names"}
    labels_key = "labels"

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        folder = os.path.join(self.root, self.base_folder)
        names = self.train_list if train else self.test_list
        if not self._check_integrity():
            if download:
                raise_not_downloadable(type(self).__name__, folder, self.train_list + self.test_list +
                                       [self.meta["filename"]])
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        batches = [load_batch(os.path.join(folder, name)) for name in names]
        self.data = np.vstack([batch["data"] for batch in batches]).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        self.targets = [label for batch in batches for label in batch[self.labels_key]]
        self.classes = load_batch(os.path.join(folder, self.meta["filename"]))[self.meta["key"]]
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    def _check_integrity(self):
        """Whether every file is there (torchvision also compares MD5 sums with the published files'; lantern does
        not, so that synthetic files in the same format load too)."""
        folder = os.path.join(self.root, self.base_folder)
        return all(os.path.isfile(os.path.join(folder, name))
                   for name in self.train_list + self.test_list + [self.meta["filename"]])

    def __getitem__(self, index):
        from PIL import Image

        return self._apply(Image.fromarray(self.data[index]), self.targets[index])

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100: CIFAR-10's format with 100 fine classes; reads `root/cifar-100-python/{train,test,meta}`."""

    base_folder = "cifar-100-python"
    train_list = ["train"]
    test_list = ["test"]
    meta = {"filename": "meta", "key": "fine_label_names"}
    labels_key = "fine_labels"
