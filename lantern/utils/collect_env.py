"""lantern.utils.collect_env: the environment report to paste into a bug report, as torch.utils.collect_env (run it
with `python -m lantern.utils.collect_env`). The layout is torch's; the facts are lantern's: its version, a CPU
build (no CUDA, ROCm, cuDNN or XNNPACK), and the pip packages lantern computes with (NumPy, SciPy, ...).

>>> info = get_env_info()
>>> info.torch_version == lantern.__version__, info.is_cuda_available, info.cudnn_version
(True, 'False', None)
>>> print(pretty_str(info).splitlines()[0].replace(lantern.__version__, "<version>"))
PyTorch version: <version>
"""
import json
import locale
import os
import platform
import re
import subprocess
import sys
from collections import namedtuple

import lantern

SystemEnv = namedtuple("SystemEnv", [
    "torch_version", "is_debug_build", "cuda_compiled_version", "gcc_version", "clang_version", "cmake_version", "os",
    "libc_version", "python_version", "python_platform", "is_cuda_available", "cuda_runtime_version",
    "cuda_module_loading", "nvidia_driver_version", "nvidia_gpu_models", "cudnn_version", "is_xpu_available",
    "pip_version", "pip_packages", "conda_packages", "hip_compiled_version", "hip_runtime_version",
    "miopen_runtime_version", "caching_allocator_config", "is_xnnpack_available", "cpu_info"])

# Package names worth listing (a pip or conda line containing one of them).
PACKAGE_PATTERNS = ["torch", "lantern", "numpy", "scipy", "ml_dtypes", "numba", "cupy", "mpi4py", "onnx", "mypy",
                    "flake8", "optree", "triton", "nvidia", "magma", "mkl", "intel"]

ENV_INFO_FORMAT = """
PyTorch version: {torch_version}
Is debug build: {is_debug_build}
CUDA used to build PyTorch: {cuda_compiled_version}
ROCM used to build PyTorch: {hip_compiled_version}

OS: {os}
GCC version: {gcc_version}
Clang version: {clang_version}
CMake version: {cmake_version}
Libc version: {libc_version}

Python version: {python_version}
Python platform: {python_platform}
Is CUDA available: {is_cuda_available}
CUDA runtime version: {cuda_runtime_version}
CUDA_MODULE_LOADING set to: {cuda_module_loading}
GPU models and configuration: {nvidia_gpu_models}
Nvidia driver version: {nvidia_driver_version}
cuDNN version: {cudnn_version}
Is XPU available: {is_xpu_available}
HIP runtime version: {hip_runtime_version}
MIOpen runtime version: {miopen_runtime_version}
Is XNNPACK available: {is_xnnpack_available}
Caching allocator config: {caching_allocator_config}

CPU:
{cpu_info}

Versions of relevant libraries:
{pip_packages}
{conda_packages}
""".strip()


# ---- running commands ---------------------------------------------------------------------------------------------

def run(command):
    """(return code, stdout, stderr) of a shell command (a list runs without a shell), decoded and stripped."""
    try:
        process = subprocess.run(command, capture_output=True, shell=isinstance(command, str))
    except OSError as error:
        return 127, "", str(error)
    encoding = "oem" if get_platform() == "win32" else locale.getpreferredencoding()
    return process.returncode, process.stdout.decode(encoding).strip(), process.stderr.decode(encoding).strip()


def run_and_read_all(run_lambda, command):
    """The command's whole output, or None when it fails."""
    rc, out, _ = run_lambda(command)
    return out if rc == 0 else None


def run_and_parse_first_match(run_lambda, command, regex):
    """The first group of `regex`'s first match in the command's output, or None."""
    rc, out, _ = run_lambda(command)
    match = re.search(regex, out) if rc == 0 else None
    return match.group(1) if match else None


def run_and_return_first_line(run_lambda, command):
    """The first line of the command's output, or None when it fails."""
    rc, out, _ = run_lambda(command)
    return out.split("\n")[0] if rc == 0 else None


# ---- tools and accelerators ---------------------------------------------------------------------------------------

def get_gcc_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "gcc --version", r"gcc (.*)")


def get_clang_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "clang --version", r"clang version (.*)")


def get_cmake_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "cmake --version", r"cmake (.*)")


