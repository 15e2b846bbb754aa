"""Printing tensors in PyTorch's format: `repr(t)` and `str(t)`, and the options that steer them.

A float tensor's elements all print one way, chosen by looking at its finite nonzero values: as integers with a
trailing dot when every one is whole (`1.`), in scientific notation when they span more than three orders of
magnitude, exceed 1e8 or go below 1e-4, and otherwise with `precision` decimals. Every element is padded to the
widest one. A tensor with more than `threshold` elements is summarised: only `edgeitems` rows from each end of
every long dim are shown, with `...` between. Suffixes follow the data: the device when not CPU, the dtype when
not the default of its kind (float32, int64, bool, complex64), `grad_fn=<...>` or `requires_grad=True`.

>>> lantern.tensor([[1., 2.5], [-3., 4e-5]])
tensor([[ 1.0000e+00,  2.5000e+00],
        [-3.0000e+00,  4.0000e-05]])
>>> lantern.tensor([1, 2], dtype=lantern.int32)
tensor([1, 2], dtype=lantern.int32)
>>> lantern.set_printoptions(threshold=5); print(lantern.arange(10)); lantern.set_printoptions(profile="default")
tensor([0, 1, 2,  ..., 7, 8, 9])
"""
import math

import numpy as np

from ._tensor import Tensor
from .core import dtype as dt
from .core.layout import strided

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

