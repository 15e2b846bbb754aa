"""Do lantern's structured kernels run on CuPy unchanged? The backend seam (docs/internals/backends.md) says a
kernel reaches its array library only through `xp`; this replays real kernel calls with `xp = cupy`.

Every structured op is called once on small CPU tensors with arguments made from its schema (float32, then int64
and bool inputs where float32 is refused; ops whose checks refuse all three are left out). Reference mode is on, so
each call goes through Backend.run_structured, which calls `op.impl(xp, out, dtype, *arrays)`: that call is
captured, then replayed with `cupy` as xp, the arrays copied to the GPU, and the outputs compared.
tests/test_xp_replay.py runs the same replay with lantern.backends.strict_numpy on every `make test`.

    python tools/xp_cupy_check.py            # needs CuPy and a GPU
    python tools/xp_cupy_check.py --xp lantern.backends.strict_numpy   # the same replay on the CPU, anywhere

Prints one line per kernel that does not run or does not agree, then the counts.
"""
import argparse
import importlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lantern  # noqa: E402
from lantern.ops.op_kinds import OpKind  # noqa: E402
from lantern.ops.registry import REGISTRY  # noqa: E402
from lantern.ops.dispatcher import call  # noqa: E402

NUMBERS = {"int": 2, "SymInt": 2, "float": 0.5, "Scalar": 2, "bool": False}
INPUT_DTYPES = (lantern.float32, lantern.int64, lantern.bool)


def sample_args(op, dtype):
    """Arguments for `op` from its schema: a 3x4 tensor for each Tensor (the same one, so shapes agree), a small
    number for each number, the default where there is one; None when an argument's type has no sample."""
    x = lantern.arange(1, 13, dtype=lantern.float64).reshape(3, 4).div(7).to(dtype)
    args = []
    for a in op.schema.args:
        if not a.required:
            args.append(a.default)
        elif a.is_tensor and not a.is_list:
            args.append(x)
        elif a.type in NUMBERS and not a.is_list:
            args.append(NUMBERS[a.type])
        elif a.type in ("int", "SymInt") and a.is_list:
            args.append([1])
        else:
            return None
    return tuple(args)


def captured_kernel_call(op):
    """(impl arguments) of op's first successful call over the input dtypes, or None if every one was refused."""
    seen = []

    def capture(xp, out, dtype, *arrays):
        op.impl.__wrapped__(xp, out, dtype, *arrays)
        seen.append((out.copy(), dtype, [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]))

    original = op.impl
    capture.__wrapped__ = original
    op.impl = capture
    try:
        for dtype in INPUT_DTYPES:
            args = sample_args(op, dtype)
            if args is None:
                return None
            try:
                call(op, args)
            except Exception:  # the op's checks refuse this sample (dtype, value range, shape): try the next
                continue
            if seen:
                return seen[0]
        return None
    finally:
        op.impl = original


def replay(op, captured, xp):
    """Run op's kernel with `xp` on copies of the captured arrays; None if it agrees, else what went wrong."""
    expected, dtype, arrays = captured
    to_xp = (lambda a: xp.asarray(a)) if xp is not np else (lambda a: a.copy())
    out = to_xp(np.zeros_like(expected))
    try:
        op.impl(xp, out, dtype, *[to_xp(a) if isinstance(a, np.ndarray) else a for a in arrays])
    except Exception as error:  # report every failure: this is what the check is for
        return f"raised {type(error).__name__}: {str(error).splitlines()[0][:120]}"
    got = xp.asnumpy(out) if hasattr(xp, "asnumpy") else np.asarray(out)
    if not np.allclose(got.astype(np.float64), expected.astype(np.float64), rtol=1e-5, atol=1e-6, equal_nan=True):
        return "values differ from NumPy's"
    return None


def replay_all(xp):
    """(structured ops, kernels replayed, ["op: problem", ...], [ops not sampled]) for array library `xp`."""
    structured = sorted((op for op in REGISTRY.values() if op.kind is OpKind.STRUCTURED), key=lambda op: op.name)
    ran, problems, unsampled = 0, [], []
    with lantern.reference_mode():  # every call through Backend.run_structured, which calls op.impl
        for op in structured:
            captured = captured_kernel_call(op)
            if captured is None:
                unsampled.append(op.name)
                continue
            ran += 1
            problem = replay(op, captured, xp)
            if problem is not None:
                problems.append(f"{op.name}: {problem}")
    return len(structured), ran, problems, unsampled


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xp", default="cupy", help="array library to replay the kernels with (default cupy)")
    xp = importlib.import_module(parser.parse_args(argv).xp)
    total, ran, problems, unsampled = replay_all(xp)
    print("\n".join(problems))
    print(f"{total} structured ops; {ran} kernels replayed with {xp.__name__}: "
          f"{ran - len(problems)} agree with NumPy, {len(problems)} do not; "
          f"{len(unsampled)} not sampled (no call from schema-made arguments went through)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
