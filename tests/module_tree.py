"""torch 2.13's public module tree, checked name by name against what `python -m lantern.compat` resolves.

Walks torch's public modules (pkgutil over torch's package, leaving out private modules, test modules and the
accelerator-only ones, which issue 14 item 1's tests check), takes each module's public names (`__all__`
where defined, else the classes and functions the module itself defines) and resolves every name through
lantern.compat.aliases' TorchAliasFinder, as an unmodified program's `torch.nn.modules.linear.Linear` would be.
What does not resolve is classified by the first matching rule in RULES, which gives the reason; the result is
written to docs/unsupported-torch-names.md, which tests/test_module_tree.py requires to be up to date.

Regenerate the list after making names resolve: `.venv/bin/python tests/module_tree.py --write`.
"""
import collections
import importlib
import inspect
import io
import logging
import os
import pkgutil
import re
import sys
import types
import warnings
from dataclasses import dataclass

import torch

from lantern.compat.aliases import TorchAliasFinder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST_PATH = os.path.join(ROOT, "docs", "unsupported-torch-names.md")

# Module-name parts that make a module accelerator-only (tested name by name elsewhere) or test-only.
ACCELERATOR_PARTS = {"cuda", "cudnn", "cusparselt", "mps", "xpu", "mtia", "miopen", "nccl", "mkldnn_acl"}
TEST_PARTS = {"test", "tests", "testing_utils"}


def torch_public_modules():
    """Names of torch's public, importable modules that are neither accelerator-only nor test-only, sorted."""
    names = ["torch"]
    with warnings.catch_warnings(), _silent_logging(), _silent_output():
        warnings.simplefilter("ignore")
        infos = list(pkgutil.walk_packages(torch.__path__, "torch.", onerror=lambda name: None))
    for info in infos:
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or ACCELERATOR_PARTS & set(parts) or TEST_PARTS & set(parts):
            continue
        names.append(info.name)
    return sorted(set(names))


def _import_quietly(name):
    """torch's module `name`, or None when it needs an optional package that is not installed."""
    with warnings.catch_warnings(), _silent_logging(), _silent_output():
        warnings.simplefilter("ignore")
        try:
            return importlib.import_module(name)
        except ImportError:
            return None


class _silent_logging:
    def __enter__(self):
        logging.disable(logging.CRITICAL)

    def __exit__(self, *exc):
        logging.disable(logging.NOTSET)


class _silent_output:
    """Some torch modules print a notice about optional packages on import; the walk keeps the page clean."""

    def __enter__(self):
        self.saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = io.StringIO()

    def __exit__(self, *exc):
        sys.stdout, sys.stderr = self.saved


def _is_private_module(module_name):
    return any(part.startswith("_") for part in (module_name or "").split("."))


def public_names(module):
    """A module's public names: its __all__ (those it really has), else the classes and functions it defines.

    A function implemented in C reports a private module (torch._C._linalg) as its home, so that counts as defined
    here too."""
    if hasattr(module, "__all__"):
        return sorted({name for name in module.__all__ if hasattr(module, name)})
    names = set()
    for name, value in vars(module).items():
        if name.startswith("_") or not (inspect.isclass(value) or inspect.isroutine(value)):
            continue
        home = getattr(value, "__module__", None)
        if home == module.__name__ or _is_private_module(home):
            names.add(name)
    return sorted(names)


def kind(value):
    """What a name is, for comparing torch's object with lantern's: module, class, callable or value."""
    if isinstance(value, types.ModuleType):
        return "module"
    if inspect.isclass(value):
        return "class"
    return "callable" if callable(value) else "value"


@dataclass
class Walk:
    """The outcome for torch's public tree: what resolved, what lantern lacks, what resolved to the wrong kind."""
    names: dict            # module name -> its public names (torch's)
    missing_modules: list  # torch modules with no lantern module at that path
    missing: dict          # module name -> names lantern lacks, in a module lantern has
    wrong_kind: list       # (module, name, torch's kind, lantern's kind)


