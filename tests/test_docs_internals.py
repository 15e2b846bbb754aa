"""docs/internals/: every mechanism page exists, the index links it, and every snippet in it runs and prints what
the page says.

The suite also collects the pages through pytest's --doctest-glob when `docs` is on the command line; this file
runs them with `doctest` directly, so `pytest tests` alone keeps the pages honest too.
"""
import doctest
import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "internals"
PAGES = ["tensor-storage-strides.md", "dispatcher.md", "autograd.md", "module-hooks.md", "optimizer-state.md",
         "data-loading.md", "jit.md", "random-numbers.md", "memory.md", "reference-mode.md", "sparse.md",
         "structure.md", "backends.md", "quantized.md", "custom-ops.md", "torch-function.md", "conj-views.md",
         "torch-dispatch.md", "custom-devices.md", "distributed.md", "ddp.md", "aot-autograd.md",
         "intra-op-threads.md", "vmap.md", "forward-ad.md"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)


def _text(page):
    return (DOCS / page).read_text()


def test_index_links_every_page_and_only_pages_that_exist():
    index = _text("README.md")
    linked = re.findall(r"\]\(([\w.-]+\.md)\)", index)
    assert sorted(linked) == sorted(PAGES)
    on_disk = sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md")
    assert on_disk == sorted(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_is_a_doctest(page):
    blocks = FENCE.findall(_text(page))
    python = [body for lang, body in blocks if lang in ("python", "")]
    assert python, f"{page} has no python snippets"
    for body in python:
        # a block without `>>>` would never run; one whose last output line touches the closing fence would make
        # the fence part of the expected output
        assert ">>> " in body, f"{page}: a python block is not a doctest:\n{body}"
        assert body.endswith("\n\n"), f"{page}: leave a blank line before the closing fence:\n{body}"


@pytest.mark.parametrize("page", PAGES)
def test_page_snippets_print_what_the_page_says(page):
    test = doctest.DocTestParser().get_doctest(_text(page), {"__name__": page}, page, str(DOCS / page), 0)
    assert len(test.examples) >= 10, f"{page}: only {len(test.examples)} examples"
    report = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    result = runner.run(test, out=report.append, clear_globs=True)
    assert result.failed == 0, "".join(report)
