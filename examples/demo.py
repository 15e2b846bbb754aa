"""`make demo`: train a CNN on handwritten digits, then a tour of the internals that training used.

    python examples/demo.py

The training is examples/train_digits.py (an ordinary PyTorch program). Each tour section is a small function
called from main(); it prints what PyTorch keeps in C++, and the last one draws pictures into examples/out/.
"""
import os
import sys

import lantern as torch
import train_digits


def heading(title):
    print(f"\n== {title} ==")


def creating_tensors():
    heading("creating tensors")
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    print("torch.tensor([[1.0, 2.0], [3.0, 4.0]]) ->", x.shape, x.dtype, x.device)
    print("torch.zeros(2, 3, dtype=torch.int32) ->", torch.zeros(2, 3, dtype=torch.int32).tolist())
    print("torch.arange(5) ->", torch.arange(5).tolist(), torch.arange(5).dtype)
    print("torch.full((2,), 7.5) ->", torch.full((2,), 7.5).tolist())
    print(x)


def dtype_promotion():
    heading("dtype promotion")
    ints, floats = torch.arange(3), torch.ones(3)
    print("int64 tensor + float32 tensor ->", (ints + floats).dtype)
    print("int64 tensor + 2.5 (a Python float) ->", (ints + 2.5).dtype, "(the default dtype)")
    print("int64 tensor / 2 ->", (ints / 2).dtype, "(true division always floats)")
    print("float32 tensor + float64 0-dim tensor ->", (floats + torch.tensor(1.0, dtype=torch.float64)).dtype,
          "(0-dim tensors do not raise the category's width)")
    print("torch.promote_types(torch.int32, torch.uint8) ->", torch.promote_types(torch.int32, torch.uint8))


def strided_views():
    heading("strided views: no data moves")
    x = torch.arange(48).view(6, 8)
    y = x[1:5:2, 1:4]
    print("x = torch.arange(48).view(6, 8); y = x[1:5:2, 1:4]")
    print("y.size():", tuple(y.size()), " y.stride():", y.stride(), " y.storage_offset():", y.storage_offset())
    print("y.data_ptr() - x.data_ptr():", y.data_ptr() - x.data_ptr(),
          f"bytes (= offset {y.storage_offset()} x itemsize {y.element_size()})")
    print("shared storage:", y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())
    print("y:", y.tolist())
    before = x._version
    y.mul_(10)
    print(f"after y.mul_(10): x._version {before} -> {x._version}, y._version {y._version} (one shared counter)")
    print("x row 1 now:", x[1].tolist())


def view_versus_reshape():
    heading("view vs reshape")
    t = torch.arange(12).view(3, 4).t()
    print("t = torch.arange(12).view(3, 4).t(): stride", t.stride(), "contiguous:", t.is_contiguous())
    try:
        t.view(12)
    except RuntimeError as error:
        print("t.view(12) raises RuntimeError:", error)
    r = t.reshape(12)
    print("t.reshape(12) copies:", r.data_ptr() != t.data_ptr(), r.tolist())
    c = torch.arange(12).view(3, 4)
    print("reshape of a contiguous tensor is a view:", c.reshape(2, 6).data_ptr() == c.data_ptr())


def expand_and_stride_zero():
    heading("expand: broadcasting is stride 0")
    row = torch.tensor([1.0, 2.0, 3.0])
    e = row.expand(4, 3)
    print("torch.tensor([1., 2., 3.]).expand(4, 3): size", tuple(e.size()), "stride", e.stride(),
          "same memory:", e.data_ptr() == row.data_ptr())
    print("column + row broadcasts to", tuple((torch.ones(4, 1) + row).shape))


def meta_device():
    heading("the meta device: shapes without data")
    a = torch.empty(4096, 1024, device="meta")
    b = torch.empty(1024, 512, device="meta")
    out = (a @ b).tanh().sum(dim=0)
    print("(a @ b).tanh().sum(dim=0) on meta ->", tuple(out.shape), out.dtype, out.device,
          "| data_ptr:", out.data_ptr(), "(no memory behind it)")
    try:
        a @ a
    except RuntimeError as error:
        print("a @ a on meta still checks shapes:", error)


