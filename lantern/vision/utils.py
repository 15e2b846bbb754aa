"""make_grid and save_image (torchvision.utils): a batch of images tiled into one picture, and written to a file.

>>> import lantern
>>> make_grid(lantern.ones(5, 3, 4, 4), nrow=2, padding=1).shape     # 2 columns, 3 rows, 1-pixel gaps
lantern.Size([3, 16, 11])
"""
import math

from .. import Tensor, cat, no_grad, stack, uint8

__all__ = ["make_grid", "save_image"]


def _normalize_to_unit(img, low, high):
    """In place: clamp to [low, high], then map that range onto [0, 1]."""
    img.clamp_(min=low, max=high)
    img.sub_(low).div_(max(high - low, 1e-5))


@no_grad()
def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0):
    """B x C x H x W images (or a list of C x H x W) as one C x H' x W' grid, `nrow` images to a row, `padding`
    pixels of `pad_value` around each. Grey images become RGB. `normalize` maps `value_range` (default: the
    min and max, of each image if `scale_each`) onto [0, 1]."""
    if not isinstance(tensor, Tensor):
        if not (isinstance(tensor, list) and all(isinstance(t, Tensor) for t in tensor)):
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
        tensor = stack(tensor, dim=0)
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.size(0) == 1:
            tensor = cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:
        tensor = cat((tensor, tensor, tensor), 1)
    if normalize:
        tensor = tensor.clone()
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        for img in (tensor if scale_each else [tensor]):
            low, high = value_range if value_range is not None else (float(img.min()), float(img.max()))
            _normalize_to_unit(img, low, high)
    if tensor.size(0) == 1:
        return tensor.squeeze(0)

    count, channels = tensor.size(0), tensor.size(1)
    cols = min(nrow, count)
    rows = math.ceil(count / cols)
    height, width = tensor.size(2) + padding, tensor.size(3) + padding
    grid = tensor.new_full((channels, height * rows + padding, width * cols + padding), pad_value)
    for k in range(count):
        row, col = divmod(k, cols)
        grid[:, row * height + padding:(row + 1) * height, col * width + padding:(col + 1) * width] = tensor[k]
    return grid


@no_grad()
def save_image(tensor, fp, format=None, **kwargs):
    """Write `make_grid(tensor, **kwargs)` (values in [0, 1]) as an 8-bit image file, rounded to the nearest
    level; the format comes from the file name unless `format` is given."""
    from PIL import Image

    grid = make_grid(tensor, **kwargs)
    array = grid.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", uint8).numpy()
    Image.fromarray(array.squeeze(2) if array.shape[2] == 1 else array).save(fp, format=format)
