"""lantern.inspect.explain: the text report, the covered storage elements (torch's as_strided as the oracle), the
live views found at explain time, and the stride pictures (PNG opened with PIL, SVG text checked)."""
import gc
import re
import sys
import textwrap

import numpy as np
import pytest
import torch
from PIL import Image

import lantern
from lantern.inspect import explain
from lantern.inspect.explain import covered_indices, describe_ranges, storage_index_map


def text(t):
    return re.sub(r"data_ptr 0x[0-9a-f]+", "data_ptr 0x?", str(explain(t)))


def check(t, expected):
    assert text(t) == textwrap.dedent(expected).strip()


# ---- the text report -------------------------------------------------------------------------------------------

def test_contiguous_tensor_owning_its_storage():
    check(lantern.zeros(2, 3), """
    tensor float32[2, 3] on cpu, not a view
      storage          24 bytes = 6 float32 elements, data_ptr 0x?
      storage_offset   0
      sizes            [2, 3]
      strides          [3, 1]
      is_contiguous    True
      location         [i, j] at storage[i*3 + j*1]
      storage index    [[0, 1, 2],
                        [3, 4, 5]]
      covers           6 of the storage's 6 elements: 0-5
      live views       no other live tensor shares this storage
      version          0
      requires_grad    False
    """)


def test_transposed_view():
    x = lantern.arange(6.).view(2, 3)
    check(x.t(), """
    tensor float32[3, 2] on cpu, a view (not contiguous)
      storage          24 bytes = 6 float32 elements, data_ptr 0x?
      storage_offset   0
      sizes            [3, 2]
      strides          [1, 3]  (contiguous strides would be [2, 1])
      is_contiguous    False
      location         [i, j] at storage[i*1 + j*3]
      storage index    [[0, 3],
                        [1, 4],
                        [2, 5]]
      covers           6 of the storage's 6 elements: 0-5
      _base            float32[6], strides [1], offset 0
      live views       2 other tensors share this storage:
                         sizes   strides  offset  covers  relation
                         [6]     [1]      0       0-5     this tensor's _base
                         [2, 3]  [3, 1]   0       0-5     view of the same _base
      version          0  (one counter, shared by the 3 tensors)
      requires_grad    False
    """)


def test_slice_with_offset_and_step():
    y = lantern.arange(24).view(4, 6)[1:3, ::2]
    check(y, """
    tensor int64[2, 3] on cpu, a view (not contiguous)
      storage          192 bytes = 24 int64 elements, data_ptr 0x?
      storage_offset   6
      sizes            [2, 3]
      strides          [6, 2]  (contiguous strides would be [3, 1])
      is_contiguous    False
      location         [i, j] at storage[6 + i*6 + j*2]
      storage index    [[ 6,  8, 10],
                        [12, 14, 16]]
      covers           6 of the storage's 24 elements: 6, 8, 10, 12, 14, 16
      _base            int64[24], strides [1], offset 0
      live views       1 other tensor shares this storage:
                         sizes  strides  offset  covers  relation
                         [24]   [1]      0       0-23    this tensor's _base
      version          0  (one counter, shared by the 2 tensors)
      requires_grad    False
    """)


def test_expanded_view_repeats_elements_with_stride_0():
    check(lantern.tensor([1., 2., 3.]).expand(2, 3), """
    tensor float32[2, 3] on cpu, a view (not contiguous)
      storage          12 bytes = 3 float32 elements, data_ptr 0x?
      storage_offset   0
      sizes            [2, 3]
      strides          [0, 1]  (contiguous strides would be [3, 1])
      is_contiguous    False
      location         [i, j] at storage[i*0 + j*1]
      storage index    [[0, 1, 2],
                        [0, 1, 2]]
      covers           3 of the storage's 3 elements: 0-2; its 6 elements land on these 3, so some share one
      _base            float32[3], strides [1], offset 0
      live views       1 other tensor shares this storage:
                         sizes  strides  offset  covers  relation
                         [3]    [1]      0       0-2     this tensor's _base
      version          0  (one counter, shared by the 2 tensors)
      requires_grad    False
    """)


