r"""The benchmark tables: one row per workload, lantern's number beside torch's, their ratio and the goal.

>>> from workload import at_most
>>> print(format_table([Row("add_16", "µs", {"lantern": 6.1, "torch": 2.0}, at_most(3))], ["lantern", "torch"]))
| benchmark | unit | lantern median | torch median | lantern ÷ torch | goal | met |
| --- | --- | --: | --: | --: | --- | --- |
| add_16 | µs | 6.10 | 2.00 | 3.05 | ≤ 3 | no |

Rows measured at several thread counts sit side by side, one group of columns per count; `met` says at which
counts the goal was met when it was not met at all of them:

>>> cnn = [Row("cnn_train_step", "µs", {"lantern": 11.0, "torch": 10.0}, at_most(1.1), threads=1),
...        Row("cnn_train_step", "µs", {"lantern": 15.0, "torch": 10.0}, at_most(1.1), threads=2)]
>>> print(format_table(cnn, ["lantern", "torch"]))
| benchmark | unit | 1 thread: lantern | torch | lantern ÷ torch | 2 threads: lantern | torch | lantern ÷ torch
  | goal | met |
| --- | --- | --: | --: | --: | --: | --: | --: | --- | --- |
| cnn_train_step | µs | 11.0 | 10.0 | 1.10 | 15.0 | 10.0 | 1.50 | ≤ 1.1 | at 1 thread |

A compiled step (lantern's and torch's model each passed through their `compile`) is judged against torch eager,
with torch compiled beside it for reference:

>>> from workload import below
>>> compiled = Row("mlp_train_step_compiled", "µs", {"lantern": 3.0, "torch": 4.0}, below(1.0), compiled=True,
...                reference=2.0)
>>> print(format_compiled_table([compiled]))
| benchmark | unit | lantern compiled | torch eager | ÷ torch eager | torch compiled | ÷ torch compiled
  | goal (÷ torch eager) | met |
| --- | --- | --: | --: | --: | --: | --: | --- | --- |
| mlp_train_step_compiled | µs | 3.00 | 4.00 | 0.75 | 2.00 | 1.50 | < 1 | yes |

Peak memory has its own table, with lantern's allocator peak (live tensor bytes) beside the resident-set peaks:

>>> row = Row("mlp_train_step", "MiB", {"lantern": 9.8, "torch": 9.7}, at_most(1.5), allocator=6.8)
>>> print(format_memory_table([row], ["lantern", "torch"]))
| training step | lantern peak MiB | torch peak MiB | lantern ÷ torch | goal | met | lantern allocator peak MiB |
| --- | --: | --: | --: | --- | --- | --: |
| mlp_train_step | 9.80 | 9.70 | 1.01 | ≤ 1.5 | yes | 6.80 |

With one library alone there is nothing to compare:

>>> print(format_table([Row("add_16", "µs", {"lantern": 6.1}, at_most(3))], ["lantern"]))
| benchmark | unit | lantern median |
| --- | --- | --: |
| add_16 | µs | 6.10 |

lantern in reference mode (`--lib lantern-reference`) gets a column of what the mode costs; for a rate, the
inverse ratio, so that it always reads "times slower":

>>> rows = [Row("add_16", "µs", {"lantern": 3.0, "lantern-reference": 7.5}, None),
...         Row("matmul_1024", "GFLOP/s", {"lantern": 100.0, "lantern-reference": 98.0}, None)]
>>> print(format_table(rows, ["lantern", "lantern-reference"]))
| benchmark | unit | lantern median | lantern-reference median | reference ÷ lantern |
| --- | --- | --: | --: | --: |
| add_16 | µs | 3.00 | 7.50 | 2.50 |
| matmul_1024 | GFLOP/s | 100 | 98.0 | 1.02 |

`format_goals` sums up the goals of both tables:

>>> print(format_goals([Row("add_16", "µs", {"lantern": 6.1, "torch": 2.0}, at_most(3)), row]))
Goals met: 1 of 2. Not met: add_16 (3.05; goal ≤ 3).

At several thread counts, a benchmark that missed is listed once, with its ratio at each count it missed:

>>> print(format_goals([*cnn, Row("cnn_train_step", "µs", {"lantern": 9.0, "torch": 10.0}, at_most(1.1), threads=3)]))
Goals met: 2 of 3. Not met: cnn_train_step (1.50 at 2 threads; goal ≤ 1.1).

`splice` puts generated text between two marker lines of a document and keeps the rest (a page can hold several
pairs, each with its own name):

>>> splice("prose\n<!-- bench:begin -->\nold\n<!-- bench:end -->\nmore prose\n", "new")
'prose\n<!-- bench:begin -->\nnew\n<!-- bench:end -->\nmore prose\n'
>>> splice("<!-- bench-ddp:begin -->\nold\n<!-- bench-ddp:end -->\n", "new", "bench-ddp")
'<!-- bench-ddp:begin -->\nnew\n<!-- bench-ddp:end -->\n'
"""
import dataclasses
import math


