"""Measure lantern's structure from its source: the import graph, its cycles, deferred imports, function lengths.

Everything here reads the source with `ast`; nothing imports lantern, so it works on a half-broken tree too.
tests/test_structure.py holds lantern to the rules of docs/internals/structure.md with these measurements;
run this file to print them:

    .venv/bin/python tools/structure.py            # summary: cycles, deferred imports, longest functions
    .venv/bin/python tools/structure.py --cycles   # every import cycle with its modules

Terms used throughout:
- an *import-time edge* A -> B is an import of lantern module B at the top level of A (run when A loads);
  a *deferred* import sits inside a function and runs when the function is first called;
- a deferred import *breaks a cycle* when its target reaches the importer through import-time edges,
  so moving it to the top would make loading one of the two modules need the other half-loaded;
- an *import cycle* is a strongly connected component (of two or more modules) of the graph of all edges.
The root package `lantern` (the public facade, which imports everything) is left out of the graph: a module
that imports it, as torch.nn's modules do `import torch`, reads its attributes at call time.
"""
import ast
import re
import sys
import tomllib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "lantern"
GENERATED = "lantern._generated"   # written by `make codegen`: unrolled on purpose, so left out of the budget
REASON_COMMENT = re.compile(r"#\s*(?P<kind>cycle|optional):\s*(?P<reason>.*)")


@dataclass(frozen=True)
class Import:
    """One `import`/`from ... import` statement's link to one lantern module."""
    importer: str
    target: str
    line: int
    deferred: bool        # inside a function body (runs at call time)
    implied: bool         # a package Python loads before the module the statement names
    comment: str          # a `# cycle: ...` or `# optional: ...` comment on the statement or the line above, or ""


@dataclass(frozen=True)
class Function:
    """A function or method and its length in source lines (decorators and docstring included)."""
    module: str
    qualname: str
    line: int
    length: int

    @property
    def name(self):
        return f"{self.module}.{self.qualname}"


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    lines: list = field(repr=False)


def module_name(path, root=ROOT):
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def load_modules(root=ROOT, package=PACKAGE):
    """Every module of the package, parsed, by dotted name."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        name = module_name(path, root)
        modules[name] = Module(name, path, path.name == "__init__.py", ast.parse(source, str(path)),
                               source.splitlines())
    return modules


def _resolve_from(module, node):
    """The absolute module a `from X import ...` statement names (relative levels resolved)."""
    if node.level == 0:
        return node.module
    base = module.name.split(".")
    if not module.is_package:
        base.pop()
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module, node, known):
    """The lantern modules one import statement loads (a `from pkg import name` names a submodule or pkg)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        source = _resolve_from(module, node)
        names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source for alias in node.names]
    seen = []
    for name in names:
        while name not in known and "." in name:     # `import lantern.a.b as c` of a name inside a module
            name = name.rsplit(".", 1)[0]
        if name in known and name not in seen:
            seen.append(name)
    return seen


def _parents(name, importer):
    """The packages Python runs before module `name`, less the root and the importer's own (already loading)."""
    parts = name.split(".")
    for end in range(2, len(parts)):  # from 2: the root is left out
        package = ".".join(parts[:end])
        if not (importer + ".").startswith(package + "."):
            yield package


def _comment(module, node):
    for number in (*range(node.lineno, node.end_lineno + 1), node.lineno - 1):
        match = REASON_COMMENT.search(module.lines[number - 1]) if number >= 1 else None
        if match:
            return match.group(0)[1:].strip()
    return ""


