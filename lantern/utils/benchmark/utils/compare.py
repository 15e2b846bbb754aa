"""Compare: Measurements laid out as torch.utils.benchmark prints them, one table per label, a row per
(num_threads, env, sub_label or stmt), a column per description, the median of each cell in one time unit.

>>> from lantern.utils.benchmark import Compare, Measurement, TaskSpec
>>> m = [Measurement(10, [2e-5, 2.1e-5], TaskSpec("f(x)", "", label="f", sub_label=s, description=d))
...      for s in ("small", "large") for d in ("old", "new")]
>>> print(Compare(m))
[----------- f -----------]
             |  old  |  new
1 threads: ----------------
      small  |  2.0  |  2.0
      large  |  2.0  |  2.0
<BLANKLINE>
Times are in microseconds (us).
<BLANKLINE>
"""
import collections
import enum
import itertools
import math

from . import common

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(value: float) -> int:
    return math.ceil(common._log10(value))


class _Column:
    """One description's cells, grouped by thread count; it fixes the number format of the column."""

    def __init__(self, grouped_results, time_scale, time_unit, trim_significant_figures, highlight_warnings):
        self._grouped_results = grouped_results
        flat = [r for r in itertools.chain.from_iterable(grouped_results) if r is not None]
        self._time_scale, self._time_unit = time_scale, time_unit
        self._trim_significant_figures = trim_significant_figures
        self._highlight_warnings = highlight_warnings and any(r.has_warnings for r in flat)
        leading = [_leading_digits(r.median / time_scale) for r in flat]
        decimals = 1
        if trim_significant_figures:
            decimals = min(max(r.significant_figures - d, 0) for d, r in zip(leading, flat))
        width = max(leading) + decimals + (1 if decimals else 0)
        self._template = f"{{:>{width}.{decimals}f}}{{:>{7 if self._highlight_warnings else 0}}}"

    def get_results_for(self, group):
        return self._grouped_results[group]

    def num_to_str(self, value, estimated_sigfigs, spread):
        if value is None:
            return " " * len(self.num_to_str(1, estimated_sigfigs, None))
        if self._trim_significant_figures:
            value = common.trim_sigfig(value, estimated_sigfigs)
        flag = f" (! {spread * 100:.0f}%)" if self._highlight_warnings and spread is not None else ""
        return self._template.format(value, flag)


def _colored(segment, value, best):
    """`segment` in the colour of `value` against the best value of its row or column."""
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + segment + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + segment + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + segment + TERMINATE * 2
    if value >= best * 2:
        return BAD + segment + TERMINATE * 2
    return segment


class _Row:
    """One row's cells (None where a column has no measurement); the first row of a thread count carries the
    "N threads:" separator, the first of an env its env name when the table has several envs."""

    def __init__(self, results, row_group, render_env, env_str_len, time_scale, colorize, num_threads=None):
        self._results, self._row_group = results, row_group
        self._render_env, self._env_str_len = render_env, env_str_len
        self._time_scale, self._colorize, self._num_threads = time_scale, colorize, num_threads
        self._columns = ()

    def register_columns(self, columns):
        self._columns = columns

    def as_column_strings(self):
        first = next(r for r in self._results if r is not None)
        env = f"({first.env})" if self._render_env else ""
        out = ["  " + env.ljust(self._env_str_len + 4) + first.as_row_name]
        for m, column in zip(self._results, self._columns):
            if m is None:
                out.append(column.num_to_str(None, 1, None))
            else:
                spread = m.iqr / m.median if m.has_warnings else None
                out.append(column.num_to_str(m.median / self._time_scale, m.significant_figures, spread))
        return out

    def row_separator(self, overall_width):
        if self._num_threads is None:
            return []
        return [f"{self._num_threads} threads: ".ljust(overall_width, "-")]

    def _best_values(self, n):
        if self._colorize == Colorize.ROWWISE:
            return [min(r.median for r in self._results if r is not None)] * n
        if self._colorize == Colorize.COLUMNWISE:
            return [min((r.median for r in c.get_results_for(self._row_group) if r is not None), default=None)
                    for c in self._columns]
        return [-1] * n

    def finalize_column_strings(self, column_strings, col_widths):
        best_values = self._best_values(len(column_strings))
        out = [column_strings[0].ljust(col_widths[0])]
        for text, width, result, best in zip(column_strings[1:], col_widths[1:], self._results, best_values):
            text = text.center(width)
            if self._colorize != Colorize.NONE and result is not None and best is not None:
                text = _colored(text, result.median, best)
            out.append(text)
        return out