def test_view_chain_lists_base_and_siblings_and_forgets_dead_views():
    base = lantern.arange(12.)
    m = base.view(3, 4)
    col = m[:, 2]
    row = m[1]
    dead = base[2:8]
    del dead
    gc.collect()
    check(row, """
    tensor float32[4] on cpu, a view
      storage          48 bytes = 12 float32 elements, data_ptr 0x?
      storage_offset   4
      sizes            [4]
      strides          [1]
      is_contiguous    True
      location         [i] at storage[4 + i*1]
      storage index    [4, 5, 6, 7]
      covers           4 of the storage's 12 elements: 4-7
      _base            float32[12], strides [1], offset 0
      live views       3 other tensors share this storage:
                         sizes   strides  offset  covers    relation
                         [12]    [1]      0       0-11      this tensor's _base
                         [3, 4]  [4, 1]   0       0-11      view of the same _base
                         [3]     [4]      2       2, 6, 10  view of the same _base
      version          0  (one counter, shared by the 4 tensors)
      requires_grad    False
    """)
    e = explain(base)
    assert [v is w for v, w in zip(e.views, [m, col, row])] == [True, True, True]
    assert "a view whose _base is this tensor" in str(e)


def test_many_views_are_all_found_and_the_list_is_cut():
    x = lantern.arange(20.)
    rows = x.unbind(0)
    e = explain(x)
    assert [v._offset for v in e.views] == list(range(20)) and all(v is r for v, r in zip(e.views, rows))
    lines = str(e).splitlines()
    assert lines[-3] == "                     … and 8 more (all in .views)"
    assert lines[-4] == "                     []     []       11      11      a view whose _base is this tensor"


def test_requires_grad_non_leaf_view_with_retained_grad():
    a = lantern.ones(4, requires_grad=True)
    b = a * 3
    v = b[1:3]
    v.retain_grad()
    v.sum().backward()
    check(v, """
    tensor float32[2] on cpu, a view
      storage          16 bytes = 4 float32 elements, data_ptr 0x?
      storage_offset   1
      sizes            [2]
      strides          [1]
      is_contiguous    True
      location         [i] at storage[1 + i*1]
      storage index    [1, 2]
      covers           2 of the storage's 4 elements: 1-2
      _base            float32[4], strides [1], offset 0
      live views       1 other tensor shares this storage:
                         sizes  strides  offset  covers  relation
                         [4]    [1]      0       0-3     this tensor's _base
      version          0  (one counter, shared by the 2 tensors)
      requires_grad    True
      is_leaf          False
      grad_fn          SliceBackward0
      grad             float32[2]
      retains_grad     True
      _base.grad_fn    MulBackward0
    """)
    tv = torch.ones(4, requires_grad=True).mul(3)[1:3]
    assert type(tv.grad_fn).__name__ == "SliceBackward0" and type(tv._base.grad_fn).__name__ == "MulBackward0"


def test_version_counter_aliases_and_channels_last():
    x = lantern.zeros(3)
    d = x.detach()
    x.add_(1)
    d.mul_(2)
    report = text(x)
    assert "  version          2  (one counter, shared by the 2 tensors)" in report
    assert "[3]    [1]      0       0-2     an alias with no _base (detach(), .data)" in report
    y = lantern.empty(2, 3, 4, 5).to(memory_format=lantern.channels_last)
    assert "  is_contiguous    False  (channels_last: True)" in text(y)
    assert "  location         [i, j, k, l] at storage[i*60 + j*1 + k*15 + l*3]" in text(y)


def test_saved_output_alias_is_labelled():
    b = lantern.ones(3, requires_grad=True).exp()  # exp keeps its output for backward
    assert "saved for backward (an alias autograd keeps)" in text(b)


def test_explain_refuses_non_tensors():
    with pytest.raises(TypeError, match="explain: expected a Tensor, got list"):
        explain([1, 2])


# ---- covered storage elements against torch -----------------------------------------------------------------

GEOMETRIES = [
    ((2, 3), (3, 1), 0), ((3, 2), (1, 3), 0), ((2, 3), (6, 2), 6), ((4, 3), (0, 1), 0), ((4, 4), (2, 1), 0),
    ((2, 3, 2), (1, 4, 12), 2), ((5,), (7,), 3), ((3, 0), (1, 1), 4), ((), (), 5), ((2, 2, 2), (0, 0, 1), 1),
]


@pytest.mark.parametrize("size,stride,offset", GEOMETRIES)
def test_covered_and_index_map_match_torch_as_strided(size, stride, offset):
    n = offset + sum((k - 1) * s for k, s in zip(size, stride)) + 1 if 0 not in size else 1
    ref = torch.arange(n).as_strided(size, stride, offset)
    assert storage_index_map(size, stride, offset).tolist() == ref.tolist()
    assert covered_indices(size, stride, offset).tolist() == torch.unique(ref).tolist()


