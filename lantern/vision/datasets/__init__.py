"""lantern.vision.datasets (torchvision.datasets): image datasets read from their published file formats.

lantern never downloads: `download=True` finds the files already under `root` (unpacking MNIST's .gz files if that
is how they are there) or raises a RuntimeError naming the files to put where.
"""
from .cifar import CIFAR10, CIFAR100
from .fakedata import FakeData
from .folder import DatasetFolder, ImageFolder
from .mnist import KMNIST, MNIST, FashionMNIST
from .vision import VisionDataset

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "CIFAR10", "CIFAR100", "FakeData", "DatasetFolder", "ImageFolder",
           "VisionDataset"]
