"""lantern.utils.tensorboard.SummaryWriter against torch.utils.tensorboard: the same calls write the same events.

Each case runs one lambda with torch's writer and with lantern's (each with its own tensor library), then reads every
event file back with tensorboard's own readers and compares the events (all fields but the wall time).
"""
import os
import re
import socket

import numpy as np
import pytest
import torch
import torch.utils.tensorboard as torch_tensorboard
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

import lantern
import lantern.utils.tensorboard as lantern_tensorboard


def _events_by_run(log_dir):
    """{run folder relative to log_dir: [Event without wall_time, ...]} over every event file below log_dir."""
    runs = {}
    for folder, _, files in sorted(os.walk(log_dir)):
        for name in sorted(f for f in files if "tfevents" in f):
            events = []
            for event in EventFileLoader(os.path.join(folder, name)).Load():
                event.wall_time = 0
                events.append(event)
            runs.setdefault(os.path.relpath(folder, log_dir), []).extend(events)
    return runs


def _write(library, tensorboard_module, log_dir, calls, **writer_kwargs):
    with tensorboard_module.SummaryWriter(str(log_dir), **writer_kwargs) as writer:
        calls(writer, library)
    return _events_by_run(log_dir)


def _ramp(*shape, low=0.0, high=1.0):
    """Evenly spaced float32 values in `shape`, the same array for both libraries."""
    return np.linspace(low, high, int(np.prod(shape)), dtype=np.float32).reshape(shape)


CASES = {
    "scalar_python_numbers": lambda w, t: [w.add_scalar("loss", 0.25, 0), w.add_scalar("loss", 3, 1),
                                           w.add_scalar("acc", np.float32(0.5))],
    "scalar_tensors": lambda w, t: [w.add_scalar("loss", t.tensor(1.5), 2), w.add_scalar("loss", t.ones(1, 1), 3),
                                    w.add_scalar("half", t.tensor(0.1, dtype=t.bfloat16), 4)],
    "scalar_new_style": lambda w, t: [w.add_scalar("f", 0.1, 1, new_style=True),
                                      w.add_scalar("d", 0.1, 2, new_style=True, double_precision=True)],
    "scalar_from_graph": lambda w, t: w.add_scalar("y", (t.ones(3, requires_grad=True) * 2).sum(), 7),
    "scalars_group": lambda w, t: [w.add_scalars("run/loss", {"train": 1.0, "test": t.tensor(2.0)}, 1),
                                   w.add_scalars("run/loss", {"train": 0.5, "test": 1.5}, 2)],
    "histogram_default_bins": lambda w, t: w.add_histogram("w", t.tensor(_ramp(101, low=-3, high=5)), 1),
    "histogram_rules": lambda w, t: [w.add_histogram("a", np.arange(50.0) ** 1.5, 1, bins="auto"),
                                     w.add_histogram("b", t.arange(40).reshape(4, 10), 2, bins=17, max_bins=5),
                                     w.add_histogram("c", t.tensor([0.5, 0.5, 7.0]), 3, bins=[0, 1, 2, 8, 9])],
    "image_chw_float": lambda w, t: w.add_image("img", t.tensor(_ramp(3, 4, 5, low=-0.2, high=1.2)), 1),
    "image_hwc_uint8": lambda w, t: w.add_image("img", t.arange(60).reshape(4, 5, 3).to(t.uint8) * 4, 1,
                                                dataformats="HWC"),
    "image_gray_hw": lambda w, t: [w.add_image("g", t.tensor(_ramp(4, 5)), 1, dataformats="HW"),
                                   w.add_image("c1", t.tensor(_ramp(1, 4, 5)), 2)],
    "images_batch": lambda w, t: [w.add_images("grid", t.tensor(_ramp(10, 3, 2, 3)), 1),
                                  w.add_images("nhwc", t.tensor(_ramp(3, 2, 3, 1)), 2,
                                               dataformats="NHWC")],
    "text": lambda w, t: [w.add_text("notes", "loss went **down**", 1), w.add_text("notes", "Grüße ✓", 2)],
    "hparams": lambda w, t: w.add_hparams({"lr": 0.01, "optimizer": "adam", "layers": 3, "nesterov": True,
                                           "dropout": t.tensor([0.5]), "skipped": None},
                                          {"hparam/loss": 0.75, "hparam/acc": 0.5},
                                          hparam_domain_discrete={"optimizer": ["adam", "sgd"], "layers": [2, 3]},
                                          run_name="trial", global_step=4),
}


