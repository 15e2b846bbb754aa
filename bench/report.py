"""The benchmark table: one row per workload, lantern's median beside torch's, their ratio and the goal.

>>> from workload import at_most
>>> print(format_table([Row("add_16", "µs", {"lantern": 6.1, "torch": 2.0}, at_most(3))], ["lantern", "torch"]))
| benchmark | unit | lantern median | torch median | lantern ÷ torch | goal | met |
| --- | --- | --: | --: | --: | --- | --- |
| add_16 | µs | 6.10 | 2.00 | 3.05 | ≤ 3 | no |
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


def format_table(rows, libs):
    """A markdown table (it reads as plain text too)."""
    header = ["benchmark", "unit", *(f"{lib} median" for lib in libs), "lantern ÷ torch", "goal", "met"]
    align = ["---", "---", *["--:"] * len(libs), "--:", "---", "---"]
    lines = [header, align]
    for row in rows:
        ratio = "—" if row.ratio is None else f"{row.ratio:.2f}"
        goal = "—" if row.goal is None else str(row.goal)
        lines.append([row.name, row.unit, *(_number(row.medians.get(lib)) for lib in libs), ratio, goal, row.met])
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def format_results(table, machine, settings, when):
    """The text of bench/results.md."""
    return (f"# Benchmarks\n\n"
            f"Measured {when} with `python bench/run.py --write` ({settings}).\n\n"
            f"Machine: {machine}.\n\n"
            f"{table}\n\n"
            f"`lantern ÷ torch` is the ratio of the two medians: for µs per call lower is better for lantern, for "
            f"GFLOP/s higher is. `goal` bounds that ratio. Differences under ~10% are noise on a shared machine.\n")
