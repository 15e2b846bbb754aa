"""FileCheck: assert that a text (a printed graph, generated code) contains patterns in order, as LLVM's FileCheck
and torch.testing.FileCheck do.

Build the checks with methods (`check`, `check_next`, `check_same`, `check_not`, `check_count`, `check_dag`,
`check_regex`, `check_source_highlighted`) or write them as `# CHECK...: pattern` lines, then `run` them on a string
or on anything whose str() is the text (a lantern.jit Graph). A failed check raises RuntimeError with torch's
first line ('Expected to find "x" but did not find it'), the searched text and the check that failed.

>>> import lantern
>>> from lantern.testing import FileCheck
>>> graph = lantern.jit.script(lantern.nn.Linear(2, 2)).graph
>>> FileCheck().check("prim::GetAttr").check("aten::linear").check_not("aten::mul").run(graph)
>>> FileCheck().run("# CHECK: aten::linear\\n# CHECK-COUNT-2: prim::GetAttr", str(graph))
Traceback (most recent call last):
RuntimeError: Expected to find "prim::GetAttr" but did not find it
...
"""
import re

__all__ = ["FileCheck"]

_CHECK_LINE = re.compile(r"#\s*(CHECK(?:-NEXT|-SAME|-NOT|-DAG|-REGEX|-SOURCE-HIGHLIGHTED|-COUNT-(?:EXACTLY-)?\d+)?):"
                         r"(.*)")


class _Check:
    def __init__(self, kind, text, count=1, exactly=False):
        self.kind, self.text, self.count, self.exactly = kind, text, count, exactly

    def label(self):
        if self.kind == "CHECK-COUNT":
            return f"CHECK-COUNT-{'EXACTLY-' if self.exactly else ''}{self.count}"
        return self.kind


class FileCheck:
    """A list of checks run in order over one text; each positive check starts where the previous match ended."""

    def __init__(self):
        self._checks = []

    # -- building -------------------------------------------------------------------------------------------------
    def _add(self, check):
        self._checks.append(check)
        return self

    def check(self, text):
        """`text` occurs after the previous match."""
        return self._add(_Check("CHECK", text))

    def check_next(self, text):
        """`text` occurs on the line right after the previous match's line."""
        return self._add(_Check("CHECK-NEXT", text))

    def check_same(self, text):
        """`text` occurs on the same line as the previous match, after it."""
        return self._add(_Check("CHECK-SAME", text))

    def check_not(self, text):
        """`text` does not occur between the previous match and the next one (or the end)."""
        return self._add(_Check("CHECK-NOT", text))

    def check_count(self, text, count, exactly=False):
        """`text` occurs `count` times after the previous match; with `exactly`, no more times after those."""
        if count == 0 and not exactly:
            raise RuntimeError("Count == 0 && !exactly doesn't do anything")
        return self._add(_Check("CHECK-COUNT", text, count, exactly))

    def check_dag(self, text):
        """`text` occurs after the previous non-DAG match, in any order with the DAG checks next to it."""
        return self._add(_Check("CHECK-DAG", text))

    def check_regex(self, pattern):
        """The regular expression `pattern` matches after the previous match."""
        return self._add(_Check("CHECK-REGEX", pattern))

    def check_source_highlighted(self, text):
        """`text` occurs with `~` under each of its characters on the next line (a highlighted source range)."""
        return self._add(_Check("CHECK-SOURCE-HIGHLIGHTED", text))

    # -- running --------------------------------------------------------------------------------------------------
    def run(self, checks_or_text, text=None):
        """run(text) runs the checks built so far; run(checks, text) parses `# CHECK...:` lines first. A text may
        be anything whose str() is the text (a Graph)."""
        if text is not None:
            self._checks.extend(_parse(checks_or_text))
        else:
            text = checks_or_text
        if not self._checks:
            raise RuntimeError("No checks have been added to this instance ofFilecheck! Check for bad input.")
        _Run(str(text), self._checks).run()


def _parse(source):
    checks = []
    for line in source.splitlines():
        match = _CHECK_LINE.search(line)
        if match is None:
            continue
        kind, text = match.group(1), match.group(2).strip()
        if not text:
            column = line.index(":", match.start()) + 1
            raise RuntimeError(f"Could not parse check at:\n{line}\n{' ' * column}~ <--- HERE\nCheck for bad input.")
        if kind.startswith("CHECK-COUNT-"):
            rest = kind[len("CHECK-COUNT-"):]
            exactly = rest.startswith("EXACTLY-")
            checks.append(_Check("CHECK-COUNT", text, int(rest.rpartition("-")[2]), exactly))
        else:
            checks.append(_Check(kind, text))
    return checks