def walk():
    """Resolve every public name of torch's tree through the compat finder."""
    finder = TorchAliasFinder()
    result = Walk({}, [], {}, [])
    for module_name in torch_public_modules():
        module = _import_quietly(module_name)
        if module is None:
            continue
        result.names[module_name] = public_names(module)
        proxy = _compat_module(finder, module_name)
        if proxy is None:
            result.missing_modules.append(module_name)
            continue
        for name in result.names[module_name]:
            try:
                value = getattr(proxy, name)
            except AttributeError:
                result.missing.setdefault(module_name, []).append(name)
                continue
            theirs, ours = kind(getattr(module, name)), kind(value)
            if theirs != ours and theirs != "value":
                result.wrong_kind.append((module_name, name, theirs, ours))
    return result


def _compat_module(finder, module_name):
    """What `import <module_name>` gives a program under compat (a proxy of a lantern module), or None."""
    try:
        spec = finder.find_spec(module_name)
    except ModuleNotFoundError:
        return None
    return spec.loader.create_module(spec)


# ---- why lantern does not have a name yet -----------------------------------------------------------------------

def _is_value(module, name):
    return not callable(getattr(module, name, None))


def _from_c(module, name):
    """A class made in C++ (pybind11), such as the TorchScript runtime's Graph or ScriptModule."""
    value = getattr(module, name, None)
    return inspect.isclass(value) and type(value).__module__.startswith("pybind11")


