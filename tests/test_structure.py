"""lantern's structure rules (docs/internals/structure.md), checked on the source with tools/structure.py.

- imports point down the layers of DESIGN.md, save the listed exceptions;
- an import inside a function breaks an import cycle and says which (`# cycle: <module on the cycle>`), or keeps
  an optional dependency from loading with lantern and says which (`# optional: <package>`); one that does neither
  belongs at the top of the file;
- a function fits in FUNCTION_BUDGET lines, save the listed ones, which may only shrink;
- no private helper is defined twice, and none is left unused;
- the version counter is bumped through its one helper.

Every list below is a to-do list: an entry goes when its cause is fixed, and the test says so when that happens.
"""
import ast

import pytest

import structure
from structure import short

MODULES = structure.load_modules()
EDGES = structure.imports(MODULES)
DEFERRED = structure.deferred_imports(MODULES, EDGES)

# DESIGN.md's layers, lowest first: a module may import its own layer and those listed before it. Each entry names
# the top-level modules and packages (below `lantern.`) that belong to the layer.
LAYERS = [
    ("core", ["core"]),
    ("ops", ["ops", "_generated"]),  # _generated: the ops' bindings, entries, runners, backwards (make codegen)
    ("backends", ["backends"]),
    ("autograd", ["autograd"]),
    ("tensor", ["_tensor", "_tensor_str", "_construct", "_indexing", "_functions", "_legacy_types", "return_types",
                "_tensor_extras", "_inplace_views", "storage", "_sparse_products", "_tensor_subclasses"]),
    ("frontend", ["nn", "optim", "utils", "serialization", "_legacy_checkpoint", "_weights_only_unpickler",
                  "distributions", "amp", "random", "linalg", "special", "functional", "cpu", "cuda", "xpu",
                  "mps", "accelerator", "vision", "profiler", "debug", "inspect", "testing", "version", "__config__",
                  "torch_version", "sparse", "fft", "signal", "masked", "futures", "_inplace_functions",
                  "_nn_functions", "_from_memory", "_sym_functions", "_toplevel", "_streams", "overrides", "_C",
                  "_overridable_functions", "types", "quasirandom", "hub"]),
    ("jit", ["jit", "onnx", "_dynamo", "_functorch", "func", "functorch", "compiler", "library", "library_opcheck", "library_rules", "_jit_names"]),  # opcheck traces custom ops
    ("distributed", ["distributed", "multiprocessing"]),  # torch.multiprocessing.spawn starts ranks as an MPI job
    ("compat", ["compat"]),
    ("namespace", ["", "_codegen"]),   # lantern/__init__.py: the public namespace, which imports everything;
    # _codegen: the `make codegen` tool, which imports lantern to read its registry
]

# The public namespace (`import lantern`, then `lantern.zeros(...)` at call time) may be used from this layer up, as
# torch's own frontend does `import torch`; the layers below it are what the namespace is made of.
NAMESPACE_USERS_FROM = "frontend"