class _Run:
    """One pass of the checks over a text; `position` is where the next positive check starts searching."""

    def __init__(self, text, checks):
        self.text, self.checks, self.position = text, checks, 0

    def run(self):
        pending_nots = []
        i = 0
        while i < len(self.checks):
            check = self.checks[i]
            if check.kind == "CHECK-NOT":
                pending_nots.append(check)
                i += 1
                continue
            if check.kind == "CHECK-DAG":
                group = [check]
                while i + 1 < len(self.checks) and self.checks[i + 1].kind == "CHECK-DAG":
                    i += 1
                    group.append(self.checks[i])
                start, end = self._dag(group)
            else:
                start, end = self._positive(check)
            self._refuse(pending_nots, self.position, start)
            pending_nots = []
            self.position = end
            i += 1
        self._refuse(pending_nots, self.position, len(self.text))

    def _find(self, check, text, start):
        """(start, end) of the first match of check.text at or after `start`, or None."""
        if check.kind == "CHECK-REGEX":
            match = re.compile(text).search(self.text, start)
            return None if match is None else (match.start(), match.end())
        found = self.text.find(text, start)
        return None if found < 0 else (found, found + len(text))

    def _require(self, check, text, start):
        found = self._find(check, text, start)
        if found is None:
            what = "regex " if check.kind == "CHECK-REGEX" else ""
            self._fail(f'Expected to find {what}"{text}" but did not find it\nSearched string:\n'
                       f"{self._context(start, len(self.text))}", check)
        return found

    def _positive(self, check):
        """Match one positive check from the current position; returns the (start, end) it matched."""
        if check.kind == "CHECK-COUNT":
            start = end = self.position
            for n in range(check.count):
                found_start, end = self._require(check, check.text, end)
                start = found_start if n == 0 else start
            if check.exactly:
                self._refuse([_Check("CHECK-NOT", check.text)], end, len(self.text))
            return start, end
        if check.kind == "CHECK-NEXT":
            newline = self._require(_Check("CHECK-NEXT", "\n"), "\n", self.position)[1]
            start, end = self._require(check, check.text, newline)
            self._refuse([_Check("CHECK-NEXT", "\n")], newline, start, label=check)
            return start, end
        start, end = self._require(check, check.text, self.position)
        if check.kind == "CHECK-SAME":
            self._refuse([_Check("CHECK-SAME", "\n")], self.position, start, label=check)
        if check.kind == "CHECK-SOURCE-HIGHLIGHTED":
            self._check_highlight(check, start, end)
        return start, end

    def _dag(self, group):
        """Each DAG check matches anywhere from the current position; the group ends at the furthest match."""
        matches = [self._require(check, check.text, self.position) for check in group]
        return min(s for s, _ in matches), max(e for _, e in matches)

    def _refuse(self, checks, start, end, label=None):
        """None of the checks' texts occurs in text[start:end]."""
        for check in checks:
            found = self.text.find(check.text, start, end) if end >= start else -1
            if found >= 0:
                shown = check.text.replace("\n", "\\n")
                self._fail(f'Expected to not find "{shown}" but found it\n'
                           f"{self._highlight(found, found + len(check.text))}", label or check)

    def _check_highlight(self, check, start, end):
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", end)
        next_line = self.text[line_end + 1:].split("\n", 1)[0] if line_end >= 0 else ""
        column, width = start - line_start, end - start
        if next_line[column:column + width] != "~" * width or next_line[column + width:column + width + 1] == "~":
            self._fail(f'Expected to find "{check.text}" highlighted but it is not.\n'
                       f"{self._highlight(start, end)}", check)

    def _context(self, start, end):
        """The lines of the text that text[start:end] touches."""
        first = self.text.rfind("\n", 0, start) + 1
        last = self.text.find("\n", end)
        return self.text[first:len(self.text) if last < 0 else last] + "\n"

    def _highlight(self, start, end):
        """The text with `~` under text[start:end] and an arrow, as torch shows a found string."""
        line_end = self.text.find("\n", end)
        line_end = len(self.text) if line_end < 0 else line_end
        line_start = self.text.rfind("\n", 0, start) + 1
        marker = " " * (start - line_start) + "~" * max(end - start, 1) + " <--- HERE"
        return self.text[:line_end] + "\n" + marker + self.text[line_end:] + "\n"

    def _fail(self, message, check):
        raise RuntimeError(f"{message}From {check.label()}: {check.text}\n")
