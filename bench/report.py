r"""The benchmark tables: one row per workload, lantern's number beside torch's, their ratio and the goal.

>>> from workload import at_most
>>> print(format_table([Row("add_16", "µs", {"lantern": 6.1, "torch": 2.0}, at_most(3))], ["lantern", "torch"]))
| benchmark | unit | lantern median | torch median | lantern ÷ torch | goal | met |
| --- | --- | --: | --: | --: | --- | --- |
| add_16 | µs | 6.10 | 2.00 | 3.05 | ≤ 3 | no |

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
Goals met: 1 of 2. Not met: add_16 (3.05, goal ≤ 3).

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
    """Medians per library (None: that library failed), the goal on lantern ÷ torch (None: no goal)."""

    name: str
    unit: str
    medians: dict
    goal: object = None
    allocator: float | None = None   # memory rows: lantern's allocator peak, MiB

    @property
    def ratio(self):
        lantern, torch = self.medians.get("lantern"), self.medians.get("torch")
        return lantern / torch if lantern and torch else None

    @property
    def met(self):
        if self.goal is None or self.ratio is None:
            return "—"
        return "yes" if self.goal.met(self.ratio) else "no"


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


def _ratio_cells(row, libs):
    if not _compared(libs):
        return []
    return ["—" if row.ratio is None else f"{row.ratio:.2f}", "—" if row.goal is None else str(row.goal), row.met]


def format_table(rows, libs):
    """The speed table in markdown (it reads as plain text too); the ratio and goal only with both libraries."""
    ratio = ["lantern ÷ torch", "goal", "met"] if _compared(libs) else []
    reference = ["reference ÷ lantern"] if {"lantern", "lantern-reference"} <= set(libs) else []
    header = ["benchmark", "unit", *(f"{lib} median" for lib in libs), *ratio, *reference]
    aligns = ["---", "---", *["--:"] * len(libs), *["--:", "---", "---"][:len(ratio)], *["--:"] * len(reference)]
    lines = [header, aligns]
    for row in rows:
        cells = [row.name, row.unit, *(_number(row.medians.get(lib)) for lib in libs), *_ratio_cells(row, libs)]
        if reference:
            cells.append(_slowdown(row.medians.get("lantern-reference"), row.medians.get("lantern"), row.unit))
        lines.append(cells)
    return _markdown(lines)


def _slowdown(reference, default, unit):
    """How many times longer reference mode takes (for a rate such as GFLOP/s, the inverse ratio)."""
    if reference is None or default is None:
        return "—"
    return f"{(default / reference if unit.endswith('/s') else reference / default):.2f}"


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
    """One line: how many goals were met, and which were not (with the ratio and the goal)."""
    judged = [row for row in rows if row.met in ("yes", "no")]
    missed = [f"{row.name}{' memory' if row.unit == 'MiB' else ''} ({row.ratio:.2f}, goal {row.goal})"
              for row in judged if row.met == "no"]
    line = f"Goals met: {len(judged) - len(missed)} of {len(judged)}."
    return line + (f" Not met: {', '.join(missed)}." if missed else "")


def splice(document, generated, marker="bench"):
    """`document` with the text between its `<!-- marker:begin -->` and `<!-- marker:end -->` lines replaced by
    `generated`."""
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    head, rest = document.split(begin + "\n", 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{generated}\n{end}{tail}"