_options = dict(_PROFILES["default"], sci_mode=None)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print. `profile` ('default', 'short', 'full') sets the first four options before the others
    apply; `sci_mode` True/False forces scientific notation on or off, None (also when left out) chooses per tensor.

    >>> lantern.set_printoptions(precision=2); print(lantern.tensor([1.12345])); lantern.set_printoptions(precision=4)
    tensor([1.12])
    """
    _options.update(_PROFILES.get(profile, {}))
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems, "linewidth": linewidth}
    _options.update({name: value for name, value in given.items() if value is not None})
    _options["sci_mode"] = sci_mode


def get_printoptions():
    """The current print options, as keyword arguments for set_printoptions.

    >>> lantern.get_printoptions()
    {'precision': 4, 'threshold': 1000, 'edgeitems': 3, 'linewidth': 80, 'sci_mode': None}
    """
    return dict(_options)


def tensor_repr(t, tensor_contents=None):
    """The repr of tensor `t`, as PyTorch writes it (dtypes read `lantern.`); `tensor_contents` replaces the data."""
    if t.layout is not strided:
        from .sparse._print import sparse_repr
        return sparse_repr(t)
    prefix = f"{type(t).__name__}(" if not _is_plain(t) else "tensor("
    indent = len(prefix)
    body, suffixes = _quantized_body_and_suffixes(t, indent) if t.is_quantized else _body_and_suffixes(t, indent)
    suffixes.extend(_autograd_suffixes(t))
    if t._fw_grad is not None:  # a dual tensor inside a forward-AD level (lantern.autograd.forward_ad)
        suffixes.append(f"tangent={t._fw_grad!r}")
    return _add_suffixes(prefix + (body if tensor_contents is None else tensor_contents), suffixes, indent)


def _is_plain(t):
    # nn.Parameter prints as a plain tensor; nn sits above this layer, so it is recognised by name.
    cls = type(t)
    return cls is Tensor or cls.__name__ == "Parameter"


def _body_and_suffixes(t, indent):
    """The data part of the repr and the suffixes that describe the tensor itself (device, size, dtype)."""
    suffixes = [f"device='{t.device}'"] if t.device.type != "cpu" else []
    size = f"size={tuple(t._size)}"
    dtype = f"dtype={t.dtype!r}"
    if t.device.type == "meta":
        suffixes.append(size)
        if t.dtype is not dt.get_default_dtype():
            suffixes.append(dtype)
        return "...", suffixes
    if t.numel() == 0:
        # With no elements to tell the kind by, every dtype but the default float one is named (int64 too).
        if t.dim() != 1:
            suffixes.append(size)
        if t.dtype is not dt.get_default_dtype():
            suffixes.append(dtype)
        return "[]", suffixes
    if not _options["edgeitems"]:
        suffixes.append(size)
    if not _has_default_dtype(t):
        suffixes.append(dtype)
    return _data_str(t, indent), suffixes


def _quantized_body_and_suffixes(t, indent):
    """A quantized tensor prints its dequantized values, then its size, dtype and quantizer."""
    values = t.dequantize()
    body = _data_str(values, indent) if values.numel() else "[]"
    suffixes = [f"size={tuple(t._size)}", f"dtype={t.dtype!r}", f"quantization_scheme={t.qscheme()!r}"]
    if t.qscheme().name.startswith("per_tensor"):
        suffixes += [f"scale={t.q_scale()}", f"zero_point={t.q_zero_point()}"]
    else:
        suffixes += [f"scale={t.q_per_channel_scales()!r}", f"zero_point={t.q_per_channel_zero_points()!r}",
                     f"axis={t.q_per_channel_axis()}"]
    return body, suffixes


def _has_default_dtype(t):
    return t.dtype in (dt.get_default_dtype(), dt.default_complex_dtype(), dt.int64, dt.bool)


def _autograd_suffixes(t):
    node = t.grad_fn
    if node is not None:
        return [f"grad_fn=<{node.name() if hasattr(node, 'name') else type(node).__name__}>"]
    return ["requires_grad=True"] if t.requires_grad else []


def _add_suffixes(text, suffixes, indent):
    """Append ', suffix' to the text's last line, or start a new indented line where it would pass linewidth."""
    parts = [text]
    # PyTorch counts the last line two characters longer than it is; matching its line breaks means doing so too.
    line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        width = _torch_len(suffix)
        if line_len + width + 2 > _options["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            line_len = indent + width
        else:
            parts.append(", " + suffix)
            line_len += width + 2
    parts.append(")")
    return "".join(parts)


def _torch_len(suffix):
    # Lines break where PyTorch's do, and PyTorch measures `dtype=torch.int32`, two characters shorter than ours.
    return len(suffix) - 2 * suffix.count("lantern.")


# ---- the data -----------------------------------------------------------------------------------------------------
def _data_str(t, indent):
    """The nested-bracket text of a non-empty tensor's values."""
    summarize = t.numel() > _options["threshold"]
    shown = _shown_values(t._host_array(), summarize)
    if t.dtype.is_complex:
        element = _ComplexElement(_Formatter(shown.real), _Formatter(shown.imag))
    else:
        element = _Formatter(shown)
    return _nested_str(shown, t._size, indent, summarize, element)


def _shown_values(arr, summarize):
    """The values a print shows, widened so that Python formats them exactly: float64, complex128, int, bool.

    When summarising, only `edgeitems` entries from each end of every dim longer than twice that are kept.
    """
    if summarize:
        edge = _options["edgeitems"]
        for axis, n in enumerate(arr.shape):
            if n > 2 * edge:
                arr = arr.take(np.r_[0:edge, n - edge:n], axis=axis)
    if dt.holds_complex(arr.dtype):
        return arr.astype(np.complex128)
    if arr.dtype.kind in "biu":
        return arr
    return arr.astype(np.float64)  # float16, float32 and bfloat16 (a NumPy kind 'V' type) widen exactly


def _nested_str(arr, size, indent, summarize, element):
    """`arr` holds the shown values of a tensor of shape `size`: dims of `size` longer than 2 * edgeitems were cut
    down to their edges when summarising, and get an ellipsis between the two halves."""
    if arr.ndim == 0:
        return element.format(arr.item())
    edge = _options["edgeitems"]
    cut = summarize and size[0] > 2 * edge
    if arr.ndim == 1:
        items = [element.format(v) for v in arr.tolist()]
        if cut:
            items[edge:edge] = [" ..." if edge else "..."]
        return _wrap(items, indent, element.width())
    rows = [_nested_str(row, size[1:], indent + 1, summarize, element) for row in arr]
    if cut:
        rows[edge:edge] = ["..."]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _wrap(items, indent, item_width):
    """One bracketed row of items, as many to a line as fit in linewidth (reckoning each with its ', ')."""
    per_line = max(1, (_options["linewidth"] - indent) // (item_width + 2))
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


class _Formatter:
    """Formats the elements of one real array the same way, right-aligned to a common width.

    The style (integer-valued, fixed or scientific) and the width come from the finite nonzero values only.
    """

    def __init__(self, values):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not self.floating:
            self.max_width = max([1] + [len(str(v)) for v in _widest_candidates(values)])
            return
        finite = values[np.isfinite(values) & (values != 0)]
        if finite.size == 0:
            return
        magnitude = np.abs(finite)
        smallest, largest = magnitude.min(), magnitude.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        sci_mode = _options["sci_mode"]
        if sci_mode is None:
            sci_mode = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
        self.sci_mode = bool(sci_mode)
        self.max_width = max(len(self._bare(v)) for v in _widest_candidates(finite))

    def width(self):
        return self.max_width

    def format(self, value):
        return self._bare(value).rjust(self.max_width)

    def _bare(self, value):
        if not self.floating:
            return str(value)
        precision = _options["precision"]
        if self.sci_mode:
            return f"{value:.{precision}e}"
        if self.int_mode:
            # The dot marks a whole-valued float as floating; nan and inf need no mark.
            return f"{value:.0f}" + ("." if math.isfinite(value) else "")
        return f"{value:.{precision}f}"


class _ComplexElement:
    """Formats complex elements as real part and signed imaginary part, each with its own formatter: `1.+2.j`."""

    def __init__(self, real, imag):
        self.real, self.imag = real, imag

    def width(self):
        return self.real.width() + self.imag.width() + 1  # the 'j'

    def format(self, value):
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return self.real.format(value.real) + ("" if imag[0] in "+-" else "+") + imag


def _widest_candidates(values):
    """The few values whose text can be the longest: the least and greatest of each sign (rounding is monotonic, so
    no value in between has more digits or a longer exponent). Bools are few enough to take whole."""
    if values.dtype.kind == "b":
        return np.unique(values).tolist()
    signs = [part for part in (values[values < 0], values[values > 0]) if part.size]
    return [extreme.item() for part in signs for extreme in (part.min(), part.max())]