# (module pattern, name pattern or predicate, reason); the first match wins. A module pattern is a module's name
# ("torch.nn") or a subtree ("torch.nn.utils.*": the module and everything below it); a name pattern is a regular
# expression matched against the whole name.
RULES = [
    ("torch.accelerator.*", ".*", "the device-generic accelerator API of a CPU build"),
    ("torch.backends.*", ".*", "backend flags of libraries lantern does not use (NNPACK, XNNPACK, KleidiAI, quantized engines)"),
    ("torch.cpu.*", ".*", "the torch.cpu device module: CPU capability probing is not mirrored"),
    ("torch.amp.*", ".*", "autocast and GradScaler: issue 14 item 2"),
    ("torch.ao.*", ".*", "quantization (torch.ao): lantern computes in floating point only"),
    ("torch.quantization.*", ".*", "quantization (the torch.ao aliases): lantern computes in floating point only"),
    ("torch.nn.quantized.*", ".*", "quantized modules: lantern computes in floating point only"),
    ("torch.nn.quantizable.*", ".*", "quantizable modules: lantern computes in floating point only"),
    ("torch.nn.intrinsic.*", ".*", "fused modules for quantization: lantern computes in floating point only"),
    ("torch.nn.qat.*", ".*", "quantization-aware training: lantern computes in floating point only"),
    ("torch.distributed.*", ".*", "distributed training beyond lantern.distributed's process groups, collectives "
     "(on MPI), DDP and launcher: key-value stores (the ranks meet through MPI's launcher), RPC, FSDP, DTensor, "
     "pipelining, elastic agents"),
    ("torch.nn.parallel.*", ".*", "multi-device helpers: need accelerators or distributed training"),
    ("torch.fx.*", ".*", "FX graph capture: lantern captures graphs with its own JIT (lantern.jit)"),
    ("torch.export.*", ".*", "torch.export: lantern captures graphs with its own JIT (lantern.jit)"),
    ("torch.compiler.*", ".*", "TorchDynamo/Inductor controls: lantern has no Dynamo"),
    ("torch.library", "(triton_op|wrap_triton)", "Triton kernels as custom ops: GPU only"),
    ("torch.sparse.*", ".*", "sparse tensors: lantern has COO and CSR with mm/addmm/sum/softmax, not semi-structured "
     "(2:4) sparsity, invariant-check switches or sparse gradcheck"),
    ("torch.masked.*", ".*", "masked tensors: not implemented yet (lantern is dense and strided)"),
    ("torch.nested.*", ".*", "nested (jagged) tensors: not implemented yet (lantern is dense and strided)"),
    ("torch.fft.*", ".*", "FFTs: not implemented yet"),
    ("torch.signal.*", ".*", "signal windows: not implemented yet"),
    ("torch.special.*", ".*", "special functions: not implemented yet"),
    ("torch.package.*", ".*", "torch.package archives: not implemented"),
    ("torch.onnx.*", ".*", "torch.onnx's exporter internals: lantern.onnx.export writes ModelProtos its own way"),
    ("torch.jit.*", ".*", "TorchScript internals lantern's JIT does not mirror (frontend AST, mobile, fusion "
     "settings)"),
    ("torch.utils.data.datapipes.*", ".*", "DataPipes (deprecated in torch): not implemented"),
    ("torch.utils.data.*", "(DFIterDataPipe|DataChunk|IterDataPipe|MapDataPipe|functional_datapipe|"
     "guaranteed_datapipes_determinism|non_deterministic|runtime_validation.*|argument_validation)",
     "DataPipes (deprecated in torch): not implemented"),
    ("torch.utils.cpp_extension", ".*", "C++/CUDA extensions: lantern has no C++ side"),
    ("torch.utils.hipify.*", ".*", "ROCm source translation: lantern has no C++ side"),
    ("torch.utils.benchmark.examples.*", ".*", "torch.utils.benchmark's example scripts: not carried over "
     "(docs/benchmark-utils.md shows lantern's)"),
    ("torch.utils.benchmark.op_fuzzers.*", ".*", "torch.utils.benchmark's ready-made op fuzzers: not implemented yet "
     "(Fuzzer, FuzzedTensor and FuzzedSparseTensor are)"),
    ("torch.utils.benchmark.utils.compile", ".*", "torch.compile benchmarking helpers: lantern has no Dynamo"),
    ("torch.utils.benchmark.utils.cpp_jit", ".*", "C++ timing templates: lantern has no C++ side"),
    ("torch.utils.tensorboard.*", ".*", "TensorBoard summary helpers beyond SummaryWriter's methods"),
    ("torch.utils.*", ".*", "torch.utils helper not implemented yet"),
    ("torch.profiler.*", ".*", "profiler scheduling and Kineto tooling: lantern.profiler records and prints only"),
    ("torch.autograd.profiler.*", ".*", "the legacy autograd profiler: use lantern.profiler"),
    ("torch.autograd.*", ".*", "autograd API not implemented yet"),
    ("torch.optim.*", "(asgd|rprop)",
     "the functional optimizer form (torch.optim.<file>.<name>(params, grads, ...)): not implemented yet"),
    ("torch.optim.*", ".*", "optimizer not implemented yet"),
    ("torch.nn.modules.*", "Lazy.*", "lazy modules (shapes inferred at the first call): not implemented yet"),
    ("torch.nn", "Lazy.*", "lazy modules (shapes inferred at the first call): not implemented yet"),
    ("torch.nn.utils.*", ".*", "torch.nn.utils helper not implemented yet"),
    ("torch.nn.*", ".*", "layer or function not implemented yet"),
    ("torch.multiprocessing.*", ".*", "torch.multiprocessing's tensor reducers and pool/queue internals: lantern "
     "registers its own reducers on multiprocessing's ForkingPickler"),
    ("torch", _from_c, "TorchScript/C++ runtime class re-exported from torch._C: lantern's JIT has its own"),
    ("torch", r"(q_.*|quantize.*|quantized_.*|dequantize|int_repr|fake_quantize.*|fused_moving_avg_obs_fake_quant|"
     r"fbgemm_.*|choose_qparams.*|empty_quantized|qscheme|[q]u?int\d+|quint\d+x\d+)",
     "quantization: lantern computes in floating point only"),
    ("torch", r"(cudnn_.*|miopen_.*|mkldnn_.*|is_vulkan_available)", "a backend library's own kernel "
     "(cuDNN, MIOpen, oneDNN, Vulkan)"),
    ("torch", r"(sparse_.*|.*smm|spmm|hspmm|sspaddmm|.*indices_copy|values_copy|resize_as_sparse_)",
     "sparse tensors: lantern builds COO and CSR only (no CSC/BSR/BSC), without the *_copy forms or hybrid products"),
    ("torch", r"(Sym.*|sym_.*)", "symbolic shapes (torch.compile's dynamic shapes): lantern has no Dynamo"),
    ("torch", r"(float8_.*|float4_.*|bits.*|int[1-7]|uint[1-7]|uint16|uint32|uint64)",
     "a dtype lantern does not have (NumPy has no such type)"),
    ("torch", _is_value, "a constant lantern does not define yet"),
    ("torch", r".*_copy", "a view op's copying variant: not implemented yet"),
    ("torch", r".*[a-z0-9]_", "the in-place function form of an op: not implemented yet"),
    ("torch", r".*(Storage|Tensor)", "legacy typed storages (lantern has UntypedStorage only)"),
    ("torch", r"(.*autocast.*|GradScaler)", "autocast: issue 14 item 2"),
    ("torch", ".*", "op or function not implemented yet"),
    ("torch.*", ".*", "not implemented yet"),
]