def _walk_imports(node, in_function=False):
    """(import node, deferred?) for every import under node; `if TYPE_CHECKING:` blocks never run, so skip them."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function
        inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _walk_imports(child, inside)


def imports(modules):
    """Every link from a lantern module to a lantern module, in file order."""
    found = []
    for module in modules.values():
        for node, deferred in _walk_imports(module.tree):
            comment = _comment(module, node)
            targets = _targets(module, node, modules)
            parents = [p for t in targets for p in _parents(t, module.name) if p not in targets]
            for target in [*targets, *parents]:
                if target != module.name:
                    found.append(Import(module.name, target, node.lineno, deferred, target in parents, comment))
    return found


@dataclass(frozen=True)
class DeferredImport:
    """An import statement inside a function, and the import cycle it breaks (None: it breaks none)."""
    module: Module
    node: ast.stmt
    of_lantern: bool
    cycle: tuple          # import-time chain from what it imports back to its module, or None
    optional: tuple       # optional packages (not standard, not required) that loading what it imports loads
    comment: str

    @property
    def statement(self):
        return ast.unparse(self.node)

    @property
    def key(self):
        return (short(self.module.name), self.statement)

    @property
    def where(self):
        return f"{self.module.path.relative_to(ROOT)}:{self.node.lineno}"

    def gives_its_reason(self):
        """Whether a `# cycle:` comment names a module of the cycle it breaks (other than the importer), or, for
        an import that breaks none, an `# optional:` comment names the optional package it keeps from loading."""
        words = set(re.findall(r"[\w.]+", self.comment))
        if self.cycle:
            return self.comment.startswith("cycle:") and any(
                {name, short(name), name.rsplit(".", 1)[-1]} & words for name in self.cycle[:-1])
        return self.comment.startswith("optional:") and bool(set(self.optional) & words)


def runtime_dependencies(root=ROOT):
    """The packages pyproject.toml's [project] dependencies install (what `import lantern` may need)."""
    specs = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    return {re.split(r"[<>=!~\[ ;]", spec)[0].replace("-", "_") for spec in specs}


def _loaded_packages(module):
    """The packages other than lantern that a module imports when it loads (not in functions, not under `try:`)."""
    found = set()
    pending = list(module.tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Try)):
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add(node.module.split(".")[0])
        pending.extend(ast.iter_child_nodes(node))
    return found - {PACKAGE}


def _optional_loaded(modules, load_time, starts, required):
    """The optional packages that loading these modules loads, through import-time edges."""
    seen, pending, packages = set(starts), list(starts), set()
    while pending:
        name = pending.pop()
        if name in modules:
            packages |= _loaded_packages(modules[name])
        for child in load_time.get(name, ()):
            if child not in seen:
                seen.add(child)
                pending.append(child)
    return tuple(sorted(p for p in packages if p not in sys.stdlib_module_names and p not in required))


def deferred_imports(modules, edges=None):
    """Every import statement inside a function, lantern's and other packages', in file order."""
    edges = imports(modules) if edges is None else edges
    load_time = graph(edges, deferred=False)
    required = runtime_dependencies()
    by_statement = {}
    for edge in edges:
        if edge.deferred:
            by_statement.setdefault((edge.importer, edge.line), []).append(edge)
    found = []
    for module in modules.values():
        for node, deferred in _walk_imports(module.tree):
            if not deferred:
                continue
            first = node.module if isinstance(node, ast.ImportFrom) and node.level == 0 else node.names[0].name
            of_lantern = (isinstance(node, ast.ImportFrom) and node.level > 0) or first.split(".")[0] == PACKAGE
            targets = [e.target for e in by_statement.get((module.name, node.lineno), []) if e.target != PACKAGE]
            chains = [path(load_time, target, module.name) for target in targets]
            cycle = next((tuple(chain) for chain in chains if chain), None)
            optional = (_optional_loaded(modules, load_time, targets, required) if of_lantern else
                        tuple(p for p in [first.split(".")[0]] if p not in sys.stdlib_module_names | required))
            found.append(DeferredImport(module, node, of_lantern, cycle, optional, _comment(module, node)))
    return found


def graph(edges, deferred=True):
    """{module: set of modules it imports}; deferred=False keeps only import-time edges."""
    result = {}
    for edge in edges:
        if edge.target != PACKAGE and (deferred or not edge.deferred):
            result.setdefault(edge.importer, set()).add(edge.target)
    return result


