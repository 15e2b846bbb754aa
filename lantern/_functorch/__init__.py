"""AOTAutograd for lantern: a function's forward and backward captured as two JIT graphs, run as one autograd node.

- joint_graph.py: trace the forward and the backward the derivative formulas run into one joint graph;
- partition.py: split the joint graph into a forward graph (which also returns what the backward reads) and a
  backward graph;
- compiled_function.py: the autograd Function whose forward runs the forward graph and whose backward runs the
  backward graph, each optimised (elementwise fusion) by lantern.jit's GraphExecutor.

torch.compile (lantern/_dynamo/eval_frame.py) uses it for a call that needs gradients. docs/internals/aot-autograd.md
walks through it with a printed graph.
"""
