"""Image operations behind the transforms (torchvision.transforms.functional), on PIL images and on tensors.

A PIL image is worked on with Pillow (as torchvision does); a tensor image is (..., C, H, W), worked on with lantern
ops or, for resizing, channel by channel through Pillow's float ('F') images, whose filters are the antialiased ones
torchvision's tensor resize reproduces.

>>> import lantern
>>> image = lantern.arange(16.0).reshape(1, 4, 4)
>>> center_crop(image, 2)
tensor([[[ 5.,  6.],
         [ 9., 10.]]])
>>> hflip(image)[0, 0]
tensor([3., 2., 1., 0.])
"""
import enum
import numbers

import numpy as np

from ... import (Tensor, as_tensor, float32, from_numpy, get_default_dtype, int64, ones_like, stack, uint8, where,
                zeros_like)

__all__ = ["InterpolationMode", "get_dimensions", "get_image_size", "get_image_num_channels", "to_tensor",
           "pil_to_tensor", "to_pil_image", "convert_image_dtype", "normalize", "resize", "crop", "center_crop",
           "resized_crop", "hflip", "vflip", "pad", "rgb_to_grayscale", "to_grayscale", "adjust_brightness",
           "adjust_contrast", "adjust_saturation", "adjust_hue"]


class InterpolationMode(enum.Enum):
    """How to interpolate when resizing (the names PIL and torchvision share)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _pil():
    from PIL import Image

    return Image


def _is_pil(img):
    try:
        return isinstance(img, _pil().Image)
    except ImportError:
        return False


def _check_image(img):
    if not (_is_pil(img) or isinstance(img, Tensor)):
        raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")


def get_dimensions(img):
    """[channels, height, width] of a PIL image or a (..., C, H, W) tensor."""
    _check_image(img)
    if isinstance(img, Tensor):
        channels = 1 if img.dim() == 2 else img.shape[-3]
        return [channels, img.shape[-2], img.shape[-1]]
    return [len(img.getbands()), img.height, img.width]


def get_image_size(img):
    """[width, height]."""
    _, height, width = get_dimensions(img)
    return [width, height]


def get_image_num_channels(img):
    return get_dimensions(img)[0]


# ---- conversions -----------------------------------------------------------------------------------------------------

def to_tensor(pic):
    """A PIL image or H x W (x C) ndarray as a C x H x W tensor; uint8 becomes the default float dtype in [0, 1]."""
    if _is_pil(pic):
        array = np.array(pic, copy=True)
        if pic.mode == "1":
            array = array.astype(np.uint8) * 255
    elif isinstance(pic, np.ndarray):
        array = pic
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if array.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {array.ndim} dimensions.")
    if array.ndim == 2:
        array = array[:, :, None]
    img = from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))
    if img.dtype == uint8:
        return img.to(dtype=get_default_dtype()).div(255)
    return img


def pil_to_tensor(pic):
    """A PIL image as a C x H x W tensor of its own pixel type (no scaling): a permuted view, as in torchvision."""
    if not _is_pil(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    array = np.array(pic, copy=True)
    if pic.mode == "1":
        array = array.astype(np.uint8) * 255
    img = as_tensor(array)
    return img.view(pic.height, pic.width, len(pic.getbands())).permute(2, 0, 1)


def to_pil_image(pic, mode=None):
    """A C x H x W tensor or H x W x C ndarray as a PIL image; floats are scaled by 255 to uint8 (unless mode 'F').
    The mode follows the channels and pixel type: L, I;16, I, F (one channel), LA, RGB, RGBA."""
    if isinstance(pic, Tensor):
        if pic.dim() == 3:
            pic = pic.permute(1, 2, 0)
        pic = pic.detach().cpu().numpy()
    elif not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if pic.ndim == 2:
        pic = pic[:, :, None]
    if pic.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    if pic.shape[-1] > 4:
        raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-1]} channels.")
    if np.issubdtype(pic.dtype, np.floating) and mode != "F":
        pic = (pic * 255).astype(np.uint8)
    channels = pic.shape[2]
    if channels == 1:
        pic = pic[:, :, 0]
        expected = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16", np.dtype(np.int32): "I",
                    np.dtype(np.float32): "F"}.get(pic.dtype)
        if mode is not None and mode != expected:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {np.dtype}. Should be {expected}")
        mode = expected
    else:
        permitted = {2: ["LA"], 3: ["RGB", "YCbCr", "HSV"], 4: ["RGBA", "CMYK", "RGBX"]}[channels]
        if mode is not None and mode not in permitted:
            raise ValueError(f"Only modes {permitted} are supported for {channels}D inputs")
        if mode is None and pic.dtype == np.uint8:
            mode = permitted[0]
    if mode is None:
        raise TypeError(f"Input type {pic.dtype} is not supported")
    # frombuffer reads the bytes in the given mode, as fromarray(pic, mode) did before Pillow 11.3
    return _pil().frombuffer(mode, (pic.shape[1], pic.shape[0]), np.ascontiguousarray(pic).tobytes(), "raw", mode,
                             0, 1)


def _max_value(dtype):
    return 1.0 if dtype.is_floating_point else int(np.iinfo(dtype.np).max)


def convert_image_dtype(image, dtype=float32):
    """A tensor image in another dtype with its values rescaled: floats span [0, 1], integers [0, max]."""
    if not isinstance(image, Tensor):
        raise TypeError("Input img should be Tensor Image")
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        # the upper bound is kept just below max + 1 so that 1.0 maps to max and every bucket is equally wide
        return image.mul(_max_value(dtype) + 1.0 - 1e-3).to(dtype)
    input_max = _max_value(image.dtype)
    if dtype.is_floating_point:
        return image.to(dtype).div(input_max)
    output_max = _max_value(dtype)
    if input_max > output_max:
        factor = (input_max + 1) // (output_max + 1)
        return image.div(factor, rounding_mode="floor").to(dtype)
    return image.to(dtype).mul((output_max + 1) // (input_max + 1))


def normalize(tensor, mean, std, inplace=False):
    """`(x - mean[c]) / std[c]` for each channel c of a float tensor image of shape (..., C, H, W)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.dim() < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tensor.size()}")
    if not inplace:
        tensor = tensor.clone()
    mean = as_tensor(mean, dtype=tensor.dtype, device=tensor.device)
    std = as_tensor(std, dtype=tensor.dtype, device=tensor.device)
    if (std == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by "
                         "zero.")
    if mean.dim() == 1:
        mean = mean.view(-1, 1, 1)
    if std.dim() == 1:
        std = std.view(-1, 1, 1)
    return tensor.sub_(mean).div_(std)


