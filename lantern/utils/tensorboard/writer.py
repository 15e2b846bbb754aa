"""SummaryWriter and FileWriter: events into tensorboard event files, with torch.utils.tensorboard's API.

`FileWriter` stamps each `Summary` into an `Event` (wall time, step) and hands it to tensorboard's own
`EventFileWriter`, which queues events and writes them from a background thread. `SummaryWriter` is what programs
use: one file writer for its `log_dir`, plus one per `add_scalars` series in a subfolder.

>>> import glob, tempfile
>>> from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
>>> log_dir = tempfile.mkdtemp()
>>> with SummaryWriter(log_dir) as writer:
...     for step in range(3):
...         writer.add_scalar("Loss/train", 1.0 / (step + 1), step)
>>> events = EventAccumulator(log_dir)
>>> [(e.step, round(e.value, 3)) for e in events.Reload().Scalars("Loss/train")]
[(0, 1.0), (1, 0.5), (2, 0.333)]
"""
import os
import socket
import time
from datetime import datetime

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary

__all__ = ["FileWriter", "SummaryWriter"]

# SummaryWriter methods of PyTorch's that lantern does not provide, each with the reason.
UNSUPPORTED = {
    "add_graph": "it needs the model as a TensorFlow GraphDef, which PyTorch builds from its own JIT trace",
    "add_onnx_graph": "it reads the graph through the onnx package's TensorFlow-graph converter",
    "add_embedding": "the projector's files are not written yet",
    "add_figure": "matplotlib figures are not rendered yet",
    "add_video": "video summaries need moviepy",
    "add_audio": "audio summaries are not written yet",
    "add_tensor": "tensor summaries are not written yet",
    "add_histogram_raw": "raw histograms are not written yet",
    "add_image_with_boxes": "drawing boxes is not implemented yet",
    "add_pr_curve": "precision-recall curves are not written yet",
    "add_pr_curve_raw": "precision-recall curves are not written yet",
    "add_custom_scalars": "custom scalar layouts are not written yet",
    "add_custom_scalars_multilinechart": "custom scalar layouts are not written yet",
    "add_custom_scalars_marginchart": "custom scalar layouts are not written yet",
    "add_mesh": "mesh summaries are not written yet",
}


class FileWriter:
    """Writes `Event`s and `Summary`s into one event file in `log_dir` (created if missing)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        """After `close()`: go on writing, into a new event file in the same folder."""
        self.event_writer.reopen()


class SummaryWriter:
    """Writes summaries for TensorBoard into event files under `log_dir` (default `runs/<Mon DD_HH-MM-SS>_<host>`
    followed by `comment`). `purge_step=T` marks a restart at step T: TensorBoard hides the events from the
    crashed run at steps >= T. Events are queued (`max_queue`) and written at least every `flush_secs` seconds,
    on `flush()` and on `close()` (also at the end of a `with` block)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            current_time = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", current_time + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None  # made now, dropped by close(), made again on the next add
        self._get_file_writer()
        self.default_bins = _tensorflow_bins()

    def _get_file_writer(self):
        if self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:  # TensorBoard purges later steps when it sees a restart at this step
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Record one number (a Python number or a one-element tensor) under `tag` at `global_step`;
        `new_style` stores it as a tensor (`double_precision`: float64) rather than a `simple_value`."""
        self._get_file_writer().add_summary(summary.scalar(tag, scalar_value, new_style, double_precision),
                                            global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Record several numbers on one chart: each goes to its own run, `<log_dir>/<main_tag>_<tag>`."""
        walltime = time.time() if walltime is None else walltime
        log_dir = self._get_file_writer().get_logdir()
        for tag, scalar_value in tag_scalar_dict.items():
            run_dir = log_dir + "/" + main_tag.replace("/", "_") + "_" + tag
            if run_dir not in self.all_writers:
                self.all_writers[run_dir] = FileWriter(run_dir, self.max_queue, self.flush_secs,
                                                       self.filename_suffix)
            self.all_writers[run_dir].add_summary(summary.scalar(main_tag, scalar_value), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """Record the distribution of `values`; `bins` is 'tensorflow' (exponential buckets, the default), a
        numpy.histogram rule ('auto', 'fd', ...), a count or the edges."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(summary.histogram(tag, values, bins, max_bins=max_bins), global_step,
                                            walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Record one image: uint8 in [0, 255] or float in [0, 1], laid out as `dataformats` (CHW, HWC, HW)."""
        self._get_file_writer().add_summary(summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                                            walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """Record a batch of images as one grid picture, 8 to a row."""
        self._get_file_writer().add_summary(summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                                            walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Record a (markdown) string."""
        self._get_file_writer().add_summary(summary.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        """Record a run's hyperparameters and final metrics for TensorBoard's HPARAMS tab, in a subfolder
        `run_name` (default: the current time) of `log_dir`; each metric is also written as a scalar there."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        experiment, start, end = summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        log_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=log_dir) as run_writer:
            for part in (experiment, start, end):
                run_writer.file_writer.add_summary(part, global_step)
            for tag, value in metric_dict.items():
                run_writer.add_scalar(tag, value, global_step)

    def __getattr__(self, name):
        if name in UNSUPPORTED:
            raise NotImplementedError(f"lantern's SummaryWriter does not support {name}: {UNSUPPORTED[name]}")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def flush(self):
        """Write every pending event of every file writer to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self):
        """Flush and close the event files; a later add opens new ones. Closing twice does nothing."""
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()


def _unsupported(name, reason):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"lantern's SummaryWriter does not support {name}: {reason}")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Not supported by lantern: {reason}."
    return method


for _name, _reason in UNSUPPORTED.items():
    setattr(SummaryWriter, _name, _unsupported(_name, _reason))


def _tensorflow_bins():
    """TensorBoard's default histogram edges: ±1e-12 growing by 10% per bucket up to 1e20, and 0."""
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return [-edge for edge in reversed(positive)] + [0] + positive