# Imports that point up the layers, (importer, imported), with why each is there.
ALLOWED_UPWARD = {
    # torch.utils.data.DistributedSampler asks the default process group for the rank and the world size.
    ("utils.data.distributed", "distributed"): "DistributedSampler reads the process group, as torch's does",
    # torch.nn.parallel.DistributedDataParallel broadcasts and all-reduces over the process group it is given.
    ("nn.parallel.distributed", "distributed"): "DDP broadcasts the module's state over its process group",
    ("nn.parallel.reducer", "distributed"): "DDP's reducer all-reduces gradient buckets over the process group",
    ("nn.modules.batchnorm", "distributed"): "SyncBatchNorm asks whether a process group exists, as torch's does",
    # Each rank the launcher starts is a program's entry point, as `python -m lantern.compat` is.
    ("distributed.launcher.worker", "compat"): "a launched rank runs its program with torch aliased to lantern",
    # Op formulas computing on raw arrays through the eager backend (issue 15 item 1: area 7 is moving them into
    # named specialisations; these go with it).
    ("ops.linalg_common", "backends.base"): "resize_out of out= arguments",
    ("ops.linalg_products", "backends.base"): "resize_out of out= arguments",
    ("ops.random", "backends.base"): "internal_overlap_check of the in-place samplers",
    ("ops.random_discrete", "backends.base"): "resize_out of multinomial's out=",
    ("ops.reduction", "backends.base"): "resize_out of out= arguments",
    ("ops.shape", "backends.base"): "internal_overlap_check",
    ("ops.tensor_shape", "backends.base"): "resize_out of out= arguments",
    # Ops whose kernels run composite code under no_grad (grad mode lives in autograd, above ops).
    ("ops.linalg_decompositions", "autograd.grad_mode"): "no_grad in a composite kernel",
    ("ops.nn_loss", "autograd.grad_mode"): "no_grad in a composite kernel",
    ("ops.nn_misc", "autograd.grad_mode"): "no_grad in a composite kernel",
    ("ops.nn_norm", "autograd.grad_mode"): "no_grad in a composite kernel",
    # Sparse layouts (area 3's work, in progress this session): the sparse ops build their results through the
    # sparse and CPU backends and lantern.tensor; to review when it lands.
    ("ops.sparse_coo", "backends.cpu"): "sparse kernels (in progress)",
    ("ops.sparse_coo", "backends.sparse"): "sparse kernels (in progress)",
    ("ops.sparse_coo", "_construct"): "sparse kernels (in progress)",
    ("ops.sparse_math", "backends.cpu"): "sparse kernels (in progress)",
    ("ops.sparse_math", "backends.sparse"): "sparse kernels (in progress)",
    ("_tensor_str", "sparse._print"): "printing sparse tensors (in progress)",
    ("_tensor", "sparse._checkpoint"): "rebuilding sparse tensors from checkpoints (in progress)",
    ("ops.out_overlap", "backends.base"): "resize_out and the cast check of out= arguments",
    ("ops.nn_activation", "autograd.grad_mode"): "no_grad in a composite kernel",
    # Quantized tensors: an integer tensor plus a quantizer held by its backend (QuantizedCPU); the quantized ops
    # read and build that quantizer, and compute on the integers through the CPU backend.
    ("ops.quantized", "backends.cpu"): "quantized kernels compute on the integers through the CPU backend",
    ("ops.quantized", "backends.quantized"): "quantized kernels read and make the backend's quantizer",
    ("ops.quantized_kernels", "backends.cpu"): "quantized kernels compute on the integers through the CPU backend",
    ("ops.quantized_kernels", "backends.quantized"): "quantized kernels read and make the backend's quantizer",
    ("ops.quantized_nn", "backends.cpu"): "quantized kernels compute on the integers through the CPU backend",
    ("ops.quantized_nn", "backends.quantized"): "quantized kernels read and make the backend's quantizer",
    ("ops.sparse_csr", "backends.cpu"): "sparse kernels (in progress)",
    ("ops.sparse_csr", "backends.sparse"): "sparse kernels (in progress)",
    ("ops.sparse_csr", "_construct"): "sparse kernels (in progress)",
    ("ops.sparse_csr_products", "backends.cpu"): "sparse kernels compute on the CSR parts through the CPU backend",
    ("ops.sparse_csr_products", "backends.sparse"): "sparse kernels register for, and make, the SparseCsrCPU layout",
    # The autograd kernel's generated recorders (lantern/autograd/recorder.py) are written with the other generated
    # code into lantern/_generated/, which sits with ops; they read the autograd layer's graph pieces.
    ("_generated.recorders", "autograd.graph"): "a recorder builds the node and its saved tensors",
    ("_generated.recorders", "autograd.kernel"): "a recorder computes, names the node and saves outputs as the kernel",
    ("_generated.recorders", "autograd.node"): "a recorder saves values as the kernel does",
    ("_generated.recorders", "autograd.recorder"): "the shared input metadata of recorded outputs",
    ("_generated.recorders", "autograd.views"): "a recorder records a view's base",
}

