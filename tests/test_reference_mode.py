"""Reference mode (lantern/core/reference.py): the switch, and the registry of named fast paths.

`LANTERN_REFERENCE=1` at start, `lantern.set_reference_mode(flag)` and `with lantern.reference_mode():` turn every
`@specialisation` off; each specialisation names the parity test that holds it to the readable code it replaces,
and that test must exist."""
import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lantern
from lantern.core import reference

REPO = Path(__file__).resolve().parent.parent


def _mode_at_start(value):
    """lantern.is_reference_mode() in a fresh interpreter started with LANTERN_REFERENCE=value (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "LANTERN_REFERENCE"}
    if value is not None:
        env["LANTERN_REFERENCE"] = value
    result = subprocess.run([sys.executable, "-c", "import lantern; print(lantern.is_reference_mode())"],
                            env=env, cwd=REPO, capture_output=True, text=True, timeout=300, check=True)
    return result.stdout.strip()


@pytest.mark.parametrize("value,expected", [(None, "False"), ("", "False"), ("0", "False"), ("1", "True")])
def test_environment_variable_sets_the_mode_at_start(value, expected):
    assert _mode_at_start(value) == expected


def test_set_reference_mode_turns_fast_paths_off_and_on():
    previous = lantern.is_reference_mode()
    try:
        lantern.set_reference_mode(True)
        assert lantern.is_reference_mode() and not reference.fast_paths_on()
        lantern.set_reference_mode(False)
        assert not lantern.is_reference_mode() and reference.fast_paths_on()
    finally:
        lantern.set_reference_mode(previous)


@pytest.mark.parametrize("outer", [True, False])
def test_context_manager_nests_and_restores_even_after_an_error(outer):
    with lantern.reference_mode(outer):
        with pytest.raises(ZeroDivisionError):
            with lantern.reference_mode(not outer):
                assert lantern.is_reference_mode() is (not outer)
                with lantern.reference_mode():
                    assert lantern.is_reference_mode()
                assert lantern.is_reference_mode() is (not outer)
                1 / 0
        assert lantern.is_reference_mode() is outer


def test_the_reference_tier_option_switches_the_mode_and_leaves_out_its_files():
    """`pytest tests --reference-tier` (make test's second pass, conftest.py) runs in reference mode and leaves out
    the files conftest.OUT_OF_REFERENCE_TIER lists."""
    command = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "--reference-tier",
               "--collect-only", "tests/test_bench.py", "tests/test_optim_foreach.py"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lantern reference mode: on" in result.stdout
    assert "<Module test_bench.py>" not in result.stdout and "<Module test_optim_foreach.py>" in result.stdout
    assert "deselected" in result.stdout


def _declared_in_source():
    """(where, name, keywords) for every `@specialisation(...)` decorator in lantern's source, read with `ast` (no
    import: a module lantern does not import yet is checked too); keywords maps each keyword to its AST value."""
    for path in sorted((REPO / "lantern").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "specialisation(" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for decorator in node.decorator_list:
                func = decorator.func if isinstance(decorator, ast.Call) else None
                if getattr(func, "id", getattr(func, "attr", None)) == "specialisation":
                    keywords = {k.arg: k.value for k in decorator.keywords}
                    yield f"{path.relative_to(REPO)}:{node.lineno}", node.name, keywords


def _test_functions(test_file):
    """The names of the test functions (module level, or methods of Test classes as Class::name) in a file."""
    tree = ast.parse(test_file.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.update(f"{node.name}::{item.name}" for item in node.body if isinstance(item, ast.FunctionDef))
    return names


def _parity_test_problem(spec):
    """What is wrong with `spec.parity_test` ("tests/file.py::test_name"), or None when it names a real test."""
    file_part, sep, test_part = spec.parity_test.partition("::")
    if not sep or not file_part.startswith("tests/") or not file_part.endswith(".py"):
        return f'parity_test {spec.parity_test!r} is not of the form "tests/<file>.py::<test function>"'
    test_file = REPO / file_part
    if not test_file.is_file():
        return f"parity_test names {file_part}, which does not exist"
    test_name = test_part.split("[")[0]  # a parametrized id names its function
    if test_name not in _test_functions(test_file):
        return f"parity_test names {test_name}, which {file_part} does not define"
    return None


def _where(function):
    """file:line of a function's definition, the file relative to the repository where it lies inside it."""
    try:
        line = inspect.getsourcelines(function)[1]
        return f"{os.path.relpath(inspect.getsourcefile(function), REPO)}:{line}"
    except (OSError, TypeError):
        return repr(function)


def _source_problem(keywords):
    """What is wrong with one decorator's keywords as written, or None."""
    if not all(isinstance(keywords.get(k), ast.AST) for k in ("replaces", "when", "parity_test")):
        return "it must say what it replaces (replaces=...), when it fires (when=...) and its parity_test=..."
    parity_test = keywords["parity_test"]
    if not (isinstance(parity_test, ast.Constant) and isinstance(parity_test.value, str)):
        return "parity_test must be a string literal, so that it can be checked without running lantern"
    return _parity_test_problem(reference.Specialisation("", "", "", parity_test.value, (), None))


