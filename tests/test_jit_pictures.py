"""JIT pictures: Graph.to_dot, PassLog snapshots, save_pictures, and pass_log for compiled functions and modules."""
import os
import re

import numpy as np
import pytest
from PIL import Image

import lantern
from lantern.jit.executor import GraphExecutor
from lantern.jit.ir import parse_ir
from lantern.jit.passes import PassLog, optimize
from lantern.jit.visualize import pass_log, save_graph

CONTROL_FLOW = '''graph(%x : Tensor,
      %n : int):
  %2 : int = prim::Constant[value=2]()
  %3 : int = prim::Constant[value=3]()
  %t : bool = prim::Constant[value=1]()
  %c : bool = aten::gt(%n, %2)
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::mul(%x, %2)
      -> (%a)
    block1():
      -> (%x)
  %z : Tensor = prim::Loop(%n, %t, %y)
    block0(%i : int, %acc : Tensor):
      %s : Tensor = aten::add(%acc, %i, %2)
      -> (%t, %s)
  return (%z)
'''


def _node_stmt(dot, dot_id):
    return re.search(rf"^\s*{dot_id} \[(.*)\];$", dot, re.M).group(1)


def test_to_dot_draws_inputs_outputs_constants_and_blocks():
    g = parse_ir(CONTROL_FLOW)
    dot = g.to_dot()
    assert dot.startswith("digraph G {") and dot.rstrip().endswith("}")
    # graph inputs are ellipses named with their types; the output an ellipse
    assert 'shape=ellipse' in _node_stmt(dot, "in0") and "label=<%x : Tensor>" in _node_stmt(dot, "in0")
    assert "label=<%n : int>" in _node_stmt(dot, "in1")
    assert 'label="return"' in _node_stmt(dot, "out")
    # one box per non-constant node, its kind in bold; the unused constant %3 is a box of its own
    kinds = re.findall(r"label=<<B>([\w:]+)</B>", dot)
    assert sorted(kinds) == ["aten::add", "aten::gt", "aten::mul", "prim::Constant", "prim::If", "prim::Loop"]
    assert "value=3" in dot and "%3 (unused)" in dot
    # the used constants are drawn beside each use: %2 three times, True twice (Loop's input, the body's output)
    constants = re.findall(r'shape=plain, style="", fontsize=9, fontcolor="#444444", label=<([^>]*)>', dot)
    assert sorted(constants) == ["2", "2", "2", "True", "True"]
    # blocks are clusters named after their node, tied to it by a dashed edge
    assert re.findall(r"label=<(block\d of [\w:]+)>", dot) == ["block0 of prim::If", "block1 of prim::If",
                                                              "block0 of prim::Loop"]
    assert dot.count("style=dashed") == 3
    # edges from values carry name and type; graph inputs' edges need no label (the ellipse has it)
    assert re.search(r"^  n\d+ -> n\d+ \[label=<%c : bool>\];$", dot, re.M)
    assert re.search(r"^  n\d+ -> n\d+ \[label=<%acc : Tensor>\];$", dot, re.M)
    assert re.search(r"^  in0 -> n\d+;$", dot, re.M)
    edges = re.findall(r"^  (\w+) -> (\w+)", dot, re.M)
    uses = sum(len(n.inputs()) for n in g.all_nodes()) + \
        sum(len(b.outputs()) for n in g.all_nodes() for b in n.blocks()) + len(g.outputs())
    assert len(edges) == uses + 3
    # every edge statement is outside the clusters (so no node is pulled into a cluster it does not belong to)
    body = dot.split("\n")
    first_edge = next(i for i, line in enumerate(body) if " -> " in line)
    assert all("subgraph" not in line for line in body[first_edge:])


def test_to_dot_draws_subgraphs_of_fusion_groups(tmp_path):
    @lantern.jit.script
    def f(x):
        y = x * 2 + 1
        return y * y
    g = optimize(f.graph.copy())
    dot = g.to_dot()
    assert "label=<Subgraph of prim::FusionGroup>" in dot
    assert sorted(re.findall(r"label=<<B>([\w:]+)</B>", dot)) == ["aten::add", "aten::mul", "aten::mul",
                                                                   "prim::FusionGroup"]
    svg = open(save_graph(g, str(tmp_path / "g.svg"), title="fused")).read()
    assert "prim::FusionGroup" in svg and "aten::add" in svg and ">fused<" in svg


def _loop_function():
    def f(x, n: int):
        a = 2
        for i in range(3):
            x = x * a + i
        y = x + 1
        z = x + 1
        return y * z
    return lantern.jit.script(f)