@dataclasses.dataclass
class Row:
    """Medians per library (None: that library failed) at one thread count, the goal on lantern ÷ torch (None: no
    goal). For a workload with a baseline (`compiled`: the compiled steps), medians["torch"] is torch running the
    baseline (eager) and `reference` is torch running what lantern ran (compiled)."""

    name: str
    unit: str
    medians: dict
    goal: object = None
    allocator: float | None = None   # memory rows: lantern's allocator peak, MiB
    threads: int = 1
    compiled: bool = False
    reference: float | None = None

    @property
    def ratio(self):
        return _ratio(self.medians.get("lantern"), self.medians.get("torch"))

    @property
    def reference_ratio(self):
        return _ratio(self.medians.get("lantern"), self.reference)

    @property
    def met(self):
        if self.goal is None or self.ratio is None:
            return "—"
        return "yes" if self.goal.met(self.ratio) else "no"


def _ratio(lantern, torch):
    return lantern / torch if lantern and torch else None


def _number(value):
    """Three significant figures, never in exponent form: 6.14, 20.9, 87.3, 1234."""
    if value is None:
        return "error"
    digits = max(0, 2 - math.floor(math.log10(abs(value)))) if value else 2
    return f"{value:.{digits}f}"


def _markdown(lines):
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def _compared(libs):
    return "lantern" in libs and "torch" in libs


def _ratio_text(ratio):
    return "—" if ratio is None else f"{ratio:.2f}"


def _by_threads(rows):
    """The thread counts in `rows` (sorted), and each benchmark's rows keyed by thread count, in first-seen order."""
    counts = sorted({row.threads for row in rows})
    grouped = {}
    for row in rows:
        grouped.setdefault(row.name, {})[row.threads] = row
    return counts, grouped


def _thread_label(threads):
    return f"{threads} thread{'s' if threads > 1 else ''}"


def _group_header(names, threads, several):
    """Column names for one thread count's group: prefixed with the count (first column only) when there are
    several counts side by side."""
    if not several:
        return list(names)
    return [f"{_thread_label(threads)}: {names[0]}", *names[1:]]


def _met_across(rows_by_threads, counts):
    """"yes", "no", "—", or the thread counts it was met at ("at 1 thread") when met at some only."""
    verdicts = {t: rows_by_threads[t].met for t in counts if t in rows_by_threads}
    judged = {t: v for t, v in verdicts.items() if v in ("yes", "no")}
    if not judged:
        return "—"
    if len(set(judged.values())) == 1:
        return next(iter(judged.values()))
    return "at " + ", ".join(_thread_label(t) for t, v in judged.items() if v == "yes")


def _goal_cells(rows_by_threads):
    row = next(iter(rows_by_threads.values()))
    return "—" if row.goal is None else str(row.goal)


def _side_by_side(rows, names, group_cells, goal_header):
    """A table with one group of columns (`names`) per thread count, filled by `group_cells(row)`; with a
    `goal_header`, the goal and whether it was met close each line."""
    counts, grouped = _by_threads(rows)
    header, aligns = ["benchmark", "unit"], ["---", "---"]
    for threads in counts:
        header += _group_header(names, threads, len(counts) > 1)
        aligns += ["--:"] * len(names)
    if goal_header:
        header, aligns = header + [goal_header, "met"], aligns + ["---", "---"]
    lines = [header, aligns]
    for name, by_threads in grouped.items():
        cells = [name, next(iter(by_threads.values())).unit]
        for threads in counts:
            row = by_threads.get(threads)
            cells += group_cells(row) if row else ["—"] * len(names)
        if goal_header:
            cells += [_goal_cells(by_threads), _met_across(by_threads, counts)]
        lines.append(cells)
    return _markdown(lines)


