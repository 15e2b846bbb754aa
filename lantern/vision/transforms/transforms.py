"""Image transforms (torchvision.transforms): callables on PIL images and tensor images, chained by Compose.

The random ones draw from lantern's generator (`manual_seed` makes them repeat); those that are nn.Modules in
torchvision are Modules here too.

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
import math
import numbers

from ... import empty, log, rand, randint, randperm, tensor
from ...nn import Module
from . import functional as F
from .functional import InterpolationMode

__all__ = ["Compose", "ToTensor", "PILToTensor", "ToPILImage", "ConvertImageDtype", "Normalize", "Lambda", "Resize",
           "CenterCrop", "RandomCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "Pad",
           "Grayscale", "ColorJitter", "InterpolationMode"]


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
        return F.to_tensor(pic)

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
        return F.normalize(tensor, self.mean, self.std, self.inplace)

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


class PILToTensor:
    """A PIL image to a C x H x W tensor of its own pixel type, values unchanged."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self):
        return f"{type(self).__name__}()"


class ToPILImage:
    """A C x H x W tensor or H x W x C ndarray to a PIL image (floats scaled by 255); `mode` as in Pillow."""

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self):
        return f"{type(self).__name__}()" if self.mode is None else f"{type(self).__name__}(mode={self.mode})"


class ConvertImageDtype(Module):
    """A tensor image in `dtype`, values rescaled (floats span [0, 1], integers [0, max])."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class Resize(Module):
    """Resize to `size`: [h, w], or an int for the shorter side (the longer keeps the aspect ratio, at most
    `max_size`)."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        super().__init__()
        if not isinstance(size, (int, tuple, list)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, (tuple, list)) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size = size
        self.max_size = max_size
        self.interpolation = F._interpolation(interpolation)
        self.antialias = antialias

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return (f"{type(self).__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop(Module):
    """The central `size` region (an int for a square), zero-padded where the image is smaller."""

    def __init__(self, size):
        super().__init__()
        self.size = F._pair(size)

    def forward(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self):
        return f"{type(self).__name__}(size={self.size})"


class Pad(Module):
    """A border of `padding` pixels; see functional.pad for `fill` and `padding_mode`."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                             "tuple")
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self):
        return f"{type(self).__name__}(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class RandomCrop(Module):
    """A `size` region at a random place, after optional `padding` (and padding up to `size` if
    `pad_if_needed`)."""

    @staticmethod
    def get_params(img, output_size):
        """(top, left, height, width) of a random crop of `output_size`."""
        _, height, width = F.get_dimensions(img)
        crop_height, crop_width = output_size
        if height < crop_height or width < crop_width:
            raise ValueError(f"Required crop size {(crop_height, crop_width)} is larger than input image size "
                             f"{(height, width)}")
        if width == crop_width and height == crop_height:
            return 0, 0, height, width
        top = randint(0, height - crop_height + 1, size=(1,)).item()
        left = randint(0, width - crop_width + 1, size=(1,)).item()
        return top, left, crop_height, crop_width

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = F._pair(size)
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        return F.crop(img, *self.get_params(img, self.size))

    def __repr__(self):
        return f"{type(self).__name__}(size={self.size}, padding={self.padding})"


class _RandomFlip(Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def __repr__(self):
        return f"{type(self).__name__}(p={self.p})"


class RandomHorizontalFlip(_RandomFlip):
    """Mirror left to right with probability `p`."""

    def forward(self, img):
        return F.hflip(img) if rand(1) < self.p else img


class RandomVerticalFlip(_RandomFlip):
    """Mirror top to bottom with probability `p`."""

    def forward(self, img):
        return F.vflip(img) if rand(1) < self.p else img


class RandomResizedCrop(Module):
    """A random region (area a `scale` fraction of the image's, aspect ratio in `ratio`, drawn log-uniformly)
    resized to `size` (the Inception crop)."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
        super().__init__()
        self.size = F._pair(size)
        if not isinstance(scale, (tuple, list)):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, (tuple, list)):
            raise TypeError("Ratio should be a sequence")
        self.interpolation = F._interpolation(interpolation)
        self.antialias = antialias
        self.scale = scale
        self.ratio = ratio

    @staticmethod
    def get_params(img, scale, ratio):
        """(top, left, height, width): up to ten random tries, then the largest centred crop within `ratio`."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = log(tensor(ratio))
        for _ in range(10):
            target_area = area * empty(1).uniform_(scale[0], scale[1]).item()
            aspect_ratio = math.exp(empty(1).uniform_(log_ratio[0].item(), log_ratio[1].item()).item())
            crop_width = int(round(math.sqrt(target_area * aspect_ratio)))
            crop_height = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < crop_width <= width and 0 < crop_height <= height:
                top = randint(0, height - crop_height + 1, size=(1,)).item()
                left = randint(0, width - crop_width + 1, size=(1,)).item()
                return top, left, crop_height, crop_width
        in_ratio = width / height
        if in_ratio < min(ratio):
            crop_width, crop_height = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            crop_width, crop_height = int(round(height * max(ratio))), height
        else:
            crop_width, crop_height = width, height
        return (height - crop_height) // 2, (width - crop_width) // 2, crop_height, crop_width

    def forward(self, img):
        top, left, height, width = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, top, left, height, width, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self):
        return (f"{type(self).__name__}(size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, "
                f"ratio={tuple(round(r, 4) for r in self.ratio)}, interpolation={self.interpolation.value}, "
                f"antialias={self.antialias})")


class Grayscale(Module):
    """Luma of an RGB image, as 1 or 3 channels."""

    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, num_output_channels=self.num_output_channels)

    def __repr__(self):
        return f"{type(self).__name__}(num_output_channels={self.num_output_channels})"


class ColorJitter(Module):
    """Random brightness, contrast, saturation and hue changes, applied in a random order.

    Each of brightness/contrast/saturation is a number v (factor drawn from [max(0, 1 - v), 1 + v]) or a (min, max)
    range; hue is h in [0, 0.5] (shift drawn from [-h, h]) or a range within [-0.5, 0.5]."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        return None if value[0] == value[1] == center else tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """(order of the four adjustments, then each factor or None)."""
        order = randperm(4)
        factors = [None if bounds is None else float(empty(1).uniform_(bounds[0], bounds[1]))
                   for bounds in (brightness, contrast, saturation, hue)]
        return (order, *factors)

    def forward(self, img):
        order, *factors = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        adjust = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
        for index in order.tolist():
            if factors[index] is not None:
                img = adjust[index](img, factors[index])
        return img

    def __repr__(self):
        return (f"{type(self).__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")
