"""Every structured kernel, replayed with another array library as `xp` (tools/xp_cupy_check.py): here the strict
NumPy namespace, whose arrays refuse NumPy's own functions, so a kernel that reaches NumPy directly fails by name.
On a machine with a GPU the same tool replays the kernels with CuPy."""
import xp_cupy_check

from lantern.backends import strict_numpy


def test_every_sampled_structured_kernel_runs_through_xp_alone():
    total, ran, problems, unsampled = xp_cupy_check.replay_all(strict_numpy)
    assert ran >= 0.7 * total, f"only {ran} of {total} structured ops sampled; not sampled: {unsampled}"
    assert not problems, "kernels that bypass xp or disagree:\n" + "\n".join(problems)
