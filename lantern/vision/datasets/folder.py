"""DatasetFolder and ImageFolder: one sub-folder per class under `root`, its files the samples (read with Pillow).

    root/cat/1.png, root/cat/2.png, root/dog/a.png  ->  classes ['cat', 'dog'], samples [(path, 0), (path, 0),
    (path, 1)], sorted by class then by path.

>>> has_file_allowed_extension("photo.JPG", IMG_EXTENSIONS)
True
"""
import os

from .vision import VisionDataset

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader", "pil_loader", "find_classes",
           "make_dataset", "has_file_allowed_extension"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename, extensions):
    """Whether `filename` ends (case-insensitively) with one of `extensions` (lower-case)."""
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def is_image_file(filename):
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory):
    """The sorted names of the sub-folders of `directory` and {name: index}."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory, class_to_idx=None, extensions=None, is_valid_file=None, allow_empty=False):
    """[(path, class index)] for every accepted file below each class folder (links followed), in sorted order.
    Exactly one of `extensions` and `is_valid_file` says which files are accepted; a class without any file is an
    error unless `allow_empty`."""
    directory = os.path.expanduser(directory)
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if extensions is not None:
        def is_valid_file(path):
            return has_file_allowed_extension(path, extensions)

    instances = []
    found = set()
    for class_name in sorted(class_to_idx):
        class_dir = os.path.join(directory, class_name)
        if not os.path.isdir(class_dir):
            continue
        for folder, _, names in sorted(os.walk(class_dir, followlinks=True)):
            for name in sorted(names):
                path = os.path.join(folder, name)
                if is_valid_file(path):
                    instances.append((path, class_to_idx[class_name]))
                    found.add(class_name)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        message = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            message += ("Supported extensions are: "
                        f"{extensions if isinstance(extensions, str) else ', '.join(extensions)}")
        raise FileNotFoundError(message)
    return instances


def pil_loader(path):
    """The image at `path` as an RGB PIL image."""
    from PIL import Image

    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


def default_loader(path):
    return pil_loader(path)


class DatasetFolder(VisionDataset):
    """Samples `loader(path)` with the index of their class folder as target; see the module docstring."""

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None, is_valid_file=None,
                 allow_empty=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx, extensions, is_valid_file, allow_empty=allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [target for _, target in samples]

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None, allow_empty=False):
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def find_classes(self, directory):
        return find_classes(directory)

    def __getitem__(self, index):
        path, target = self.samples[index]
        return self._apply(self.loader(path), target)

    def __len__(self):
        return len(self.samples)


class ImageFolder(DatasetFolder):
    """DatasetFolder over image files (IMG_EXTENSIONS), loaded as RGB PIL images; `imgs` is `samples`."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader, is_valid_file=None,
                 allow_empty=False):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
