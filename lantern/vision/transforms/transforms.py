"""Image transforms (a torchvision.transforms subset): ToTensor, Normalize, Compose, Lambda.

>>> import numpy as np
>>> img = np.full((2, 3, 3), 255, dtype=np.uint8)          # H x W x C, uint8
>>> t = Compose([ToTensor(), Normalize(mean=[0.5] * 3, std=[0.5] * 3)])
>>> out = t(img)
>>> out.shape, out.dtype, out.max().item()
(lantern.Size([3, 2, 3]), lantern.float32, 1.0)
>>> t
Compose(
    ToTensor()
    Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])
)
"""
import numpy as np

from .. import Tensor, as_tensor, from_numpy, get_default_dtype, uint8
from ..nn import Module

__all__ = ["Compose", "ToTensor", "Normalize", "Lambda"]


def _pil_image_class():
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image.Image


def _pil_to_array(pic):
    """A PIL image as an H x W x C array, keeping its pixel type (mode '1' becomes uint8 0/255, as torchvision)."""
    arr = np.asarray(pic)
    if pic.mode == "1":
        arr = arr.astype(np.uint8) * 255
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return arr


class Compose:
    """Apply transforms one after another: `Compose([f, g])(x) == g(f(x))`."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        lines = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({lines}\n)"


class ToTensor:
    """A PIL image or an H x W x C (or H x W) ndarray to a C x H x W tensor.

    uint8 input is scaled to [0, 1] in the default float dtype; other dtypes keep their values and dtype.
    """

    def __call__(self, pic):
        pil_image = _pil_image_class()
        if pil_image is not None and isinstance(pic, pil_image):
            pic = _pil_to_array(pic)
        elif not isinstance(pic, np.ndarray):
            raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic[:, :, None]
        img = from_numpy(pic.transpose(2, 0, 1)).contiguous()
        if img.dtype == uint8:
            return img.to(dtype=get_default_dtype()).div(255)
        return img

    def __repr__(self):
        return f"{type(self).__name__}()"


class Normalize(Module):
    """`(x - mean[c]) / std[c]` for each channel c of a float tensor image of shape (..., C, H, W).

    A Module, as in torchvision; with `inplace=True` the input tensor is overwritten.
    """

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def forward(self, tensor):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
        if not tensor.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
        if tensor.dim() < 3:
            raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                             f"{tensor.size()}")
        if not self.inplace:
            tensor = tensor.clone()
        mean = as_tensor(self.mean, dtype=tensor.dtype, device=tensor.device)
        std = as_tensor(self.std, dtype=tensor.dtype, device=tensor.device)
        if (std == 0).any():
            raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by "
                             "zero.")
        if mean.dim() == 1:
            mean = mean.view(-1, 1, 1)
        if std.dim() == 1:
            std = std.view(-1, 1, 1)
        return tensor.sub_(mean).div_(std)

    def __repr__(self):
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


class Lambda:
    """Wrap a function as a transform."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{type(self).__name__}()"
