"""VisionDataset: the base of the image datasets (a root folder, transforms for images and targets).

>>> class Squares(VisionDataset):
...     def __getitem__(self, index):
...         return self._apply(index * index, index)
...     def __len__(self):
...         return 3
>>> Squares("data", transform=lambda x: x + 1)[2]
(5, 2)
"""
import os

from ...utils.data import Dataset

__all__ = ["VisionDataset", "StandardTransform", "raise_not_downloadable"]


class StandardTransform:
    """`transform` on the input, `target_transform` on the target (either may be None)."""

    def __init__(self, transform=None, target_transform=None):
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input, target):
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    def __repr__(self):
        body = [type(self).__name__]
        for title, transform in (("Transform: ", self.transform), ("Target transform: ", self.target_transform)):
            if transform is not None:
                lines = repr(transform).splitlines()
                body += [title + lines[0]] + [" " * len(title) + line for line in lines[1:]]
        return "\n".join(body)


class VisionDataset(Dataset):
    """A dataset under `root` whose samples pass through `transforms(input, target)`, or through `transform` and
    `target_transform` (only one of the two ways may be given)."""

    _repr_indent = 4

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        if isinstance(root, str):
            root = os.path.expanduser(root)
        self.root = root
        has_separate = transform is not None or target_transform is not None
        if transforms is not None and has_separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        if has_separate:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def _apply(self, input, target):
        """The sample and target after the dataset's transforms."""
        if self.transforms is not None:
            input, target = self.transforms(input, target)
        return input, target

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def extra_repr(self):
        return ""

    def __repr__(self):
        body = [f"Number of datapoints: {self.__len__()}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transforms is not None:
            body += repr(self.transforms).splitlines()
        lines = [f"Dataset {type(self).__name__}"] + [" " * self._repr_indent + line for line in body]
        return "\n".join(lines)


def raise_not_downloadable(dataset, folder, files):
    """download=True without the files: lantern does not fetch data sets (the machines it runs on may have no
    network), so say which files to put where."""
    raise RuntimeError(f"{dataset}: download=True, but lantern does not download data sets and the files are not "
                       f"in {folder}. Put {', '.join(files)} there (as the dataset's publisher distributes them) "
                       f"and run again.")
