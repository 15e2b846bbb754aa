"""torchvision 0.28 (lantern.vision's test oracle) imported beside torch 2.13's CPU build.

PyPI's torchvision wheel is built for CUDA torch: its C++ operator library cannot load beside the CPU build, and
torchvision's import then stops while registering fake kernels for two operators it assumed that library had
declared (torchvision::nms and torchvision::qnms). Declaring their schemas first lets the pure-Python parts
(datasets, transforms, models, utils) import; the C++ operators (nms, roi_align, image decoding) stay unavailable.

Run as a script, it runs a program under torch with torchvision importable this way:
    python tests/torchvision_oracle.py program.py [args...]
"""
import runpy
import sys

import torch

for _op in ("nms", "qnms"):
    if not hasattr(torch.ops.torchvision, _op):
        torch.library.define(f"torchvision::{_op}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

import torchvision  # noqa: E402

__all__ = ["torchvision"]

if __name__ == "__main__":
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