def test_snapshots_keep_the_graph_text_before_and_after_each_pass():
    sf = _loop_function()
    graph = sf.graph.copy()
    start = str(graph)
    log = PassLog(snapshots=True)
    out = optimize(graph, log)
    assert log.snapshots and log[0].before_text == start and log[-1].after_text == str(out)
    for a, b in zip(log, log[1:]):
        assert a.after_text == b.before_text
    for r in log:
        assert r.changed == (r.before_text != r.after_text)
        assert r.before_dot.startswith("digraph G {") and r.after_dot.startswith("digraph G {")
        assert f"label=<before {r.name}: " in r.before_dot and f"label=<after {r.name}: " in r.after_dot
    plain = PassLog()
    optimize(sf.graph.copy(), plain)
    assert [r.name for r in plain] == [r.name for r in log] and str(plain) == str(log)
    assert all(r.before_dot is None and r.before_text is None for r in plain)


def test_pass_pictures_colour_what_each_pass_removed_and_added():
    sf = _loop_function()
    log = PassLog(snapshots=True)
    optimize(sf.graph.copy(), log)
    unroll = next(r for r in log if r.name == "unroll_loops")
    removed_boxes = sum(n for k, n in unroll.removed.items() if k != "prim::Constant")
    added_boxes = sum(n for k, n in unroll.added.items() if k != "prim::Constant")
    assert unroll.before_dot.count('fillcolor="#f4cccc", color="#cc0000", penwidth=2') == removed_boxes == 3
    assert unroll.after_dot.count('fillcolor="#d9ead3", color="#38761d", penwidth=2') == added_boxes
    assert added_boxes == unroll.added["aten::mul"] + unroll.added["aten::add"] > 0
    fuse = log[-1]
    assert fuse.after_dot.count('fillcolor="#d9ead3"') == fuse.added["prim::FusionGroup"] == 1


def test_save_pictures_writes_input_and_each_changed_pass(tmp_path):
    log = pass_log(_loop_function(), lantern.ones(2, 3), 3)
    paths = log.save_pictures(str(tmp_path / "svg"))
    changed = [(k, r) for k, r in enumerate(log, 1) if r.changed]
    assert [os.path.basename(p) for p in paths] == ["00_input.svg"] + [f"{k:02d}_{r.name}.svg" for k, r in changed]
    assert [r.name for _, r in changed] == ["cse", "unroll_loops", "constant_propagation", "peephole", "cse",
                                            "fuse"]
    first = open(paths[0]).read()
    assert "prim::Loop" in first and "%x.1 : Float(2, 3)" in first
    for path, (k, r) in zip(paths[1:], changed):
        svg = open(path).read()
        assert svg.count("<svg") == 1 and f"after {r.name}" in svg
        kinds = {n.split(" = ")[1].split("(")[0].split("[")[0].rstrip("_0123456789")
                 for n in r.after_text.split("\nwith ")[0].splitlines() if " = " in n and "::" in n}
        kinds.discard("prim::Constant")
        assert kinds and all(kind in svg for kind in kinds), (r.name, kinds)
    small = pass_log(lantern.jit.script(_Outer()), lantern.ones(3))
    png = small.save_pictures(str(tmp_path / "png"), fmt="png")
    assert [os.path.basename(p) for p in png] == ["00_input.png", "01_inline.png", "05_dead_code_elimination.png",
                                                  "07_fuse.png"]
    image = Image.open(png[-1])
    assert image.size[0] > 200 and image.size[1] > 200
    pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    assert len(np.unique(pixels, axis=0)) > 20
    assert (np.abs(pixels.astype(int) - [0xd9, 0xea, 0xd3]).sum(1) < 8).sum() > 500  # the new group, green


def test_save_pictures_needs_snapshots(tmp_path):
    log = PassLog()
    optimize(_loop_function().graph.copy(), log)
    with pytest.raises(ValueError, match=r"PassLog\(snapshots=True\)"):
        log.save_pictures(str(tmp_path))


class _Inner(lantern.nn.Module):
    def forward(self, x):
        return x * 2 + 1


class _Outer(lantern.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _Inner()

    def forward(self, x):
        y = self.inner(x)
        return y * y


def test_pass_log_reproduces_what_the_executor_runs():
    m = lantern.jit.script(_Outer())
    x = lantern.ones(3)
    log = pass_log(m, x)
    plan = GraphExecutor(m.graph, log_passes=True).plan_for([m, x])
    assert str(plan.log) == str(log) and str(plan.graph) == str(log.graph)
    inline = log[0]
    assert inline.name == "inline" and inline.removed["prim::CallMethod"] == 1
    assert inline.before_dot.count('fillcolor="#f4cccc"') == 1 and "prim::CallMethod" in inline.before_dot
    assert "<B>prim::CallMethod</B>" in inline.before_dot and "<B>prim::CallMethod</B>" not in inline.after_dot
    assert str(m.graph).count("prim::CallMethod") == 1  # the compiled module's own graph is untouched
    assert m(x).tolist() == [9.0, 9.0, 9.0]
    method = pass_log(m.forward, x, snapshots=False)
    assert str(method) == str(log) and method[0].before_dot is None
    with pytest.raises(TypeError, match="takes 2 inputs, got 3"):
        pass_log(m, x, x)
