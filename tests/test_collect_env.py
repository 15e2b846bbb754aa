"""torch.utils.collect_env against torch: the same public names, the same answers from the same command outputs
(a fake run_lambda), and the same report layout for the same facts."""
import numpy as np
import pytest
import torch
import torch.utils.collect_env as theirs

import lantern
import lantern.utils.collect_env as ours
from module_tree import public_names

OUTPUTS = {
    "gcc --version": (0, "gcc (Debian 12.2.0-14) 12.2.0\nCopyright", ""),
    "cmake --version": (0, "cmake version 3.25.1", ""),
    "lsb_release -a": (1, "", "not found"),
    "cat /etc/*-release": (0, 'NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"', ""),
    "lscpu": (0, "Architecture: x86_64\nCPU(s): 2", ""),
}


def fake_run(command):
    return OUTPUTS.get(command if isinstance(command, str) else " ".join(command), (127, "", "no such command"))


def test_public_names_match_torch():
    assert public_names(ours) == public_names(theirs)
    assert ours.SystemEnv._fields == theirs.SystemEnv._fields


@pytest.mark.parametrize("name", ["get_gcc_version", "get_clang_version", "get_cmake_version", "get_os",
                                  "get_cpu_info", "get_lsb_version", "check_release_file", "get_gpu_info",
                                  "get_nvidia_driver_version", "get_conda_packages"])
def test_answers_from_the_same_command_output(name):
    assert getattr(ours, name)(fake_run) == getattr(theirs, name)(fake_run)


def test_run_helpers():
    for helper, args in [("run_and_read_all", ("lscpu",)), ("run_and_return_first_line", ("lscpu",)),
                         ("run_and_parse_first_match", ("gcc --version", r"gcc (.*)")),
                         ("run_and_read_all", ("missing",))]:
        assert getattr(ours, helper)(fake_run, *args) == getattr(theirs, helper)(fake_run, *args)
    assert ours.run("echo hi") == theirs.run("echo hi")
    assert ours.get_platform() == theirs.get_platform() and ours.get_libc_version() == theirs.get_libc_version()


@pytest.mark.parametrize("gpu", [None, "GPU 0: A\nGPU 1: B"])
def test_report_layout_matches_torch(gpu):
    facts = {field: None for field in theirs.SystemEnv._fields}
    facts.update(torch_version="2.13.0", is_debug_build="False", os="Debian (x86_64)", pip_version="pip3",
                 pip_packages="numpy==2.0\nscipy==1.17", conda_packages="", is_cuda_available="False",
                 caching_allocator_config="", cpu_info="Architecture: x86_64", nvidia_gpu_models=gpu)
    assert ours.pretty_str(ours.SystemEnv(**facts)) == theirs.pretty_str(theirs.SystemEnv(**facts))


def test_report_of_this_machine(capsys):
    ours.main()
    report = capsys.readouterr().out
    assert report.startswith("Collecting environment information...\nPyTorch version: ")
    labels = [line.split(":")[0] for line in theirs.get_pretty_env_info().splitlines()[:24]]
    assert [line.split(":")[0] for line in report.splitlines()[1:25]] == labels
    assert "Is CUDA available: False" in report


def test_config_reports_this_build():
    """torch.__config__: the same two functions as torch's, each a report of what lantern runs on."""
    assert public_names(lantern.__config__) == public_names(torch.__config__) == ["parallel_info", "show"]
    shown = lantern.__config__.show()
    assert f"NumPy {np.__version__}" in shown and "BLAS " in shown
    assert f"CPU capability usage: {lantern.backends.cpu.get_cpu_capability()}" in shown
    before = lantern.get_num_threads()
    try:
        for threads in (1, 2):
            lantern.set_num_threads(threads)
            info = lantern.__config__.parallel_info()
            assert f"\tget_num_threads() : {threads}\n" in info
            blas = 1 if threads > 1 and not lantern.is_reference_mode() else threads  # lantern's pool splits
            assert f"\tthreads : {blas}\n" in info
    finally:
        lantern.set_num_threads(before)