def test_every_specialisation_names_a_parity_test_that_exists():
    """Every `@specialisation(...)` in lantern (all areas' fast paths), as written in the source and as registered
    in SPECIALISATIONS, must name an existing parity test."""
    problems = [f"  {name} (declared at {where}): {problem}" for where, name, keywords in _declared_in_source()
                if (problem := _source_problem(keywords))]
    for key, spec in sorted(reference.SPECIALISATIONS.items()):
        problem = _parity_test_problem(spec)
        if problem is None and not (spec.replaces and spec.when):
            problem = "it must say what it replaces (replaces=...) and when it fires (when=...)"
        if problem:
            problems.append(f"  {key} (declared at {_where(spec.function)}): {problem}")
    assert not problems, ("these @specialisation declarations need a parity test that exists, "
                          "written as parity_test=\"tests/<file>.py::<test function>\":\n" + "\n".join(problems))


def test_the_source_scan_finds_the_registered_specialisations():
    names = {name for _, name, _ in _declared_in_source()}
    missing = {spec.function.__name__ for spec in reference.SPECIALISATIONS.values()} - names
    assert not missing, f"registered without an @specialisation(...) decorator in lantern's source: {missing}"
    assert {"_multi_tensor_sgd", "_multi_tensor_adam"} <= names


@pytest.mark.parametrize("decorator,problem", [
    ('specialisation(replaces="r", when="w", parity_test="tests/test_reference_mode.py::test_absent")',
     "parity_test names test_absent, which tests/test_reference_mode.py does not define"),
    ('specialisation(replaces="r", when="w", parity_test=TEST)',
     "parity_test must be a string literal, so that it can be checked without running lantern"),
    ('specialisation(when="w", parity_test="tests/test_reference_mode.py::test_absent")',
     "it must say what it replaces (replaces=...), when it fires (when=...) and its parity_test=..."),
    ('specialisation(replaces="r", when="w", parity_test="tests/test_reference_mode.py::test_a_specialisation_"\n'
     '                "as_written_is_checked")', None)])
def test_a_specialisation_as_written_is_checked(decorator, problem):
    call = ast.parse(decorator).body[0].value
    assert _source_problem({k.arg: k.value for k in call.keywords}) == problem


def test_the_optimizers_fast_paths_are_registered():
    from lantern.optim import adam, sgd
    names = {spec.function for spec in reference.SPECIALISATIONS.values()}
    assert {sgd._multi_tensor_sgd, adam._multi_tensor_adam} <= names


@pytest.mark.parametrize("parity_test,problem", [
    ("tests/test_reference_mode.py::test_absent", "parity_test names test_absent, which tests/test_reference_mode.py "
                                                  "does not define"),
    ("tests/test_absent.py::test_x", "parity_test names tests/test_absent.py, which does not exist"),
    ("test_reference_mode.py", 'parity_test \'test_reference_mode.py\' is not of the form '
                               '"tests/<file>.py::<test function>"'),
    ("tests/test_reference_mode.py::test_environment_variable_sets_the_mode_at_start[1-True]", None)])
def test_parity_test_check_names_what_is_missing(parity_test, problem):
    spec = reference.Specialisation("fast_double", "double", "always", parity_test, (), lambda x: 2 * x)
    assert _parity_test_problem(spec) == problem


# (op, arguments) of structured ops of every runner shape the sample reaches: pointwise and row-major outputs,
# tensors in the first, second and third places, numbers among the arguments, a transposed operand
def _structured_calls():
    t = lantern.arange(12.).reshape(3, 4)
    u = lantern.linspace(-1, 1, 12).reshape(4, 3).t()
    return [("add", (t, u, 2)), ("mul", (t, u)), ("where", (t > 3, t, u)), ("clamp", (u, -0.5, 0.5)),
            ("sum", (t, [1], False, None)), ("exp", (u,)), ("pow", (2.0, u)), ("lerp", (t, u, 0.25))]


def _run(op_name, args):
    from lantern.ops.call_by_name import call_op
    return call_op(op_name, *args)


def test_generated_entries_and_runners_match_the_readable_ones():
    """Outside reference mode each op's entry and structured runner are generated (lantern/_generated/); inside,
    dispatcher.dispatch and Backend.run_structured run. Both give the same values, dtypes and strides."""
    from lantern.backends.base import Backend
    from lantern.core.dispatch_keys import DispatchKey
    from lantern.ops.dispatcher import dispatch
    from lantern.ops.registry import get
    previous = lantern.is_reference_mode()
    try:
        lantern.set_reference_mode(False)
        fast = [_run(name, args) for name, args in _structured_calls()]
        assert get("mul").scan.__name__ == "dispatch_t0_t1"
        assert get("mul").kernels[DispatchKey.CPU].__name__ == "run_2_args_t0_t1_pointwise"
        lantern.set_reference_mode(True)
        readable = [_run(name, args) for name, args in _structured_calls()]
        assert get("mul").scan.func is dispatch
        assert get("mul").kernels[DispatchKey.CPU].__func__ is Backend.run_structured
    finally:
        lantern.set_reference_mode(previous)
    for (name, _), a, b in zip(_structured_calls(), fast, readable):
        assert (a.tolist(), a.dtype, a.stride()) == (b.tolist(), b.dtype, b.stride()), name