class Table:
    """The table of one label's measurements."""

    def __init__(self, results, colorize, trim_significant_figures, highlight_warnings):
        if len({r.label for r in results}) != 1:
            raise AssertionError("All results must share the same label")
        self.results, self.label = results, results[0].label
        self._colorize = colorize
        self._trim_significant_figures = trim_significant_figures
        self._highlight_warnings = highlight_warnings
        self.time_unit, self.time_scale = common.select_unit(min(r.median for r in results))
        self.row_keys = common.ordered_unique(self.row_fn(r) for r in results)
        self.row_keys.sort(key=lambda key: key[:2])  # by threads and env; stable, so stmts keep their order
        self.column_keys = common.ordered_unique(self.col_fn(r) for r in results)
        self.rows, self.columns = self.populate_rows_and_columns()

    @staticmethod
    def row_fn(m):
        return m.num_threads, m.env, m.as_row_name

    @staticmethod
    def col_fn(m):
        return m.description

    def _grid(self):
        """The results placed at [row key][column key], None where none was measured."""
        grid = [[None] * len(self.column_keys) for _ in self.row_keys]
        rows = {key: i for i, key in enumerate(self.row_keys)}
        columns = {key: j for j, key in enumerate(self.column_keys)}
        for r in self.results:
            grid[rows[self.row_fn(r)]][columns[self.col_fn(r)]] = r
        return grid

    def populate_rows_and_columns(self):
        grid = self._grid()
        envs = {r.env for r in self.results}
        render_env = len(envs) > 1
        env_str_len = max(len(e) for e in envs) if render_env else 0
        rows, groups, prior_threads, prior_env = [], [], -1, ""
        for (num_threads, env, _), cells in zip(self.row_keys, grid):
            new_group = num_threads != prior_threads
            if new_group:
                prior_threads, prior_env = num_threads, ""
                groups.append([])
            rows.append(_Row(cells, len(groups) - 1, render_env and env != prior_env, env_str_len, self.time_scale,
                             self._colorize, num_threads if new_group else None))
            groups[-1].append(cells)
            prior_env = env
        columns = tuple(_Column([tuple(cells[j] for cells in g) for g in groups], self.time_scale, self.time_unit,
                                self._trim_significant_figures, self._highlight_warnings)
                        for j in range(len(self.column_keys)))
        for row in rows:
            row.register_columns(columns)
        return tuple(rows), columns

    def render(self) -> str:
        string_rows = [[""] + self.column_keys] + [r.as_column_strings() for r in self.rows]
        n_columns = max(len(sr) for sr in string_rows)
        string_rows = [sr + [""] * (n_columns - len(sr)) for sr in string_rows]
        widths = [max(len(cell) for cell in column) for column in zip(*string_rows)]
        lines = ["  |  ".join(cell.center(w) for cell, w in zip(string_rows[0], widths))]
        overall_width = len(lines[0])
        for string_row, row in zip(string_rows[1:], self.rows):
            lines.extend(row.row_separator(overall_width))
            lines.append("  |  ".join(row.finalize_column_strings(string_row, widths)))
        title = f" {self.label or ''} ".center(overall_width - 2, "-")
        text = f"[{title}]\n" + "\n".join(lines) + "\n\n"
        text += f"Times are in {common.unit_to_english(self.time_unit)}s ({self.time_unit}).\n"
        if self._highlight_warnings and any(r.has_warnings for r in self.results):
            text += "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
        return text


class Compare:
    """A printable table of many Measurements: replicates of a task are merged, each label is its own table.
    trim_significant_figures(), colorize(rowwise) and highlight_warnings() change how it prints."""

    def __init__(self, results) -> None:
        self._results = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results) -> None:
        """Add Measurements to the table (anything else raises ValueError)."""
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise=False) -> None:
        """Colour each cell against the best of its column (or, rowwise, of its row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def _render(self):
        by_label = collections.defaultdict(list)
        for r in common.Measurement.merge(self._results):
            by_label[r.label].append(r)
        return [Table(group, self._colorize, self._trim_significant_figures, self._highlight_warnings).render()
                for group in by_label.values()]