@pytest.mark.parametrize("case", list(CASES))
def test_events_equal_torch(case, tmp_path):
    torch_runs = _write(torch, torch_tensorboard, tmp_path / "torch", CASES[case])
    lantern_runs = _write(lantern, lantern_tensorboard, tmp_path / "lantern", CASES[case])
    assert lantern_runs == torch_runs


def test_purge_step_events_equal_torch(tmp_path):
    calls = lambda w, t: w.add_scalar("loss", 1.0, 12)  # noqa: E731
    torch_runs = _write(torch, torch_tensorboard, tmp_path / "torch", calls, purge_step=10)
    lantern_runs = _write(lantern, lantern_tensorboard, tmp_path / "lantern", calls, purge_step=10)
    assert lantern_runs == torch_runs
    assert [e.step for e in lantern_runs["."]] == [0, 10, 10, 12]   # file version, restart marker, scalar


def test_accumulator_reads_values_back(tmp_path):
    with lantern_tensorboard.SummaryWriter(tmp_path) as writer:
        for step, loss in enumerate([2.0, 1.0, 0.5]):
            writer.add_scalar("Loss/train", lantern.tensor(loss), step)
        writer.add_histogram("weights", lantern.tensor([1.0, 2.0, 2.0, 3.0]), 0)
        writer.add_image("picture", lantern.ones(3, 2, 2), 0)
        writer.add_text("note", "hi", 0)
    events = EventAccumulator(str(tmp_path), size_guidance={"images": 0}).Reload()
    assert [(e.step, e.value) for e in events.Scalars("Loss/train")] == [(0, 2.0), (1, 1.0), (2, 0.5)]
    histogram = events.Histograms("weights")[0].histogram_value
    assert (histogram.num, histogram.sum, histogram.min, histogram.max) == (4, 8.0, 1.0, 3.0)
    image = events.Images("picture")[0]
    assert (image.width, image.height) == (2, 2) and image.encoded_image_string.startswith(b"\x89PNG")
    assert events.Tensors("note/text_summary")[0].tensor_proto.string_val == [b"hi"]


def test_default_log_dir_is_runs_date_host(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = lantern_tensorboard.SummaryWriter(comment="_lr0.1")
    writer.close()
    pattern = r"runs/[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(socket.gethostname()) + r"_lr0\.1"
    assert re.fullmatch(pattern, writer.get_logdir())
    assert os.listdir(writer.get_logdir())[0].startswith("events.out.tfevents.")


def test_close_then_add_opens_a_new_file_and_double_close_is_harmless(tmp_path):
    writer = lantern_tensorboard.SummaryWriter(tmp_path, filename_suffix=".x")
    writer.add_scalar("a", 1.0, 0)
    writer.close()
    writer.close()
    writer.add_scalar("a", 2.0, 1)
    writer.flush()
    writer.close()
    files = [f for f in os.listdir(tmp_path) if f.endswith(".x")]
    assert len(files) == 2
    assert [e.value for e in EventAccumulator(str(tmp_path)).Reload().Scalars("a")] == [1.0, 2.0]


def test_errors_match_torch(tmp_path):
    for module in (torch_tensorboard, lantern_tensorboard):
        with module.SummaryWriter(tmp_path / module.__name__) as writer:
            with pytest.raises(AssertionError, match="one element"):
                writer.add_scalar("bad", np.ones(3))
            with pytest.raises(ValueError, match="no element"):
                writer.add_histogram("bad", np.array([]))
            with pytest.raises(AssertionError, match="size of input tensor and input format are different"):
                writer.add_image("bad", np.ones((2, 2)), dataformats="CHW")
            with pytest.raises(TypeError, match="should be dictionary"):
                writer.add_hparams([("lr", 1)], {})
            with pytest.raises(ValueError, match="one of int, float, str, bool"):
                writer.add_hparams({"lr": [1]}, {})


def test_every_torch_writer_method_exists_and_unsupported_ones_say_so(tmp_path):
    torch_methods = {name for name in dir(torch_tensorboard.SummaryWriter) if not name.startswith("_")}
    lantern_methods = {name for name in dir(lantern_tensorboard.SummaryWriter) if not name.startswith("_")}
    assert torch_methods <= lantern_methods
    with lantern_tensorboard.SummaryWriter(tmp_path) as writer:
        for name in lantern_tensorboard.writer.UNSUPPORTED:
            with pytest.raises(NotImplementedError, match=f"does not support {name}: "):
                getattr(writer, name)("tag")
