"""torch.utils.benchmark.utils: the modules behind lantern.utils.benchmark (common, timer, compare, fuzzer,
sparse_fuzzer, valgrind_wrapper)."""
