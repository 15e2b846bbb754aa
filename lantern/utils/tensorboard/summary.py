"""Tensors and numbers to tensorboard's `Summary` protocol buffers, as torch.utils.tensorboard.summary makes them.

Each function returns one `Summary` with one value (three for `hparams`): the writer wraps it in an `Event`.

>>> scalar("loss", 0.25).value[0].simple_value
0.25
>>> histogram("w", np.array([0.0, 1.0, 1.0]), bins=2).value[0].histo.bucket
[0.0, 1.0, 2.0]
"""
import io

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ..._tensor import Tensor
from ._convert import as_hwc_image, make_np

__all__ = ["scalar", "histogram", "make_histogram", "image", "make_image", "text", "hparams"]


def scalar(name, value, new_style=False, double_precision=False):
    """One number (a Python number, a one-element tensor or array) as a `simple_value`, or with `new_style` as a
    float (or, `double_precision`, double) tensor for the scalars plugin."""
    array = make_np(value).squeeze()
    if array.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {array.size} and "
                             f"{array.ndim} dimensions.")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=number)])
    tensor = (TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision
              else TensorProto(float_val=[number], dtype="DT_FLOAT"))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=tensor, metadata=metadata)])


def histogram(name, values, bins, max_bins=None):
    """The histogram of `values` (any shape) over `bins` (edges, or a numpy.histogram bin rule such as 'auto')."""
    return Summary(value=[Summary.Value(tag=name, histo=make_histogram(make_np(values).astype(float), bins,
                                                                         max_bins))])


def make_histogram(values, bins, max_bins=None):
    """A `HistogramProto`: counts from numpy.histogram, trimmed to the buckets from one before the first non-empty
    one to the last non-empty one (TensorFlow's histogram.cc layout); `max_bins` merges neighbouring buckets."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        counts, limits = _merge_buckets(counts, limits, len(counts) // max_bins)
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    first, last = filled[0], filled[-1]
    leading_empty = counts[first - 1:first] if first > 0 else np.zeros(1, counts.dtype)
    counts = np.concatenate([leading_empty, counts[first:last + 1]])
    limits = limits[first:last + 2]
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def _merge_buckets(counts, limits, group):
    """Sum every `group` neighbouring buckets (the last group padded with empty ones); keep their outer edges."""
    counts = np.pad(counts, (0, -len(counts) % group))
    merged_limits = np.append(limits[:-1:group], limits[-1])
    return counts.reshape(-1, group).sum(axis=-1), merged_limits


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """An image summary: `tensor` laid out as `dataformats` (a batch is tiled into a grid, 8 to a row); uint8
    values are kept, floats (meant as [0, 1]) are scaled by 255; both are clipped to [0, 255] and PNG-encoded."""
    array = as_hwc_image(make_np(tensor), dataformats)
    scale = 1 if array.dtype == np.uint8 else 255
    array = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(array, rescale=rescale))])


def make_image(array, rescale=1):
    """A `Summary.Image` holding the H x W x C uint8 `array` as PNG (Pillow), resized by `rescale` (Lanczos)."""
    from PIL import Image

    height, width, channels = array.shape
    picture = Image.fromarray(array).resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    with io.BytesIO() as png:
        picture.save(png, format="PNG")
        encoded = png.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=encoded)


def text(tag, text_string):
    """A text summary: one UTF-8 string tensor under `<tag>/text_summary`, for tensorboard's text plugin."""
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=tensor)])


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The three summaries of tensorboard's hparams plugin: the experiment (hyperparameter and metric names), the
    session start (this run's values) and the session end (success)."""
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for name, domain in hparam_domain_discrete.items():
        if (name not in hparam_dict or not isinstance(domain, list)
                or not all(isinstance(d, type(hparam_dict[name])) for d in domain)):
            raise TypeError(f"parameter: hparam_domain_discrete[{name}] should be a list of same type as "
                            f"hparam_dict[{name}].")

    start = SessionStartInfo()
    infos = []
    for name, value in hparam_dict.items():
        if value is None:
            continue
        field, data_type = _hparam_field(value)
        domain = hparam_domain_discrete.get(name)
        if isinstance(value, Tensor):  # its first element, as a number; PyTorch ignores a discrete domain here
            value, domain = float(make_np(value).reshape(-1)[0]), None
        setattr(start.hparams[name], field, value)
        if domain is not None:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domain])
        infos.append(HParamInfo(name=name, type=DataType.Value(data_type), domain_discrete=domain))

    experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))

    def plugin_summary(tag, **content):
        data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content).SerializeToString()
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME, content=data))
        return Summary(value=[Summary.Value(tag=tag, metadata=smd)])

    return (plugin_summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            plugin_summary(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            plugin_summary(metadata.SESSION_END_INFO_TAG, session_end_info=end))


def _hparam_field(value):
    """Which `Value` field and hparams DataType a hyperparameter value takes. Booleans are ints to Python, so
    (as in PyTorch) they are recorded as numbers."""
    if isinstance(value, (int, float)):
        return "number_value", "DATA_TYPE_FLOAT64"
    if isinstance(value, str):
        return "string_value", "DATA_TYPE_STRING"
    if isinstance(value, Tensor):
        return "number_value", "DATA_TYPE_FLOAT64"
    raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
