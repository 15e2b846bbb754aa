"""grid_sample of 4-D float32 input rounded as PyTorch's vectorized CPU kernel rounds it: the unnormalized
coordinate and the weighted sums are fused multiply-adds there, and bicubic sums each row along x before summing
the rows along y. A wide image with large values shows the difference (a pixel coordinate off by one rounding,
times a steep image, misses torch's values)."""
import numpy as np
import pytest
from oracle import check


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    image = (rng.random((1, 2, 30, 400)) * 255).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (1, 20, 30, 2)).astype(np.float32)
    return image, grid


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_float32_matches_torch(mode, padding_mode, align_corners):
    check(lambda m, x, g: m.nn.functional.grid_sample(x, g, mode, padding_mode, align_corners), *_inputs())
