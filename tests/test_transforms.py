"""lantern.vision.transforms against torchvision's documented behaviour, written out with torch ops (torchvision is
not installed): ToTensor (spec row 60), Normalize, Compose, Lambda."""
import numpy as np
import pytest
import torch

import lantern
from lantern.vision import transforms as T
from oracle import assert_same, noncontig

rng = np.random.default_rng(0)


def torch_to_tensor(pic):
    """torchvision.transforms.ToTensor as documented: HxWxC (or HxW) -> CxHxW; uint8 scaled to [0, 1]."""
    if pic.ndim == 2:
        pic = pic[:, :, None]
    img = torch.from_numpy(np.ascontiguousarray(pic)).permute(2, 0, 1).contiguous()
    return img.to(torch.get_default_dtype()).div(255) if img.dtype == torch.uint8 else img


def torch_normalize(img, mean, std):
    mean = torch.as_tensor(mean, dtype=img.dtype).view(-1, 1, 1)
    std = torch.as_tensor(std, dtype=img.dtype).view(-1, 1, 1)
    return (img - mean) / std


PICTURES = {
    "uint8_hwc": rng.integers(0, 256, (4, 5, 3), dtype=np.uint8),
    "uint8_hw": rng.integers(0, 256, (4, 5), dtype=np.uint8),
    "uint8_noncontiguous": noncontig(rng.integers(0, 256, (3, 4, 2), dtype=np.uint8)),
    "float64_hwc": rng.random((2, 3, 3)) * 7,
    "int32_hw": rng.integers(-5, 500, (3, 2)).astype(np.int32),
    "float32_single_channel": rng.random((3, 2, 1)).astype(np.float32),
}


@pytest.mark.parametrize("name", PICTURES)
def test_to_tensor_matches_documented_behaviour(name):
    pic = PICTURES[name]
    got = T.ToTensor()(pic)
    assert_same(got, torch_to_tensor(pic))


def test_to_tensor_follows_the_default_dtype_and_rejects_bad_input():
    lantern.set_default_dtype(lantern.float64)
    try:
        assert T.ToTensor()(PICTURES["uint8_hw"]).dtype == lantern.float64
    finally:
        lantern.set_default_dtype(lantern.float32)
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray. Got <class 'list'>"):
        T.ToTensor()([[1, 2]])
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 4 dimensions."):
        T.ToTensor()(np.zeros((1, 2, 3, 4), np.uint8))


@pytest.mark.parametrize("mean, std", [([0.5, 0.25, 0.0], [0.5, 2.0, 1.0]), (0.5, 0.25), ((1.0,), (3.0,))])
def test_normalize_matches_documented_behaviour(mean, std):
    x = rng.random((2, 3, 4, 5)).astype(np.float32)
    img = lantern.tensor(x).transpose(-1, -2)            # non-contiguous (..., C, W, H) view
    before = img.clone()
    out = T.Normalize(mean, std)(img)
    assert_same(out, torch_normalize(torch.tensor(x).transpose(-1, -2), mean, std), strides=False)
    assert lantern.equal(img, before)                    # not in place by default
    inplace = T.Normalize(mean, std, inplace=True)(img)
    assert inplace is img and lantern.allclose(img, out)


def test_normalize_errors_and_module():
    with pytest.raises(TypeError, match="img should be Tensor Image"):
        T.Normalize([0.5], [0.5])(np.zeros((1, 2, 2)))
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got lantern.int64."):
        T.Normalize([0.5], [0.5])(lantern.zeros(1, 2, 2, dtype=lantern.int64))
    with pytest.raises(ValueError, match=r"Expected tensor to be a tensor image of size \(..., C, H, W\)"):
        T.Normalize([0.5], [0.5])(lantern.zeros(2, 2))
    with pytest.raises(ValueError, match="std evaluated to zero after conversion to lantern.float32"):
        T.Normalize([0.5, 0.5], [1.0, 0.0])(lantern.zeros(2, 2, 2))
    assert isinstance(T.Normalize([0.5], [0.5]), lantern.nn.Module)


def test_compose_and_lambda():
    pic = PICTURES["uint8_hwc"]
    pipeline = T.Compose([T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3), T.Lambda(lambda t: t * 2)])
    expected = torch_normalize(torch_to_tensor(pic), [0.5] * 3, [0.5] * 3) * 2
    assert_same(pipeline(pic), expected)
    assert repr(pipeline) == ("Compose(\n    ToTensor()\n    Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])\n"
                              "    Lambda()\n)")
    with pytest.raises(TypeError, match="Argument lambd should be callable, got 'int'"):
        T.Lambda(3)