def test_covered_of_real_views_match_torch():
    views = [lambda x: x.view(4, 6)[1:3, ::2], lambda x: x.view(2, 3, 4).permute(2, 0, 1)[1:],
             lambda x: x.unfold(0, 5, 3), lambda x: x.view(4, 6).diagonal(), lambda x: x[3:9].expand(2, 6)]
    for fn in views:
        lv, tv = fn(lantern.arange(24)), fn(torch.arange(24))
        assert (lv.shape, lv.stride(), lv.storage_offset()) == (tv.shape, tv.stride(), tv.storage_offset())
        assert explain(lv).covered.tolist() == torch.unique(tv).tolist()


def test_big_covered_is_chunked_and_summarised(monkeypatch):
    size, stride = (600, 500), (1000, 2)
    whole = covered_indices(size, stride, 7)
    monkeypatch.setattr(sys.modules["lantern.inspect.addressing"], "_CHUNK", 1000)
    chunked = covered_indices(size, stride, 7)
    assert np.array_equal(whole, chunked) and len(whole) == 300000
    assert describe_ranges(np.arange(0, 10**6, 7)) == "0, 7, 14, 21, 28, 35, …, 999999 (142858 runs, step 7)"
    assert describe_ranges(np.array([0, 1, 2, 5, 6, 7, 10, 11, 12, 15, 16, 17, 20, 21, 22]), limit=4) == \
        "0-2, 5-7, …, 20-22 (5 runs of 3, step 5)"
    assert describe_ranges(np.array([0, 2, 3, 9, 10, 11, 30]), limit=3) == "0, …, 30 (4 runs)"
    assert describe_ranges(np.zeros(0, np.int64)) == "nothing"


# ---- pictures --------------------------------------------------------------------------------------------------

def _check_png(path, min_w=300, min_h=200):
    with Image.open(path) as img:
        assert img.format == "PNG"
        w, h = img.size
        assert min_w <= w <= 4000 and min_h <= h <= 4000
        colours = img.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is not None and len(colours) > 20   # not one flat colour: text, cells, fills


def test_png_of_a_transposed_view(tmp_path):
    e = explain(lantern.arange(6.).view(2, 3).t())
    path = e.save(str(tmp_path / "t.png"))
    _check_png(path)
    with Image.open(path) as img:
        rgb = img.convert("RGB")
        fills = {c for _, c in rgb.getcolors(maxcolors=1 << 20)}
    assert (0x8e, 0xca, 0xe6) in fills and (0xff, 0xb7, 0x03) in fills   # the first two rows' colours


def test_svg_shows_indices_values_and_uncovered_cells(tmp_path):
    y = lantern.arange(24.).view(4, 6)[1:3, ::2]
    svg = open(explain(y).save(str(tmp_path / "y.svg"))).read()
    assert svg.count("<svg") == 1
    assert "storage_offset 6" in svg and "strides [6, 2]" in svg
    assert "[i, j] → storage[6 + i·6 + j·2]" in svg
    assert "→ 16" in svg and "[1, 2]" in svg                # the last element and where it lives
    assert svg.count('fill="#eeeeee"') == 24 - 6            # uncovered storage cells are grey
    assert "covers 6 of 24 storage elements" in svg


def test_dot_of_3d_view_draws_labelled_slices():
    dot = explain(lantern.arange(24.).view(2, 3, 4).permute(2, 0, 1)).to_dot()
    assert dot.startswith("digraph storage {") and dot.rstrip().endswith("}")
    assert all(f"[{i}, :, :]" in dot for i in range(4))
    assert "[3, 1, 2]" in dot and "→ 23" in dot


def test_big_tensor_picture_is_limited(tmp_path):
    x = lantern.arange(10**6, dtype=lantern.float32).view(1000, 1000)[3:, 5::3]
    dot = explain(x).to_dot()
    storage_part = dot[dot.index("subgraph cluster_storage"):]
    assert storage_part.count("<TD BGCOLOR") == 64
    assert "… cells 0-2991 not drawn" in storage_part
    assert "… cells 3056-999999 not drawn (330987 of them covered)" in storage_part
    view_part = dot[dot.index("subgraph cluster_view"):dot.index("subgraph cluster_storage")]
    assert view_part.count("<TD BGCOLOR") == 7 * 9 and "→ 999998" in view_part
    _check_png(explain(x).save(str(tmp_path / "big.png")))


def test_pictures_of_scalar_empty_and_meta_tensors(tmp_path):
    _check_png(explain(lantern.tensor(2.5)).save(str(tmp_path / "s.png")), min_h=150)
    assert "no elements" in explain(lantern.zeros(0, 3)).to_dot()
    meta = explain(lantern.empty(3, 4, device="meta")[:, 1])
    assert "data_ptr 0x0" in str(meta)
    dot = meta.to_dot()
    assert "→ 9" in dot and "value" not in dot                # no values without memory