# Imports inside functions not yet in order, (importer, statement): they break no cycle (and belong at the top),
# or break one without saying which. All are in files other work is rewriting this session; each is put in order
# when that work lands.
DEFERRED_TODO = {
    # area 6 (codegen, dispatcher, registry, backends/base.py)
    ("_functions", "from .ops.dispatcher import call"),
    ("backends.base", "from ..ops import dispatcher"),
    ("ops.dispatcher", "from ..core.device import device_unavailable_error"),
    ("ops.derivative", "from . import derivative_helpers"),
    # area 7 (op files): upward imports of backends.base and autograd.grad_mode (see ALLOWED_UPWARD), and linalg.py
    ("ops.linalg_common", "from ..backends.base import resize_out"),
    ("ops.linalg_products", "from ..backends.base import resize_out"),
    ("ops.linalg_decompositions", "from ..autograd.grad_mode import no_grad"),
    ("ops.linalg_decompositions", "from .tensor_shape_products import linalg_cross"),
    ("ops.linalg_common", "import scipy.linalg"),
    ("ops.nn_loss", "from ..autograd.grad_mode import no_grad"),
    ("ops.nn_misc", "from ..autograd.grad_mode import no_grad"),
    ("ops.nn_norm", "from ..autograd.grad_mode import no_grad"),
    ("ops.reduction", "from ..backends.base import resize_out"),
    ("ops.shape", "from ..backends.base import internal_overlap_check"),
    ("ops.tensor_shape", "from ..backends.base import resize_out"),
    # area 3 (sparse layouts, in progress)
    ("_tensor_str", "from .sparse._print import sparse_repr"),
    ("backends.sparse", "import copy"),
    ("ops.sparse_coo", "from .._construct import as_tensor"),
    ("ops.sparse_csr", "from .._construct import as_tensor"),
}

# Imports of required packages kept inside a function on purpose, (importer, statement): why each waits.
DEFERRED_ON_PURPOSE = {
    ("distributed.mpi", "from mpi4py import MPI as module"):
        "importing mpi4py.MPI initializes MPI: `import lantern` must not, for programs that never go distributed",
}

FUNCTION_BUDGET = 40

# Functions longer than FUNCTION_BUDGET lines, with their length today: the number is a ceiling.
LONG_FUNCTIONS = {
    "optim.lbfgs.LBFGS._run": 53,
    "ops.nn_attention._multi_head_attention": 67,
    "jit.ir_text._tokenize": 66,
    "optim.lbfgs._strong_wolfe": 66,
    "ops.registry._exact_wrapper": 67,
    "nn.modules.multihead_attention.MultiheadAttention._scripted_forward": 63,
    "ops.nn_extra.embedding_bag": 63,
    "jit.frontend_emit.FunctionEmitter.emit_loop": 61,
    "onnx.export._export": 61,
    "jit.frontend_emit.FunctionEmitter.merge_if": 59,
    "jit.ir_text._Parser.parse_node": 57,
    "ops.nn_rnn.lstm_backward": 54,
    "nn.modules.module._call_with_hooks": 53,
    "ops.nn_conv._check_conv": 53,
    "utils.data.worker._worker_loop": 47,
    "ops.derivative.Derivative.__init__": 52,
    "ops.tensor_shape_products._parse_equation": 50,
    "nn.modules.module.Module.__setattr__": 49,
    "nn.modules.rnn.RNNBase._forward": 49,
    "onnx.convert._Converter.aten": 49,
    "optim.optimizer.Optimizer.add_param_group": 47,
    "jit.frontend_emit.FunctionEmitter.stmt_For": 46,
    "optim.optimizer.Optimizer.load_state_dict": 46,
    "jit.code._Printer.node_expr": 45,
    "onnx.export.export": 45,
    "ops.meta_util.iterator_strides": 45,
    "utils.tensorboard.summary.hparams": 45,
    "jit.frontend._Compiler.compile_def": 44,
    "ops.nn_rnn.gru_backward": 44,
    "jit.frontend_emit.FunctionEmitter.call_method": 43,
    "ops.nn_attention._attention_forward": 43,
    "jit.fusion_codegen.backward_source": 42,
    "jit.passes.fuse._materialise": 42,
    "jit.types.type_of": 42,
    "nn.modules.module.Module.load_state_dict": 42,
    "optim.lr_scheduler.OneCycleLR.__init__": 42,
    "_dynamo.eval_frame._CompiledCallable._capture": 41,
    "nn.modules.module.BackwardHook.setup_output_hook": 41,
}

# Copies of a function allowed to stay for now, each beside the one it copies (none: reduction's `_float_result`
# became pointwise_common.FLOAT when reduction.py was split).
ALLOWED_DUPLICATES = set()