def _in_pattern(module_name, pattern):
    if pattern.endswith(".*"):
        return module_name == pattern[:-2] or module_name.startswith(pattern[:-1])
    return module_name == pattern


def reason(module_name, name):
    """The reason RULES give for `module_name.name` being missing."""
    module = sys.modules[module_name]
    for module_pattern, name_rule, why in RULES:
        if not _in_pattern(module_name, module_pattern):
            continue
        if callable(name_rule) and name_rule(module, name):
            return why
        if isinstance(name_rule, str) and re.fullmatch(name_rule, name):
            return why
    raise AssertionError(f"no rule covers {module_name}.{name}")


# ---- the list file -------------------------------------------------------------------------------------------------

def top_level(module_name):
    return ".".join(module_name.split(".")[:2])


def counts(result):
    """{top-level module: (public names, resolved, missing)}."""
    table = collections.defaultdict(lambda: [0, 0])
    for module_name, names in result.names.items():
        row = table[top_level(module_name)]
        row[0] += len(names)
        if module_name in result.missing_modules:
            row[1] += len(names)
        else:
            row[1] += len(result.missing.get(module_name, ()))
    return {top: (total, total - missing, missing) for top, (total, missing) in sorted(table.items())}


def render(result):
    """The text of docs/unsupported-torch-names.md for this walk."""
    out = ["# torch names lantern does not support yet", "",
           "Generated by `.venv/bin/python tests/module_tree.py --write` from torch 2.13's public module tree (every",
           "public module but private, test-only and accelerator-only ones; each module's `__all__`, else the",
           "classes and functions it defines) and what `python -m lantern.compat` resolves. tests/test_module_tree.py",
           "fails when this page is out of date, in either direction: a name that starts resolving must leave the",
           "list, and a name that stops resolving appears here. Reasons come from the rules in tests/module_tree.py.",
           "The accelerator-only modules (torch.cuda, torch.mps, torch.xpu, torch.mtia, torch.backends.cudnn, ...)",
           "are checked name by name by the accelerator-surface tests instead.", "",
           "## Counts by top-level module", "",
           "| module | public names | resolve under compat | not supported yet |", "|---|---:|---:|---:|"]
    table = counts(result)
    for top, (total, ok, missing) in table.items():
        out.append(f"| {top} | {total} | {ok} | {missing} |")
    sums = [sum(row[i] for row in table.values()) for i in range(3)]
    out += [f"| **all** | {sums[0]} | {sums[1]} | {sums[2]} |", ""]

    out += ["## Modules lantern does not have", "",
            "Each line is a subtree of torch's modules that lantern has no module for, with its reason.", ""]
    subtrees = collections.defaultdict(list)
    for module_name in result.missing_modules:
        subtrees[reason(module_name, "")].append(module_name)
    for why, modules in subtrees.items():
        heads = _subtree_heads(modules)
        n = sum(len(result.names[m]) for m in modules)
        out.append(f"- {', '.join(f'`{h}`' for h in heads)} ({len(modules)} modules, {n} names): {why}")
    out.append("")

    out += ["## Names missing from modules lantern has", ""]
    groups = collections.defaultdict(list)
    for module_name, names in sorted(result.missing.items()):
        for name in names:
            groups[(module_name, reason(module_name, name))].append(name)
    for (module_name, why), names in groups.items():
        out += [f"### {module_name}: {why} ({len(names)})", "", " ".join(f"`{n}`" for n in names), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _subtree_heads(modules):
    """The fewest module names whose subtrees hold `modules` (a module whose parent is listed is left out)."""
    listed = set(modules)
    return [m for m in modules if not any(m.startswith(other + ".") for other in listed)]


if __name__ == "__main__":
    text = render(walk())
    if sys.argv[1:] == ["--write"]:
        with open(LIST_PATH, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {LIST_PATH}")
    else:
        sys.stdout.write(text)
