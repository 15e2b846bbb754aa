"""Which derivatives gradgradcheck really differentiated: the record behind "every derivative to second order".

conftest.py wraps `lantern.autograd.gradgradcheck` with `recording` for the whole test session. While a wrapped call
runs, a dispatch watcher sees every backward node the engine starts; when the call succeeds, the ops whose
derivative formula ran with `create_graph` (that is, the first-order vjp that gradgradcheck then differentiates
again) join `EXERCISED`. The guard in test_autograd_gradcheck_ops.py compares that set with the declared
derivatives; it reads the graphs that were differentiated, not the names that appear in the test files.

>>> import lantern
>>> x = lantern.tensor([0.5, 1.5], dtype=lantern.float64, requires_grad=True)
>>> names = set()
>>> recording(lantern.autograd.gradgradcheck, names)(lambda x: x.exp().sum(), (x,))
True
>>> sorted(names)
['exp', 'sum']
"""
import functools
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from lantern.autograd.node import OpNode
from lantern.core.state import tls
from lantern.profiler import watchers

EXERCISED = set()
_TESTS = pathlib.Path(__file__).parent
LOG_ENV = "LANTERN_SECOND_ORDER_LOG"  # a file the session writes EXERCISED to (the guard's subprocess reads it)


class _BackwardNodes(watchers.Watcher):
    """Collects the op names of the OpNodes the engine runs while building a graph (create_graph=True)."""

    def __init__(self):
        self.names = set()

    def backward_node(self, node, engine):
        if isinstance(node, OpNode) and tls.grad_enabled:
            self.names.add(node.derivative.op.name)
        super().backward_node(node, engine)


def recording(gradgradcheck, into=EXERCISED):
    """gradgradcheck that adds the ops whose derivatives it differentiated to `into` when it passes."""
    @functools.wraps(gradgradcheck)
    def wrapper(*args, **kwargs):
        watcher = watchers.install(_BackwardNodes())
        try:
            passed = gradgradcheck(*args, **kwargs)
        finally:
            watchers.remove(watcher)
        if passed:
            into.update(watcher.names)
        return passed
    return wrapper


def write_log():
    """At the end of a session started with LANTERN_SECOND_ORDER_LOG set, write EXERCISED there."""
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "w") as f:
            json.dump(sorted(EXERCISED), f)


GUARD = "test_every_derivative_is_exercised"
_session_files = set()  # test files whose every test this session runs (none when -k / -m filter it)


def note_session(session):
    """Remember which test files the session runs whole (the guard runs the others in a subprocess)."""
    option = session.config.option
    if not (option.keyword or option.markexpr or option.deselect):
        _session_files.update(pathlib.Path(item.path).name for item in session.items)


def files_calling_gradgradcheck():
    return sorted(p for p in _TESTS.glob("test_*.py") if "gradgradcheck" in p.read_text())


def exercised_in_all_files():
    """EXERCISED after every test file that calls gradgradcheck ran: those this session did not run whole run now,
    in a pytest subprocess that logs its record to a temporary file."""
    missing = [p for p in files_calling_gradgradcheck() if p.name not in _session_files]
    if not missing:
        return set(EXERCISED)
    with tempfile.TemporaryDirectory() as tmp:
        log = pathlib.Path(tmp, "exercised.json")
        paths = [str(p.relative_to(_TESTS.parent)) for p in missing]
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths,
                               *(f"--deselect={p}::{GUARD}" for p in paths)], cwd=_TESTS.parent, env={**os.environ, LOG_ENV: str(log)},
                              capture_output=True, text=True)
        # a failing test there is reported by that file's own run; only passing gradgradchecks were recorded
        assert log.exists(), done.stdout[-3000:] + done.stderr[-3000:]
        return EXERCISED | set(json.loads(log.read_text()))