def allocator_statistics():
    heading("the CPU allocator")
    stats = torch.core.allocator.cpu_allocator.stats
    before = stats.as_dict()
    for _ in range(1000):
        torch.ones(16) + 1
    after = stats.as_dict()
    print("before 1000 small adds:", before)
    print("after:                 ", after)
    print(after["num_allocs"] - before["num_allocs"], "allocations, live bytes back to",
          after["allocated_bytes"], "and each freed block went to the cache for the next one to reuse")


def dispatch_trace():
    heading("the dispatcher, traced")
    a, b = torch.ones(2, 3), torch.arange(3, dtype=torch.float32)
    with torch.debug.trace_dispatch(stream=sys.stdout):
        c = a + b
        c.t()
        a.to("meta").sum()


def autograd_graph():
    heading("autograd: the graph is recorded as ops run")
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (w * w).sum()
    node = loss.grad_fn
    print("loss.grad_fn ->", node.name(), "| next ->", [(n.name() if n else None, i) for n, i in node.next_functions])
    mul = node.next_functions[0][0]
    print("MulBackward0 saved self is w ->", mul._saved_self is w, "| its next ->",
          [(n.name() if n else None, i) for n, i in mul.next_functions])
    loss.backward()
    print("after loss.backward(): w.grad =", w.grad.tolist(), "(d/dw of sum(w*w) = 2w)")
    y = w * 1
    y.narrow(0, 1, 1).mul_(10)  # in place on a view: the base's history becomes CopySlices
    print("in place on a view of y -> y.grad_fn =", y.grad_fn.name())
    grad, = torch.autograd.grad(y.sum(), w)
    print("d(sum y)/dw ->", grad.tolist())


def inside_the_model(model, optimizer, test_set):
    heading("inside the trained model")
    state = model.state_dict()
    print(f"state_dict: {len(state)} entries, e.g.",
          {name: tuple(state[name].shape) for name in ("features.0.weight", "features.1.running_mean")},
          "(BatchNorm's running statistics are buffers)")
    first = model.features[0].weight
    print("Adam's state for features.0.weight:", {k: (tuple(v.shape) if v.dim() else v.item())
                                                   for k, v in optimizer.state[first].items()})
    images, labels = test_set[:4]
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    node, chain = loss.grad_fn, []
    while node is not None and len(chain) < 8:
        chain.append(node.name())
        node = next((n for n, _ in node.next_functions if n is not None and n.name() != "AccumulateGrad"), None)
    print("autograd graph from the loss back:", " -> ".join(chain), "-> ...")
    linear = model.classifier[-1]
    print(f"the last Linear: weight {tuple(linear.weight.shape)} is a leaf:", linear.weight.is_leaf,
          "| y = x @ weight.T + bias, traced through the dispatcher:")
    with torch.debug.trace_dispatch(stream=sys.stdout):
        linear(torch.ones(1, linear.in_features))


def seeing_inside(model, test_set, folder):
    heading("seeing inside: lantern.inspect and lantern.profiler")
    view = torch.arange(12.).view(3, 4)[:, 1::2]
    explanation = torch.inspect.explain(view)
    print(explanation)
    images, labels = test_set[:8]
    with torch.profiler.profile() as prof:
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))
    graph = torch.inspect.autograd_graph(loss, params=dict(model.named_parameters()))
    print(str(graph).splitlines()[0])
    os.makedirs(folder, exist_ok=True)
    pictures = [explanation.save(os.path.join(folder, "strided_view.png")),
                graph.save(os.path.join(folder, "autograd_graph.svg"))]
    print("pictures drawn:", ", ".join(pictures))


def main():
    model, optimizer, test_set = train_digits.main()
    inside_the_model(model, optimizer, test_set)
    creating_tensors()
    dtype_promotion()
    strided_views()
    view_versus_reshape()
    expand_and_stride_zero()
    meta_device()
    allocator_statistics()
    dispatch_trace()
    autograd_graph()
    seeing_inside(model, test_set, os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))


if __name__ == "__main__":
    main()
