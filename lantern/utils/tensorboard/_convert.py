"""Values to NumPy arrays, and image arrays of any layout to one H x W x 3 (or 4) picture.

>>> make_np(2.5)
array([2.5])
>>> as_hwc_image(np.zeros((2, 1, 4, 5)), "NCHW").shape     # two grey 4x5 images side by side, as RGB
(4, 10, 3)
"""
import math

import numpy as np

from ..._tensor import Tensor
from ...core.dtype import bfloat16, float16


def make_np(value):
    """An ndarray of `value`: arrays as they are, Python scalars as one-element arrays, tensors detached (bfloat16
    as float16, which NumPy knows)."""
    if isinstance(value, np.ndarray):
        return value
    if np.isscalar(value):
        return np.array([value])
    if isinstance(value, Tensor):
        if value.device.type == "meta":
            raise ValueError("cannot log a tensor on the meta device: it has no values")
        if value.dtype == bfloat16:
            value = value.to(float16)
        return value.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(value)}, but numpy array or torch tensor are expected.")


def as_hwc_image(array, dataformats):
    """`array` laid out as `dataformats` (a permutation of NCHW, CHW/HWC or HW) as an H x W x C picture; a batch
    (N) becomes a grid 8 images wide, and one channel becomes three."""
    if len(set(dataformats)) != len(dataformats):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {dataformats}")
    if array.ndim != len(dataformats):
        raise AssertionError(f"size of input tensor and input format are different. tensor shape: {array.shape}, "
                             f"input_format: {dataformats}")
    dataformats = dataformats.upper()
    if len(dataformats) == 4:
        return image_grid(array.transpose([dataformats.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(dataformats) == 3:
        hwc = array.transpose([dataformats.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, axis=2) if hwc.shape[2] == 1 else hwc
    hw = array.transpose([dataformats.find(c) for c in "HW"])
    return np.stack([hw] * 3, axis=2)


def image_grid(images, ncols=8):
    """N x C x H x W images (C 1 or 3) tiled row by row into one 3 x (H*rows) x (W*cols) canvas, zeros elsewhere."""
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    count, _, height, width = images.shape
    ncols = min(count, ncols)
    nrows = math.ceil(count / ncols)
    canvas = np.zeros((3, height * nrows, width * ncols), dtype=images.dtype)
    for i, picture in enumerate(images):
        row, col = divmod(i, ncols)
        canvas[:, row * height:(row + 1) * height, col * width:(col + 1) * width] = picture
    return canvas