def get_nvidia_smi():
    """The nvidia-smi command of this platform."""
    if get_platform() != "win32":
        return "nvidia-smi"
    system_root = os.environ.get("SYSTEMROOT", "C:\\Windows")
    candidates = [os.path.join(system_root, "System32", "nvidia-smi"),
                  os.path.join(os.environ.get("PROGRAMFILES", "C:\\Program Files"), "NVIDIA Corporation", "NVSMI",
                               "nvidia-smi")]
    return next((f'"{path}"' for path in candidates if os.path.exists(path + ".exe")), "nvidia-smi")


def get_nvidia_driver_version(run_lambda):
    if get_platform() == "darwin":
        return run_and_parse_first_match(run_lambda, "kextstat | grep -i cuda", r"com[.]nvidia[.]CUDA [(](.*?)[)]")
    return run_and_parse_first_match(run_lambda, get_nvidia_smi(), r"Driver Version: (.*?) ")


def get_gpu_info(run_lambda):
    """The GPUs nvidia-smi lists (their UUIDs left out); lantern's CPU build uses none of them."""
    if get_platform() == "darwin":
        return None
    listed = run_and_read_all(run_lambda, get_nvidia_smi() + " -L")
    return None if listed is None else re.sub(r" \(UUID: .+?\)", "", listed)


def get_running_cuda_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "nvcc --version", r"release .+ V(.*)")


def get_cudnn_version(run_lambda):
    """None: lantern calls no cuDNN."""
    return None


def get_cuda_module_loading_config():
    return os.environ.get("CUDA_MODULE_LOADING", "") if lantern.cuda.is_available() else "N/A"


def get_cachingallocator_config():
    return os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")


def is_xnnpack_available():
    """False: lantern's kernels are NumPy's, not XNNPACK's."""
    return False


def get_intel_gpu_detected(run_lambda):
    """'N/A': lantern has no XPU backend to look for Intel GPUs with."""
    return "N/A"


def get_intel_gpu_driver_version(run_lambda):
    """The Intel GPU compute runtime's package version (Linux), or None."""
    if get_platform() != "linux":
        return None
    return get_linux_pkg_version(run_lambda, "intel-opencl-icd")


def get_intel_gpu_onboard(run_lambda):
    """The Intel GPUs lspci lists (Linux), or None."""
    if get_platform() != "linux":
        return None
    listed = run_and_read_all(run_lambda, "lspci")
    gpus = [line for line in (listed or "").splitlines() if "VGA" in line and "Intel" in line]
    return "\n".join(gpus) or None


def get_linux_pkg_version(run_lambda, pkg_name):
    """The version of a system package through dpkg, or rpm, or None."""
    version = run_and_parse_first_match(run_lambda, f"dpkg -s {pkg_name}", r"Version: (.*)")
    return version or run_and_return_first_line(run_lambda, f"rpm -q --qf '%{{VERSION}}' {pkg_name}")


# ---- the operating system and the CPU -----------------------------------------------------------------------------

def get_platform():
    for name in ("linux", "win32", "cygwin", "darwin"):
        if sys.platform.startswith(name):
            return name
    return sys.platform


def get_mac_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "sw_vers -productVersion", r"(.*)")


def get_windows_version(run_lambda):
    return run_and_read_all(run_lambda, 'powershell.exe "(Get-CimInstance Win32_OperatingSystem).Caption"')


def get_lsb_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "lsb_release -a", r"Description:\t(.*)")


def check_release_file(run_lambda):
    return run_and_parse_first_match(run_lambda, "cat /etc/*-release", r'PRETTY_NAME="(.*)"')


def get_os(run_lambda):
    """'<distribution> (<machine>)' on Linux, 'macOS <version> (<machine>)', or Windows' caption."""
    name = get_platform()
    if name in ("win32", "cygwin"):
        return get_windows_version(run_lambda)
    if name == "darwin":
        version = get_mac_version(run_lambda)
        return None if version is None else f"macOS {version} ({platform.machine()})"
    if name == "linux":
        description = get_lsb_version(run_lambda) or check_release_file(run_lambda) or name
        return f"{description} ({platform.machine()})"
    return name


def get_python_platform():
    return platform.platform()


def get_libc_version():
    return "-".join(platform.libc_ver()) if get_platform() == "linux" else "N/A"


def get_cpu_info(run_lambda):
    """lscpu's report (Linux), the CPU's brand (macOS), or the processors' properties (Windows)."""
    name = get_platform()
    if name == "linux":
        rc, out, err = run_lambda("lscpu")
    elif name == "darwin":
        rc, out, err = run_lambda("sysctl -n machdep.cpu.brand_string")
    elif name == "win32":
        rc, out, err = run_lambda('powershell.exe "gwmi -Class Win32_Processor | ConvertTo-Json"')
        if rc == 0:
            processors = json.loads(out)
            processors = processors if isinstance(processors, list) else [processors]
            out = "\n".join(f"{key}: {value}" for processor in processors for key, value in processor.items())
    else:
        return "None"
    return out if rc == 0 else err


