# Set-up is the project's job: every target creates .venv and installs lantern with its test extras first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-strict demo bench clean graphviz codegen bytecode

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev]'
	$(MAKE) --no-print-directory graphviz
	touch $(STAMP)

# Compile lantern's modules to bytecode, as pip does for an installed package: an editable install leaves it to the
# first import, which cannot write it where PYTHONDONTWRITEBYTECODE is set (then every process compiling ~500
# modules again spends ~1.6 s starting). Only changed modules are compiled again.
bytecode: $(STAMP)
	@$(PY) -m compileall -q lantern >/dev/null

# lantern.inspect draws its pictures with Graphviz's `dot`: take it from the distribution when it is missing.
graphviz:
	@command -v dot >/dev/null || apt-get install -y -q --no-install-recommends graphviz >/dev/null \
		|| (apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends graphviz >/dev/null) \
		|| echo "warning: could not install Graphviz (apt-get install graphviz); pictures will not render"

# Oracle test files run again over the strict array library (docs/internals/backends.md): one file or more per kernel
# family, so that a kernel reaching NumPy without going through its backend's xp fails in CI.
STRICT_TIER := tests/test_pointwise.py tests/test_reductions.py tests/test_shape_ops.py tests/test_tensor_shape.py \
	tests/test_indexing.py tests/test_sorting.py tests/test_linalg.py tests/test_sparse_math.py tests/test_nn_ops.py \
	tests/test_random.py

# As written, then the oracle tests again in reference mode (every named fast path off; see conftest.py's
# OUT_OF_REFERENCE_TIER and docs/internals/reference-mode.md), then the strict array library's tier.
test: $(STAMP) bytecode
	$(PY) -m pytest lantern tests bench docs README.md
	$(PY) -m pytest tests --reference-tier
	$(MAKE) --no-print-directory test-strict

test-strict: $(STAMP)
	LANTERN_ARRAY_LIBRARY=strict $(PY) -m pytest $(STRICT_TIER)

demo: $(STAMP) bytecode
	$(PY) examples/demo.py

# Write the code lantern generates from its op registry into lantern/_generated/ (commit the result;
# tests/test_codegen.py fails while those files differ from a fresh generation).
codegen: $(STAMP)
	$(PY) -m lantern._codegen

bench: $(STAMP) bytecode
	$(PY) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
