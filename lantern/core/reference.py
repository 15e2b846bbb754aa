"""Reference mode: run only the readable formulas, loops and engine; every fast path steps aside.

lantern keeps one readable version of everything. A faster version is a named *specialisation* beside the code it
replaces (PyTorch's `_single_tensor_sgd` / `_multi_tensor_sgd` pattern), chosen by a visible condition, and held
to the readable version by a parity test. Each is declared with `@specialisation(...)`, which records it in
`SPECIALISATIONS` (the op card lists them; a test checks that every named parity test exists).
`lantern.set_reference_mode(True)`, or `LANTERN_REFERENCE=1` in the environment, turns all of them off.

>>> import lantern
>>> lantern.set_reference_mode(True)
>>> lantern.is_reference_mode(), fast_paths_on()
(True, False)
>>> lantern.set_reference_mode(False)
"""
import contextlib
import os
from dataclasses import dataclass
from typing import Callable


class _Switch:
    """The process-wide switch; hot paths read `mode.fast` (one attribute load)."""
    fast = os.environ.get("LANTERN_REFERENCE", "") in ("", "0")


mode = _Switch()


def set_reference_mode(enabled):
    """Turn reference mode on (only readable code runs) or off (named fast paths run where they apply)."""
    _switch(fast=not enabled)


def is_reference_mode():
    """True while reference mode is on."""
    return not mode.fast


def fast_paths_on():
    """True when specialisations may run (reference mode is off)."""
    return mode.fast


@contextlib.contextmanager
def reference_mode(enabled=True):
    """`with reference_mode():` runs the block with fast paths off, then restores the previous setting."""
    previous = mode.fast
    _switch(fast=not enabled)
    try:
        yield
    finally:
        _switch(fast=previous)


_on_switch = []


def on_switch(fn):
    """Call fn() whenever the mode changes: code chosen once rather than on each call (the generated dispatcher
    entries and runners) is chosen again."""
    _on_switch.append(fn)


def _switch(fast):
    if mode.fast != fast:
        mode.fast = fast
        for fn in _on_switch:
            fn()


@dataclass(frozen=True)
class Specialisation:
    """One named fast path: what it replaces, when it fires, and the test that holds it to the readable code."""
    name: str
    replaces: str
    when: str
    parity_test: str
    ops: tuple
    function: Callable


SPECIALISATIONS = {}


def specialisation(*, replaces, when, parity_test, ops=()):
    """Declare the decorated function a fast path of `replaces` (e.g. "optim.SGD: _single_tensor_sgd").

    `when` says in words when it fires (it never fires in reference mode); `parity_test` names the test,
    "tests/test_file.py::test_name", that compares it with the readable version; `ops` are the operator names
    whose op card lists it.
    """
    def register(function):
        name = function.__qualname__
        SPECIALISATIONS[f"{function.__module__}.{name}"] = Specialisation(
            name, replaces, when, parity_test, tuple(ops), function)
        return function
    return register


def specialisations_for(op_name):
    """The specialisations that serve operator `op_name`, for its op card."""
    return [s for s in SPECIALISATIONS.values() if op_name in s.ops]
