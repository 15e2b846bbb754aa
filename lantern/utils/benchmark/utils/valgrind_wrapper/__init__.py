"""torch.utils.benchmark.utils.valgrind_wrapper: instruction counts under valgrind's callgrind (timer_interface
holds the result types, callgrind_run the subprocess)."""