# ---- geometry --------------------------------------------------------------------------------------------------------

_PIL_FILTERS = {InterpolationMode.NEAREST: 0, InterpolationMode.LANCZOS: 1, InterpolationMode.BILINEAR: 2,
                InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4, InterpolationMode.HAMMING: 5}


def _interpolation(mode):
    if isinstance(mode, int):  # a PIL filter constant, as older programs pass
        return {value: key for key, value in _PIL_FILTERS.items()}[mode]
    if not isinstance(mode, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer "
                        "constant")
    return mode


def _resized_size(height, width, size, max_size):
    """(new height, new width): `size` [h, w], or one number for the shorter side (the longer keeps the aspect
    ratio, capped at max_size)."""
    if isinstance(size, numbers.Number):
        size = [size]
    if len(size) == 2:
        return list(size)
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = size[0], int(size[0] * long / short)
    if max_size is not None:
        if max_size <= size[0]:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                             f"smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return [new_long, new_short] if width <= height else [new_short, new_long]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """`img` resized to `size` ([h, w], or an int for the shorter side)."""
    _check_image(img)
    mode = _interpolation(interpolation)
    _, height, width = get_dimensions(img)
    new_height, new_width = _resized_size(height, width, size, max_size)
    if [new_height, new_width] == [height, width]:
        return img
    if _is_pil(img):
        if mode == InterpolationMode.NEAREST_EXACT:
            raise ValueError("Interpolation mode nearest-exact is not supported for PIL images")
        return img.resize((new_width, new_height), _PIL_FILTERS[mode])
    return _resize_tensor(img, new_height, new_width, mode, antialias)


def _resize_tensor(img, height, width, mode, antialias):
    if mode in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT):
        # the source pixel of each output pixel: floor(i * scale), or for nearest-exact floor((i + 0.5) * scale)
        offset = 0.5 if mode == InterpolationMode.NEAREST_EXACT else 0.0
        rows = np.minimum(((np.arange(height) + offset) * (img.shape[-2] / height)).astype(np.int64),
                          img.shape[-2] - 1)
        cols = np.minimum(((np.arange(width) + offset) * (img.shape[-1] / width)).astype(np.int64),
                          img.shape[-1] - 1)
        return img[..., as_tensor(rows)[:, None], as_tensor(cols)]
    if mode not in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
        raise ValueError(f"Interpolation mode {mode.value} is not supported for tensor images: use nearest, "
                         "nearest-exact, bilinear or bicubic")
    if not antialias:
        raise NotImplementedError("lantern resizes tensor images with antialias=True only (Pillow's filters)")
    planes = img.detach().cpu().numpy().astype(np.float32).reshape(-1, img.shape[-2], img.shape[-1])
    resized = np.stack([np.asarray(_pil().fromarray(plane, mode="F").resize((width, height), _PIL_FILTERS[mode]))
                        for plane in planes])
    if not img.is_floating_point():
        limits = np.iinfo(img.dtype.np)
        resized = np.round(resized).clip(limits.min, limits.max)
    return from_numpy(resized.reshape(*img.shape[:-2], height, width).astype(img.dtype.np))


def crop(img, top, left, height, width):
    """The `height` x `width` region whose top-left corner is (top, left); outside the image is zero."""
    _check_image(img)
    if _is_pil(img):
        return img.crop((left, top, left + width, top + height))
    _, image_height, image_width = get_dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > image_width or bottom > image_height:
        padding = [max(-left, 0), max(-top, 0), max(right - image_width, 0), max(bottom - image_height, 0)]
        inside = img[..., max(top, 0):bottom, max(left, 0):right]
        return pad(inside, padding, fill=0)
    return img[..., top:bottom, left:right]


def _pair(size):
    """(h, w) from an int (a square), a one-element or a two-element sequence."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    return tuple(size)