def strongly_connected(adjacency):
    """Tarjan's algorithm, iteratively: the components of two or more nodes, largest first."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    nodes = set(adjacency) | {t for targets in adjacency.values() for t in targets}
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(adjacency.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(adjacency.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(components, key=lambda c: (-len(c), c))


def path(adjacency, start, goal):
    """A shortest chain of imports from start to goal, or None."""
    previous = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            chain = []
            while node is not None:
                chain.append(node)
                node = previous[node]
            return chain[::-1]
        for child in sorted(adjacency.get(node, ())):
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return None


def functions(modules):
    """Every function and method with its length, longest first."""
    found = []

    def visit(module, node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                qualname = prefix + child.name
                found.append(Function(module.name, qualname, child.lineno, child.end_lineno - start + 1))
                visit(module, child, qualname + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(module, child, prefix + child.name + ".")
            else:
                visit(module, child, prefix)

    for module in modules.values():
        visit(module, module.tree, "")
    return sorted(found, key=lambda f: (-f.length, f.name))


def referenced_names(modules, extra_paths=()):
    """Every identifier lantern's code uses (names, attributes, imported names, words inside strings, which
    getattr-style lookups use), plus every word of the extra files (tests, docs)."""
    words = set()
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Name):
                words.add(node.id)
            elif isinstance(node, ast.Attribute):
                words.add(node.attr)
            elif isinstance(node, ast.alias):
                words.add(node.name.rsplit(".", 1)[-1])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                words.update(re.findall(r"[A-Za-z_]\w*", node.value))
    for extra in extra_paths:
        words.update(re.findall(r"[A-Za-z_]\w*", extra.read_text(encoding="utf-8", errors="replace")))
    return words


def unused_private_names(modules, extra_paths=()):
    """Private functions, methods and classes (one leading underscore, no decorator: a decorator registers) that
    nothing refers to by name: dead code, or PyTorch's private API that programs reach."""
    words = referenced_names(modules, extra_paths)
    found = []

    def visit(module, node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = child.name
                if name.startswith("_") and not name.startswith("__") and not child.decorator_list \
                        and name not in words:
                    found.append(f"{short(module.name)}.{prefix}{name}")
                if isinstance(child, ast.ClassDef):
                    visit(module, child, f"{prefix}{name}.")

    for module in modules.values():
        visit(module, module.tree, "")
    return found


def short(name):
    return name[len(PACKAGE) + 1:] if name.startswith(PACKAGE + ".") else name


def report(modules, show_cycles=False, longest=20):
    """The summary printed by `python tools/structure.py`."""
    edges = imports(modules)
    cycles = strongly_connected(graph(edges))
    load_cycles = strongly_connected(graph(edges, deferred=False))
    deferred = deferred_imports(modules, edges)
    ours = [d for d in deferred if d.of_lantern]
    breaking = [d for d in ours if d.cycle]
    written = [f for f in functions(modules) if not f.module.startswith(GENERATED)]
    lines = [
        f"modules: {len(modules)}, imports between lantern modules: {len(edges)}",
        f"import cycles (strongly connected components of all imports): {len(cycles)}, sizes "
        f"{[len(c) for c in cycles]}",
        f"import cycles among import-time edges only: {len(load_cycles)}, sizes {[len(c) for c in load_cycles]}",
        f"import statements inside functions: {len(deferred)}, {len(ours)} of them of lantern modules: "
        f"{len(breaking)} break a cycle ({sum(1 for d in breaking if d.gives_its_reason())} say which), "
        f"{sum(1 for d in ours if not d.cycle and d.optional)} keep an optional package from loading "
        f"({sum(1 for d in ours if not d.cycle and d.optional and d.gives_its_reason())} say which), "
        f"{sum(1 for d in ours if not d.cycle and not d.optional)} neither",
        f"functions (generated code left out): {len(written)}, over 40 lines: "
        f"{sum(1 for f in written if f.length > 40)}",
        f"{longest} longest functions:",
    ]
    lines += [f"  {f.length:5d}  {short(f.name)}" for f in written[:longest]]
    if show_cycles:
        for number, component in enumerate(cycles, 1):
            lines.append(f"cycle {number} ({len(component)} modules): {', '.join(short(m) for m in component)}")
    return "\n".join(lines)


if __name__ == "__main__":
    root = Path(sys.argv[sys.argv.index("--root") + 1]) if "--root" in sys.argv else ROOT
    print(report(load_modules(root), show_cycles="--cycles" in sys.argv))
