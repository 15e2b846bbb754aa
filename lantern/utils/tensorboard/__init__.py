"""lantern.utils.tensorboard: `SummaryWriter` writing TensorBoard event files through the `tensorboard` package.

As in PyTorch, the event files, protocol buffers and plugin metadata are tensorboard's own; this package turns
tensors into them (scalars, histograms, PNG images, text, hyperparameters). Install with
`pip install tensorboard` (or lantern's `tensorboard` extra).

>>> import tempfile
>>> from lantern.utils.tensorboard import SummaryWriter
>>> with SummaryWriter(tempfile.mkdtemp()) as writer:
...     writer.add_scalar("loss", 0.5, global_step=1)
"""
try:
    import tensorboard  # noqa: F401
except ModuleNotFoundError:
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above (pip install tensorboard)") \
        from None

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "SummaryWriter"]