# ---- packages and the report ---------------------------------------------------------------------------------------

def get_pip_packages(run_lambda, patterns=None):
    """('pip3', the `pip list` lines naming one of `patterns`), the lines None when pip fails."""
    patterns = PACKAGE_PATTERNS if patterns is None else patterns
    os.environ["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    out = run_and_read_all(run_lambda, [sys.executable, "-mpip", "list", "--format=freeze"])
    if out is None:
        return "pip3", None
    return "pip3", "\n".join(line for line in out.splitlines() if any(name in line for name in patterns))


def get_conda_packages(run_lambda, patterns=None):
    """The `conda list` lines naming one of `patterns`, or None without conda."""
    patterns = PACKAGE_PATTERNS if patterns is None else patterns
    out = run_and_read_all(run_lambda, os.environ.get("CONDA_EXE", "conda") + " list")
    if out is None:
        return None
    return "\n".join(line for line in out.splitlines()
                     if not line.startswith("#") and any(name in line for name in patterns))


def get_env_info():
    """The facts of the report, as a SystemEnv (yes/no facts as 'True'/'False', as torch's)."""
    pip_version, pip_packages = get_pip_packages(run)
    return SystemEnv(
        torch_version=lantern.__version__, is_debug_build=str(lantern.version.debug),
        cuda_compiled_version=lantern.version.cuda, hip_compiled_version=lantern.version.hip or "N/A",
        gcc_version=get_gcc_version(run), clang_version=get_clang_version(run),
        cmake_version=get_cmake_version(run), os=get_os(run), libc_version=get_libc_version(),
        python_version=f"{sys.version.replace(chr(10), ' ')} ({sys.maxsize.bit_length() + 1}-bit runtime)",
        python_platform=get_python_platform(), is_cuda_available=str(lantern.cuda.is_available()),
        cuda_runtime_version=get_running_cuda_version(run), cuda_module_loading=get_cuda_module_loading_config(),
        nvidia_driver_version=get_nvidia_driver_version(run), nvidia_gpu_models=get_gpu_info(run),
        cudnn_version=get_cudnn_version(run), is_xpu_available=str(lantern.xpu.is_available()),
        pip_version=pip_version, pip_packages=pip_packages, conda_packages=get_conda_packages(run),
        hip_runtime_version="N/A", miopen_runtime_version="N/A",
        caching_allocator_config=get_cachingallocator_config(), is_xnnpack_available=str(is_xnnpack_available()),
        cpu_info=get_cpu_info(run))


def pretty_str(envinfo):
    """The report's text: torch's layout, Yes/No for booleans, 'Could not collect' for what is unknown, 'No CUDA'
    for the GPU lines on a machine without one, package lines tagged [pip3] and [conda]."""
    fields = envinfo._asdict()
    gpu_models = envinfo.nvidia_gpu_models
    fields["nvidia_gpu_models"] = f"\n{gpu_models}\n" if gpu_models and "\n" in gpu_models else gpu_models
    gpu_fields = ["cuda_runtime_version", "nvidia_gpu_models", "nvidia_driver_version"]
    if not lantern.cuda.is_available() and all(fields[name] is None for name in gpu_fields):
        fields.update({name: "No CUDA" for name in gpu_fields + ["cudnn_version"]})
        fields["cuda_compiled_version"] = fields["cuda_compiled_version"] or "None"
    for name, value in fields.items():
        if value is None:
            fields[name] = "Could not collect"
        elif isinstance(value, bool):
            fields[name] = "Yes" if value else "No"
    for name, tag in (("pip_packages", envinfo.pip_version), ("conda_packages", "conda")):
        text = fields[name] or "No relevant packages"
        fields[name] = "\n".join(f"[{tag}] {line}" for line in text.split("\n"))
    fields["caching_allocator_config"] = envinfo.caching_allocator_config or "N/A"
    fields["cpu_info"] = envinfo.cpu_info
    return ENV_INFO_FORMAT.format(**fields)


def get_pretty_env_info():
    """The report as text (see get_env_info for what it holds)."""
    return pretty_str(get_env_info())


def main():
    """Print the report."""
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