def center_crop(img, output_size):
    """The central `output_size` region (an int for a square); an image smaller than that is zero-padded first."""
    crop_height, crop_width = _pair(output_size)
    _, height, width = get_dimensions(img)
    if crop_width > width or crop_height > height:
        padding = [(crop_width - width) // 2 if crop_width > width else 0,
                   (crop_height - height) // 2 if crop_height > height else 0,
                   (crop_width - width + 1) // 2 if crop_width > width else 0,
                   (crop_height - height + 1) // 2 if crop_height > height else 0]
        img = pad(img, padding, fill=0)
        _, height, width = get_dimensions(img)
        if crop_width == width and crop_height == height:
            return img
    top = int(round((height - crop_height) / 2.0))
    left = int(round((width - crop_width) / 2.0))
    return crop(img, top, left, crop_height, crop_width)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    """Mirror left to right."""
    _check_image(img)
    return img.transpose(_pil().Transpose.FLIP_LEFT_RIGHT) if _is_pil(img) else img.flip(-1)


def vflip(img):
    """Mirror top to bottom."""
    _check_image(img)
    return img.transpose(_pil().Transpose.FLIP_TOP_BOTTOM) if _is_pil(img) else img.flip(-2)


def _padding_ltrb(padding):
    if isinstance(padding, numbers.Number):
        return [int(padding)] * 4
    if not isinstance(padding, (tuple, list)) or len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                         "tuple")
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[1], padding[0], padding[1]]
    return list(padding)


