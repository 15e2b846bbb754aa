"""A one-line description of the machine a benchmark ran on, for the report.

>>> "cores" in describe({"numpy": "2.3.1"})
True
"""
import os
import platform


def cpu_model():
    """The CPU's marketing name from /proc/cpuinfo (Linux), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib():
    """Total RAM in GiB from /proc/meminfo (Linux), else None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / (1 << 20)
    except OSError:
        pass
    return None


def describe(versions):
    """CPU, core count, RAM, OS, Python, and the given package versions ({"numpy": "2.3.1", "torch": ...})."""
    packages = ", ".join(f"{name} {version}" for name, version in versions.items())
    ram = memory_gib()
    ram = "" if ram is None else f"{ram:.0f} GiB RAM, "
    return (f"{cpu_model()}, {os.cpu_count()} cores, {ram}{platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, {packages}")
