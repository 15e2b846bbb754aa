"""numba kernels for 2-d convolutions on float arrays: im2col, which copies each window of the unpadded image
into the columns (zeros where it reaches into the padding), and col2im, which adds each column of a transposed
convolution's product into the image at its kernel tap. NumPy needs a padded copy first and then one strided copy
or add per kernel tap, each of whose inner loops covers one image row (14 floats on a small CNN's feature maps);
these are one pass each.

Imported only when nn_conv's compiled specialisations first run (numba takes ~0.5 s to import); kernels are cached
on disk. Indices are unsigned: with signed ones numba tests every index for being negative (Python's wraparound),
which kept these loops from vectorising and made them ~5 times slower.

>>> import numpy as np
>>> image = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
>>> columns = np.empty((1, 2, 2, 1, 1, 1), np.float32)   # (C, kh, kw, m, oh, ow): one 2 × 2 window
>>> im2col_2d(image, columns, 0, 0, 1, 1, 1, 1)
>>> columns.ravel().tolist()
[0.0, 1.0, 2.0, 3.0]
>>> out = np.empty((1, 1, 3, 3), np.float32)
>>> col2im_2d(np.ones((1, 2, 2, 1, 2, 2), np.float32), out, 0, 0, 1, 1, 1, 1)   # 2 × 2 taps on 2 × 2 inputs
>>> out[0, 0].tolist()
[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
"""
import numba
import numpy as np

_JIT = {"error_model": "numpy", "cache": True, "nogil": True, "boundscheck": False}


@numba.njit(**_JIT)
def _inside(count, size, stride, offset):
    """The positions o in range(count) whose o · stride + offset lies in range(size), as (first, stop)."""
    first = 0
    while first < count and first * stride + offset < 0:
        first += 1
    stop = count
    while stop > first and (stop - 1) * stride + offset >= size:
        stop -= 1
    return first, stop


@numba.njit(**_JIT)
def im2col_2d(image, columns, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w):
    """columns (C, kh, kw, m, oh, ow) of image (m, C, H, W): column (c, i, j, n, y, x) is image[n, c, y · stride_h
    - pad_h + i · dilation_h, x · stride_w - pad_w + j · dilation_w], zero where that lies in the padding. Both
    arrays row-major."""
    channels, kh, kw, m, oh, ow = columns.shape
    height, width = image.shape[2], image.shape[3]
    source = image.ravel()
    cols = columns.ravel()
    row = 0  # the start of column row (c, i, j, n, y)
    for c in range(channels):
        for i in range(kh):
            rows, rows_end = _inside(oh, height, stride_h, i * dilation_h - pad_h)
            for j in range(kw):
                first, stop = _inside(ow, width, stride_w, j * dilation_w - pad_w)
                for n in range(m):
                    for y in range(oh):
                        if rows <= y < rows_end:
                            start = (((n * channels + c) * height + y * stride_h - pad_h + i * dilation_h) * width
                                     + j * dilation_w - pad_w)
                            for x in range(first):
                                cols[np.uint64(row + x)] = 0
                            for x in range(first, stop):
                                cols[np.uint64(row + x)] = source[np.uint64(start + x * stride_w)]
                            for x in range(stop, ow):
                                cols[np.uint64(row + x)] = 0
                        else:
                            for x in range(ow):
                                cols[np.uint64(row + x)] = 0
                        row += ow


@numba.njit(**_JIT)
def col2im_2d(columns, image, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w):
    """image (m, C, H, W) = the columns (C, kh, kw, m, oh, ow) added up at their kernel taps: column (c, i, j, n,
    y, x) lands on image[n, c, y · stride_h - pad_h + i · dilation_h, x · stride_w - pad_w + j · dilation_w], and
    what lands outside is dropped. Each pixel adds its taps in row-major tap order, starting from zero, as
    col2im_array does (the same bits). Both arrays row-major."""
    channels, kh, kw, m, oh, ow = columns.shape
    height, width = image.shape[2], image.shape[3]
    out = image.ravel()
    cols = columns.ravel()
    for n in range(m):
        for c in range(channels):
            plane = (n * channels + c) * height * width
            for k in range(height * width):
                out[np.uint64(plane + k)] = 0
            for i in range(kh):
                rows, rows_end = _inside(oh, height, stride_h, i * dilation_h - pad_h)
                for j in range(kw):
                    first, stop = _inside(ow, width, stride_w, j * dilation_w - pad_w)
                    tap = (((c * kh + i) * kw + j) * m + n) * oh * ow
                    for y in range(rows, rows_end):
                        target = plane + (y * stride_h - pad_h + i * dilation_h) * width + j * dilation_w - pad_w
                        source = tap + y * ow
                        for x in range(first, stop):
                            out[np.uint64(target + x * stride_w)] += cols[np.uint64(source + x)]
