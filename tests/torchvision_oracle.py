"""torchvision 0.28 (lantern.vision's test oracle) imported beside torch 2.13's CPU build.

PyPI's torchvision wheel is built for CUDA torch: its C++ operator library cannot load beside the CPU build, and
torchvision's import then stops while registering fake kernels for two operators it assumed that library had
declared (torchvision::nms and torchvision::qnms). Declaring their schemas first lets the pure-Python parts
(datasets, transforms, models, utils) import; the C++ operators (nms, roi_align, image decoding) stay unavailable.

Run as a script, it runs a program under torch with torchvision importable this way, as `python program.py` would
(the program's folder first on sys.path; processes it starts with spawn or forkserver get the same declarations):
    python tests/torchvision_oracle.py program.py [args...]
"""
import os
import runpy
import sys
from multiprocessing import spawn

import torch

for _op in ("nms", "qnms"):
    if not hasattr(torch.ops.torchvision, _op):
        torch.library.define(f"torchvision::{_op}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

import torchvision  # noqa: E402

__all__ = ["torchvision"]


class _DeclareInChild:
    """Rides in the preparation data a started process unpickles before it re-imports the program's main module:
    unpickling it runs this file there."""

    def __reduce__(self):
        return (runpy.run_path, (os.path.abspath(__file__),))


def _preparation_data_declaring(name, _original=spawn.get_preparation_data):
    data = _original(name)
    data["torchvision_oracle"] = _DeclareInChild()  # multiprocessing's prepare() reads only the keys it knows
    return data


if __name__ == "__main__":
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    spawn.get_preparation_data = _preparation_data_declaring
    runpy.run_path(sys.argv[0], run_name="__main__")