def pad(img, padding, fill=0, padding_mode="constant"):
    """Border of `padding` pixels (int, [left/right, top/bottom] or [left, top, right, bottom]) filled with `fill`
    (constant) or by 'edge', 'reflect' (without repeating the edge) or 'symmetric' (repeating it)."""
    _check_image(img)
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    left, top, right, bottom = _padding_ltrb(padding)
    if min(left, top, right, bottom) < 0:
        raise NotImplementedError("lantern does not support negative padding (cropping through pad); use crop")
    numpy_mode = {"edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}.get(padding_mode, "constant")
    if _is_pil(img):
        array = np.asarray(img)
        widths = [(top, bottom), (left, right)] + [(0, 0)] * (array.ndim - 2)
        if numpy_mode == "constant":
            padded = _pad_constant(array, widths, fill, channels_last=True)
        else:
            padded = np.pad(array, widths, mode=numpy_mode)
        out = _pil().fromarray(np.ascontiguousarray(padded))
        if img.mode == "P":
            out.putpalette(img.getpalette())
        return out
    array = img.detach().cpu().numpy()
    widths = [(0, 0)] * (array.ndim - 2) + [(top, bottom), (left, right)]
    if numpy_mode == "constant":
        padded = _pad_constant(array, widths, fill, channels_last=False)
    else:
        padded = np.pad(array, widths, mode=numpy_mode)
    return from_numpy(np.ascontiguousarray(padded))


def _pad_constant(array, widths, fill, channels_last):
    """np.pad with a constant that may differ per channel (a sequence `fill`)."""
    if isinstance(fill, (tuple, list)) and len(fill) > 1:
        axis = -1 if channels_last else -3
        planes = [np.pad(plane, [w for i, w in enumerate(widths) if i != array.ndim + axis], constant_values=value)
                  for plane, value in zip(np.moveaxis(array, axis, 0), fill)]
        return np.stack(planes, axis=axis)
    if isinstance(fill, (tuple, list)):
        fill = fill[0]
    return np.pad(array, widths, constant_values=fill or 0)


# ---- colour ----------------------------------------------------------------------------------------------------------

def rgb_to_grayscale(img, num_output_channels=1):
    """ITU-R 601-2 luma (0.2989 R + 0.587 G + 0.114 B), repeated to `num_output_channels` (1 or 3)."""
    _check_image(img)
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if _is_pil(img):
        gray = img.convert("L")
        return gray if num_output_channels == 1 else _pil().merge("RGB", [gray, gray, gray])
    if img.shape[-3] == 1:
        gray = img
    else:
        r, g, b = img.unbind(dim=-3)
        gray = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(dim=-3)
    return gray.expand(img.shape[:-3] + (num_output_channels,) + img.shape[-2:]) if num_output_channels == 3 \
        else gray


def to_grayscale(img, num_output_channels=1):
    if not _is_pil(img):
        raise TypeError("Input should be PIL Image")
    return rgb_to_grayscale(img, num_output_channels)


def _blend(img, other, ratio):
    """ratio * img + (1 - ratio) * other, clamped to the image range ([0, 1] floats, [0, 255] integers)."""
    bound = 1.0 if img.is_floating_point() else 255.0
    return (ratio * img + (1.0 - ratio) * other).clamp(0, bound).to(img.dtype)


def _enhance(img, enhancer, factor):
    from PIL import ImageEnhance

    return getattr(ImageEnhance, enhancer)(img).enhance(factor)


def _check_factor(factor, name):
    if factor < 0:
        raise ValueError(f"{name} ({factor}) is not non-negative.")


def adjust_brightness(img, brightness_factor):
    """Blend with black: 0 gives black, 1 the image, 2 twice as bright."""
    _check_factor(brightness_factor, "brightness_factor")
    _check_image(img)
    if _is_pil(img):
        return _enhance(img, "Brightness", brightness_factor)
    return _blend(img, zeros_like(img), brightness_factor)


def adjust_contrast(img, contrast_factor):
    """Blend with the mean grey level: 0 gives a flat grey image, 1 the image."""
    _check_factor(contrast_factor, "contrast_factor")
    _check_image(img)
    if _is_pil(img):
        return _enhance(img, "Contrast", contrast_factor)
    dtype = img.dtype if img.is_floating_point() else float32
    grey = rgb_to_grayscale(img) if img.shape[-3] == 3 else img
    return _blend(img, grey.to(dtype).mean(dim=(-3, -2, -1), keepdim=True), contrast_factor)


def adjust_saturation(img, saturation_factor):
    """Blend with the greyscale image: 0 gives grey, 1 the image."""
    _check_factor(saturation_factor, "saturation_factor")
    _check_image(img)
    if _is_pil(img):
        return _enhance(img, "Color", saturation_factor)
    return img if img.shape[-3] == 1 else _blend(img, rgb_to_grayscale(img), saturation_factor)


def adjust_hue(img, hue_factor):
    """Rotate the hue by `hue_factor` turns (in [-0.5, 0.5]) in HSV space."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check_image(img)
    if _is_pil(img):
        if img.mode in {"L", "1", "I", "F"}:
            return img
        hue, saturation, value = img.convert("HSV").split()
        shifted = (np.asarray(hue).astype(np.int16) + np.int16(hue_factor * 255)).astype(np.uint8)  # wraps around
        return _pil().merge("HSV", (_pil().fromarray(shifted), saturation, value)).convert(img.mode)
    if img.shape[-3] == 1:
        return img
    hue, saturation, value = _rgb_to_hsv(convert_image_dtype(img, float32)).unbind(dim=-3)
    rotated = stack(((hue + hue_factor) % 1.0, saturation, value), dim=-3)
    return convert_image_dtype(_hsv_to_rgb(rotated), img.dtype)


def _rgb_to_hsv(img):
    """(..., 3, H, W) RGB in [0, 1] to HSV, hue in turns [0, 1); grey pixels get hue and saturation 0."""
    r, g, b = img.unbind(dim=-3)
    value = img.amax(dim=-3)
    chroma = value - img.amin(dim=-3)
    grey = chroma == 0
    saturation = chroma / where(grey, ones_like(value), value)
    chroma = where(grey, ones_like(chroma), chroma)
    # the hue sector starts at the largest channel: red 0, green 1/3, blue 2/3 of a turn (ties go to red, then green)
    from_red = (g - b) / chroma
    from_green = 2.0 + (b - r) / chroma
    from_blue = 4.0 + (r - g) / chroma
    sixths = where(value == r, from_red, where(value == g, from_green, from_blue))
    hue = ((sixths / 6.0) + 1.0).fmod(1.0)
    return stack((where(grey, zeros_like(hue), hue), saturation, value), dim=-3)


def _hsv_to_rgb(img):
    """(..., 3, H, W) HSV (hue in turns) to RGB: the hexcone model, one formula per sixth of a turn."""
    hue, saturation, value = img.unbind(dim=-3)
    sector = (hue * 6.0).floor()
    fraction = hue * 6.0 - sector
    sector = sector.to(int64) % 6
    low = (value * (1.0 - saturation)).clamp(0.0, 1.0)
    falling = (value * (1.0 - saturation * fraction)).clamp(0.0, 1.0)
    rising = (value * (1.0 - saturation * (1.0 - fraction))).clamp(0.0, 1.0)
    # (red, green, blue) in sectors 0..5
    table = [(value, rising, low), (falling, value, low), (low, value, rising), (low, falling, value),
             (rising, low, value), (value, low, falling)]
    channels = []
    for channel in range(3):
        picked = table[5][channel]
        for index in range(4, -1, -1):
            picked = where(sector == index, table[index][channel], picked)
        channels.append(picked)
    return stack(channels, dim=-3)
