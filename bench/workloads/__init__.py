"""Benchmark tables: each module here holds a `WORKLOADS` list of `workload.Workload` records.

Each module also runs on its own, through the same runner, for one library or both:

    python bench/workloads/training.py --lib torch --filter mlp
"""
