"""Benchmark tables: each module here holds a `WORKLOADS` list of `workload.Workload` records."""