def format_table(rows, libs):
    """The speed table in markdown (it reads as plain text too): per thread count, each library's median, and the
    ratio with both libraries; then the goal and whether it was met."""
    several = len({row.threads for row in rows}) > 1
    compared = _compared(libs)
    reference = {"lantern", "lantern-reference"} <= set(libs)
    names = [lib if several else f"{lib} median" for lib in libs]
    names += ["lantern ÷ torch"] * compared + ["reference ÷ lantern"] * reference

    def group_cells(row):
        cells = [_number(row.medians.get(lib)) for lib in libs]
        cells += [_ratio_text(row.ratio)] * compared
        if reference:
            cells.append(_slowdown(row.medians.get("lantern-reference"), row.medians.get("lantern"), row.unit))
        return cells
    return _side_by_side(rows, names, group_cells, "goal" if compared else None)


def format_compiled_table(rows, libs=("lantern", "torch")):
    """The compiled steps' table: per thread count, lantern compiled, torch eager and their ratio (the goal's),
    then torch compiled and lantern's ratio to it (for reference); then the goal and whether it was met. Without
    torch among `libs`, lantern's column alone."""
    compared = _compared(libs)
    names = ["lantern compiled", *(["torch eager", "÷ torch eager", "torch compiled", "÷ torch compiled"]
                                   if compared else [])]

    def group_cells(row):
        cells = [_number(row.medians.get("lantern"))]
        if compared:
            cells += [_number(row.medians.get("torch")), _ratio_text(row.ratio), _number(row.reference),
                      _ratio_text(row.reference_ratio)]
        return cells
    return _side_by_side(rows, names, group_cells, "goal (÷ torch eager)" if compared else None)


def _slowdown(reference, default, unit):
    """How many times longer reference mode takes (for a rate such as GFLOP/s, the inverse ratio)."""
    if reference is None or default is None:
        return "—"
    return f"{(default / reference if unit.endswith('/s') else reference / default):.2f}"


def _ratio_cells(row, libs):
    if not _compared(libs):
        return []
    return [_ratio_text(row.ratio), "—" if row.goal is None else str(row.goal), row.met]


def format_memory_table(rows, libs):
    """The peak-memory table in markdown: resident-set peaks per library, their ratio, lantern's allocator peak."""
    ratio = ["lantern ÷ torch", "goal", "met"] if _compared(libs) else []
    allocator = ["lantern allocator peak MiB"] if "lantern" in libs else []
    header = ["training step", *(f"{lib} peak MiB" for lib in libs), *ratio, *allocator]
    lines = [header, ["---", *["--:"] * len(libs), *["--:", "---", "---"][:len(ratio)], *["--:"][:len(allocator)]]]
    for row in rows:
        cells = [row.name, *(_number(row.medians.get(lib)) for lib in libs), *_ratio_cells(row, libs)]
        if allocator:
            cells.append("—" if row.allocator is None else _number(row.allocator))
        lines.append(cells)
    return _markdown(lines)


def format_goals(rows):
    """One line: how many goals were met (each benchmark at each thread count is one), and which were not, each
    benchmark once with its ratios (at each thread count it missed, when the rows have several) and its goal."""
    several = len({row.threads for row in rows if row.unit != "MiB"}) > 1
    judged = [row for row in rows if row.met in ("yes", "no")]
    missed = {}
    for row in judged:
        if row.met == "no":
            where = f" at {_thread_label(row.threads)}" if several and row.unit != "MiB" else ""
            missed.setdefault((row.name, row.unit == "MiB", str(row.goal)), []).append(f"{row.ratio:.2f}{where}")
    listed = [f"{name}{' memory' if memory else ''} ({', '.join(ratios)}; goal {goal})"
              for (name, memory, goal), ratios in missed.items()]
    line = f"Goals met: {len(judged) - sum(map(len, missed.values()))} of {len(judged)}."
    return line + (f" Not met: {', '.join(listed)}." if listed else "")


def splice(document, generated, marker="bench"):
    """`document` with the text between its `<!-- marker:begin -->` and `<!-- marker:end -->` lines replaced by
    `generated`."""
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    head, rest = document.split(begin + "\n", 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{generated}\n{end}{tail}"