def layer_of(module):
    first = "" if module == structure.PACKAGE else short(module).split(".")[0]
    for rank, (_, members) in enumerate(LAYERS):
        if first in members:
            return rank
    raise LookupError(module)


def layer_named(name):
    return [layer for layer, _ in LAYERS].index(name)


def test_every_module_has_a_layer():
    homeless = []
    for module in MODULES:
        try:
            layer_of(module)
        except LookupError:
            homeless.append(module)
    assert not homeless, f"add these modules' packages to a layer of LAYERS (see DESIGN.md's layers): {homeless}"


def _upward_imports():
    found = {}
    for edge in EDGES:
        if edge.implied or layer_of(edge.importer) >= layer_of(edge.target):
            continue
        if edge.target == structure.PACKAGE and layer_of(edge.importer) >= layer_named(NAMESPACE_USERS_FROM):
            continue
        found.setdefault((short(edge.importer), short(edge.target)), edge.line)
    return found


def test_imports_point_down_the_layers():
    upward = _upward_imports()
    unlisted = {pair: line for pair, line in upward.items() if pair not in ALLOWED_UPWARD}
    assert not unlisted, (
        "these imports point up DESIGN.md's layers ((importer, imported): line): move the code to the layer that "
        f"both can see, or pass it in from above (a registration function); {unlisted}")


def test_allowed_upward_imports_are_still_there():
    stale = set(ALLOWED_UPWARD) - set(_upward_imports())
    assert not stale, f"these upward imports are gone: remove them from ALLOWED_UPWARD: {sorted(stale)}"


def _deferred_problems():
    """{(module, statement): what is wrong, with where} for lantern imports inside functions that are not in order."""
    problems = {}
    for deferred in DEFERRED:
        if not deferred.of_lantern or deferred.gives_its_reason():
            continue
        where = f"{deferred.where} `{deferred.statement}`"
        if deferred.cycle:
            chain = [short(m) for m in deferred.cycle]
            problems[deferred.key] = (f"{where}: breaks the cycle {' -> '.join(chain)}: say so on the line, "
                                      f"`# cycle: {chain[0]} imports {chain[-1]}`")
        elif deferred.optional:
            problems[deferred.key] = (f"{where}: keeps {', '.join(deferred.optional)} from loading with lantern: "
                                      f"say so on the line, `# optional: {deferred.optional[0]}`")
        else:
            problems[deferred.key] = f"{where}: breaks no import cycle: move it to the top of the file"
    return problems


def test_deferred_imports_break_a_named_cycle():
    problems = [problem for key, problem in _deferred_problems().items() if key not in DEFERRED_TODO]
    assert not problems, "imports inside functions:\n" + "\n".join(problems)


def test_deferred_todo_entries_are_still_needed():
    stale = {key for key in DEFERRED_TODO if key[1].split()[1].startswith((".", "lantern"))} - set(_deferred_problems())
    assert not stale, f"these are in order now (or gone): remove them from DEFERRED_TODO: {sorted(stale)}"


def test_deferred_imports_of_other_packages_are_optional_dependencies():
    required = [f"{d.where} `{d.statement}`" for d in DEFERRED
                if not d.of_lantern and not d.optional and d.key not in DEFERRED_TODO | set(DEFERRED_ON_PURPOSE)]
    assert not required, f"the standard library and required dependencies load at the top of the file: {required}"


def test_functions_fit_the_budget():
    # generated code (lantern/_generated) is unrolled on purpose; its generators are held to the budget
    lengths = {short(f.name): f.length for f in structure.functions(MODULES)
               if not f.module.startswith(structure.GENERATED)}
    too_long = {name: n for name, n in lengths.items() if n > max(FUNCTION_BUDGET, LONG_FUNCTIONS.get(name, 0))}
    assert not too_long, (
        f"these functions are longer than {FUNCTION_BUDGET} lines (or than their LONG_FUNCTIONS entry): split them "
        f"into named steps: {too_long}")


