"""One library's side of a benchmark run: a process that imports `--lib` and times workloads on request.

The runner keeps one worker per library alive and alternates between them, so the libraries take turns on the
same machine within one run; lantern's worker never imports torch. The protocol is one JSON object per line:

    $ python bench/worker.py --lib lantern --threads 1
    {"lib": "lantern", "version": "0.1.0", "numpy": "2.3.1", "threads": 1, "blas": "openblas 0.3.30"}  <- hello
    {"setup": "add_16", "min_time": 0.2}         ->  {"number": 61000}
    {"time": "add_16"}                           ->  {"seconds": 3.1e-06}
    {"setup": "mlp_train_step_compiled", "min_time": 0.2, "baseline": true}   (the workload's baseline setup)
    {"time": "mlp_train_step_compiled", "baseline": true}
    {"memory": "mlp_train_step", "steps": 5}     ->  {"memory": {"peak_mib": 9.8, "allocator_peak_mib": 6.8}}
Errors come back as {"error": "<traceback>"} and the worker carries on.
"""
import argparse
import importlib
import json
import os
import sys
import traceback

from memory import step_memory
from timing import Measurement
from workload import all_workloads

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS")


def import_library(name, threads):
    """Import `name` with every BLAS/OpenMP pool limited to `threads` (the variables are read at import)."""
    for var in THREAD_VARIABLES:
        os.environ[var] = str(threads)
    lib = importlib.import_module(name)
    lib.set_num_threads(threads)
    if name != "torch" and "torch" in sys.modules:
        raise SystemExit(f"{name} imported torch: its timings would not be its own")
    return lib


def blas(lib):
    """The BLAS the library's matmul runs on: torch names it in its build config, lantern uses NumPy's."""
    config = getattr(lib, "__config__", None)
    if config is not None and "BLAS_INFO=" in config.show():
        return config.show().split("BLAS_INFO=", 1)[1].split(",", 1)[0].upper()
    import threadpoolctl
    pools = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    pools = [i for i in pools if "numpy" in i["filepath"]] or pools
    return " / ".join(sorted({f"{i['internal_api']} {i['version']}" for i in pools})) or "unknown"


def hello(lib, threads):
    import numpy  # only now: its BLAS reads the thread variables when first imported
    return {"lib": lib.__name__, "version": lib.__version__, "numpy": numpy.__version__, "threads": threads,
            "blas": blas(lib)}


def serve(lib, requests, reply):
    workloads = {w.name: w for w in all_workloads()}
    measurements = {}
    for line in requests:
        request = json.loads(line)
        try:
            if "setup" in request:
                w, baseline = workloads[request["setup"]], request.get("baseline", False)
                setup = w.baseline if baseline else w.setup
                m = measurements[w.name, baseline] = Measurement(w.stmt, setup(lib), request["min_time"])
                reply({"number": m.number})
            elif "memory" in request:
                reply({"memory": step_memory(lib, workloads[request["memory"]], request["steps"])})
            else:
                key = request["time"], request.get("baseline", False)
                reply({"seconds": measurements[key].seconds_per_call()})
        except Exception:
            reply({"error": traceback.format_exc(limit=-3)})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, help="a module with the PyTorch API: lantern or torch")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    protocol = sys.stdout
    sys.stdout = sys.stderr  # whatever the library prints must not corrupt the protocol

    def reply(message):
        protocol.write(json.dumps(message) + "\n")
        protocol.flush()

    lib = import_library(args.lib, args.threads)
    reply(hello(lib, args.threads))
    serve(lib, sys.stdin, reply)


if __name__ == "__main__":
    main()