def test_long_function_entries_are_still_needed():
    # generated code (lantern/_generated) is unrolled on purpose; its generators are held to the budget
    lengths = {short(f.name): f.length for f in structure.functions(MODULES)
               if not f.module.startswith(structure.GENERATED)}
    stale = {name: lengths.get(name) for name in LONG_FUNCTIONS if lengths.get(name, 0) <= FUNCTION_BUDGET}
    assert not stale, f"these fit the budget now, or are gone (None): remove them from LONG_FUNCTIONS: {stale}"


def _private_helpers():
    """{(signature, body without docstring): [module.name, ...]} for module-level functions with the same code, in
    groups that hold a private one (the public ones may be PyTorch's API, which repeats itself: `is_available`)."""
    groups = {}
    for module in MODULES.values():
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef):
                body = node.body[1:] if ast.get_docstring(node) is not None else node.body
                key = (ast.dump(node.args), "".join(ast.dump(statement) for statement in body))
                groups.setdefault(key, []).append(f"{short(module.name)}.{node.name}")
    return {key: names for key, names in groups.items()
            if any(name.rsplit(".", 1)[1].startswith("_") and not name.endswith("__") for name in names)}


def test_no_private_helper_is_defined_twice():
    copies = [sorted(names) for names in _private_helpers().values() if len(set(names) - ALLOWED_DUPLICATES) > 1]
    assert not copies, f"these private helpers are copies of one another: keep one and import it: {copies}"


def test_allowed_duplicates_are_still_copies():
    copied = {name for names in _private_helpers().values() if len(names) > 1 for name in names}
    stale = ALLOWED_DUPLICATES - copied
    assert not stale, f"remove these from ALLOWED_DUPLICATES: {sorted(stale)}"


def _version_writes(node):
    """The `x._vc[...] += ...` statements under node, outside TensorImpl._bump_version."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef) and child.name == "_bump_version":
            continue
        if isinstance(child, ast.AugAssign) and "._vc[" in ast.unparse(child.target):
            yield child
        yield from _version_writes(child)


def test_versions_are_bumped_through_their_helper():
    """An in-place write bumps the version counter a base shares with its views through
    TensorImpl._bump_version, so the rule lives in one place."""
    written_out = [f"{module.path.relative_to(structure.ROOT)}:{node.lineno} {ast.unparse(node)}"
                   for module in MODULES.values() for node in _version_writes(module.tree)]
    assert not written_out, f"call t._bump_version() instead: {written_out}"


# Private names nothing in lantern, its tests or its docs calls, kept because PyTorch programs reach them: each
# with the torch attribute it mirrors (checked to exist).
TORCH_PRIVATE_API = {
    "amp.grad_scaler.GradScaler._found_inf_per_device": "torch.amp.GradScaler._found_inf_per_device",
    "jit.module.RecursiveScriptModule._method_names": "torch._C.ScriptModule._method_names",
    "optim.lr_scheduler._LRScheduler": "torch.optim.lr_scheduler._LRScheduler",
}


def _unused_private_names():
    extra = [*(structure.ROOT / "tests").rglob("*.py"), *(structure.ROOT / "bench").rglob("*.py"),
             *(structure.ROOT / "docs").rglob("*.md"), structure.ROOT / "README.md"]
    # this file and docs/internals/structure.md name the listed ones themselves
    return structure.unused_private_names(MODULES, [path for path in extra
                                                    if path.name not in ("test_structure.py", "structure.md")])


def test_no_private_name_is_dead():
    dead = sorted(set(_unused_private_names()) - set(TORCH_PRIVATE_API))
    assert not dead, f"nothing refers to these: remove them (or list them in TORCH_PRIVATE_API): {dead}"


@pytest.mark.parametrize("name", sorted(TORCH_PRIVATE_API))
def test_torch_private_api_entries_mirror_torch(name):
    import torch   # the oracle: the entry must name something torch has
    path = TORCH_PRIVATE_API[name].split(".")
    obj = torch
    for part in path[1:]:
        obj = getattr(obj, part)
    assert name in _unused_private_names(), f"{name} is used now: remove it from TORCH_PRIVATE_API"


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_layers_name_only_existing_modules(layer):
    members = dict(LAYERS)[layer]
    tops = {"" if m == structure.PACKAGE else short(m).split(".")[0] for m in MODULES}
    assert set(members) <= tops, f"layer {layer} names modules that do not exist: {set(members) - tops}"
