"""The stride picture: a view's logical grid above the storage strip it reads, as Graphviz DOT text.

In the spirit of ezyang's stride visualizer: each cell of the view shows its index and the storage index it maps
to; the storage is a strip of cells, the ones the view covers coloured like the view's cells that land there (one
colour per row of the view), the others grey. Big tensors are cut to a readable number of cells, with "…" marks.

>>> from lantern.inspect.storage_picture import storage_dot
>>> dot = storage_dot(lantern.arange(6.).view(2, 3).t())
>>> dot.startswith("digraph storage {"), "strides [1, 3]" in dot
(True, True)
"""
import html

import numpy as np

from .addressing import address_formula, covered_indices, storage_index_map

__all__ = ["storage_dot"]

PALETTE = ("#8ecae6", "#ffb703", "#90be6d", "#f4978e", "#b8a1e3", "#f9c74f", "#4cc9a0", "#f28482", "#a3c4f3",
           "#e9c46a")
UNCOVERED = "#eeeeee"
STRIP_ROW = 16          # storage cells per row of the strip
STRIP_CELLS = 64        # storage cells drawn at most
GRID_ROWS, GRID_COLS = 8, 10    # view cells per grid at most (first ones, "…", the last one)
GRIDS = 4               # 2-d grids drawn at most for a tensor of 3 or more dims
VALUES_UP_TO = 64       # values are drawn for tensors of at most this many elements
INVERSE_UP_TO = 1 << 22  # beyond this many elements the strip shows coverage but not which element lands where

_FONT = "Helvetica"
_SMALL = '<FONT POINT-SIZE="9" COLOR="#555555">{}</FONT>'


def _pick(n, limit):
    """Indices 0..n-1 to draw: all of them, or the first limit-2, None (an ellipsis) and the last."""
    if n <= limit:
        return list(range(n))
    return list(range(limit - 2)) + [None, n - 1]


def _format_value(v):
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (complex, np.complexfloating)):
        return f"{v.real:.3g}{v.imag:+.3g}j"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return str(v)


def _index_text(idx):
    return "[" + ", ".join(str(i) for i in idx) + "]"


class _Picture:
    """Everything one drawing needs, worked out once: geometry, values, the storage window and its inverse map."""

    def __init__(self, t, covered):
        self.t = t
        self.size, self.stride, self.offset = t._size, t._stride, t._offset
        self.numel = t.numel()
        self.nstorage = t._storage.nbytes() // t.dtype.itemsize
        self.covered = covered_indices(self.size, self.stride, self.offset) if covered is None else covered
        data = t._storage._data if t._storage.device.type == "cpu" else None
        show_values = data is not None and self.numel <= VALUES_UP_TO
        self.values = np.ndarray((self.nstorage,), t.dtype.np, data) if show_values else None
        self._window()
        self._inverse()

    def _window(self):
        if self.nstorage <= STRIP_CELLS:
            self.w0, self.w1 = 0, self.nstorage
            return
        first = int(self.covered[0]) if len(self.covered) else 0
        self.w0 = first // STRIP_ROW * STRIP_ROW
        self.w1 = min(self.nstorage, self.w0 + STRIP_CELLS)

    def _inverse(self):
        """For each storage cell in the window: the first element (row-major) that lands there and how many do."""
        self.lands = {}
        w0, w1 = self.w0, self.w1
        if self.numel > INVERSE_UP_TO:
            self.inverse_known = False
            return
        self.inverse_known = True
        flat = storage_index_map(self.size, self.stride, self.offset).ravel()
        positions = np.flatnonzero((flat >= w0) & (flat < w1))
        cells, first, counts = np.unique(flat[positions], return_index=True, return_counts=True)
        for cell, pos, count in zip(cells.tolist(), positions[first].tolist(), counts.tolist()):
            self.lands[cell] = (pos, count)

    def colour(self, flat_pos):
        """One colour per row of the view (per element for a 1-d view)."""
        row = flat_pos // self.size[-1] if len(self.size) >= 2 else flat_pos
        return PALETTE[row % len(PALETTE)]

    def storage_index(self, idx):
        return self.offset + sum(i * s for i, s in zip(idx, self.stride))

    def flat_position(self, idx):
        return int(np.ravel_multi_index(idx, self.size)) if idx else 0


# ---- the view: its logical grid ---------------------------------------------------------------------------------

def _view_cell(p, idx):
    s = p.storage_index(idx)
    lines = [_SMALL.format(html.escape(_index_text(idx))), f"<B>→ {s}</B>"]
    if p.values is not None:
        lines.append(html.escape(_format_value(p.values[s])))
    return f'<TD BGCOLOR="{p.colour(p.flat_position(idx))}" WIDTH="52" HEIGHT="40">{"<BR/>".join(lines)}</TD>'


def _ellipsis_cell(mark):
    return f'<TD BORDER="0" WIDTH="20">{mark}</TD>'


def _grid(p, lead):
    """The last two dims (or one) of the view at leading index `lead`, as a table of cells."""
    size = p.size[len(lead):]
    rows = _pick(size[0], GRID_ROWS) if len(size) == 2 else [()]
    cols = _pick(size[-1], GRID_COLS)
    header = "".join(_ellipsis_cell("…") if j is None else
                     f'<TD BORDER="0">{_SMALL.format(j)}</TD>' for j in cols)
    out = ['<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">',
           f'<TR><TD BORDER="0"></TD>{header}</TR>']
    for i in rows:
        row_label = "" if i == () else ("⋮" if i is None else _SMALL.format(i))
        cells = []
        for j in cols:
            if i is None or j is None:
                cells.append(_ellipsis_cell("⋮" if i is None else "…"))
            else:
                cells.append(_view_cell(p, lead + (() if i == () else (i,)) + (j,)))
        out.append(f'<TR><TD BORDER="0">{row_label}</TD>{"".join(cells)}</TR>')
    out.append("</TABLE>")
    return "".join(out)


def _view_table(p):
    """(title, table): the view's cells, a stack of 2-d grids labelled by their leading indices past 2 dims."""
    what = "index, → storage index" + (", value" if p.values is not None else "")
    title = f'<B>view</B>  the logical layout  {_SMALL.format(f"each cell: {what}")}'
    if p.numel == 0:
        return title, _SMALL.format("no elements")
    if not p.size:
        return title, (f'<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3"><TR>{_view_cell(p, ())}'
                       "</TR></TABLE>")
    if len(p.size) <= 2:
        return title, _grid(p, ())
    leads = [tuple(int(i) for i in lead) for _, lead in zip(range(GRIDS), np.ndindex(*p.size[:-2]))]
    body = []
    for lead in leads:
        label = _index_text(list(lead) + [":", ":"])
        body.append(f'<TR><TD ALIGN="LEFT">{_SMALL.format(html.escape(label))}</TD></TR>')
        body.append(f"<TR><TD>{_grid(p, lead)}</TD></TR>")
    grids = int(np.prod(p.size[:-2]))
    if grids > len(leads):
        body.append(f"<TR><TD>{_SMALL.format(f'… {grids - len(leads)} more 2-d slices not drawn')}</TD></TR>")
    return title, f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2">{"".join(body)}</TABLE>'


# ---- the storage: a strip of cells ------------------------------------------------------------------------------

def _storage_cell(p, k, covered_mask):
    lines = [f"<B>{k}</B>"]
    colour = UNCOVERED
    if k in p.lands:
        pos, count = p.lands[k]
        colour = p.colour(pos)
        idx = tuple(int(i) for i in np.unravel_index(pos, p.size)) if p.size else ()
        more = f" ×{count}" if count > 1 else ""
        lines.append(_SMALL.format(html.escape(_index_text(idx) + more)))
    elif covered_mask[k - p.w0]:
        colour = PALETTE[0]
    else:
        lines.append('<FONT POINT-SIZE="9" COLOR="#aaaaaa">·</FONT>')
    if p.values is not None:
        value = html.escape(_format_value(p.values[k]))
        lines.append(value if colour != UNCOVERED else f'<FONT COLOR="#999999">{value}</FONT>')
    return f'<TD BGCOLOR="{colour}" WIDTH="44" HEIGHT="40">{"<BR/>".join(lines)}</TD>'


def _storage_table(p):
    """(title, table): the storage as rows of STRIP_ROW cells, at most STRIP_CELLS of them."""
    t = p.t
    nbytes = t._storage.nbytes()
    covered_mask = np.zeros(p.w1 - p.w0, bool)
    inside = p.covered[(p.covered >= p.w0) & (p.covered < p.w1)]
    covered_mask[inside - p.w0] = True
    what = "storage index, the element that lands there" + (", value" if p.values is not None else "")
    title = (f"<B>storage</B>  {p.nstorage} {html.escape(t.dtype.name)} elements in memory order  "
             f"{_SMALL.format(f'{nbytes} bytes at {t._storage.data_ptr():#x}; each cell: {what}')}")
    width = min(STRIP_ROW, max(p.w1 - p.w0, 1))
    rows = []
    if p.w0 > 0:
        rows.append(f'<TR><TD BORDER="0" COLSPAN="{width + 1}">{_SMALL.format(f"… cells 0-{p.w0 - 1} not drawn")}'
                    "</TD></TR>")
    for start in range(p.w0, p.w1, STRIP_ROW):
        stop = min(start + STRIP_ROW, p.w1)
        cells = "".join(_storage_cell(p, k, covered_mask) for k in range(start, stop))
        rows.append(f'<TR><TD BORDER="0" ALIGN="RIGHT">{_SMALL.format(start)}</TD>{cells}</TR>')
    if p.nstorage == 0:
        return title, _SMALL.format("empty storage")
    if p.w1 < p.nstorage:
        beyond = int((p.covered >= p.w1).sum())
        note = f"… cells {p.w1}-{p.nstorage - 1} not drawn ({beyond} of them covered)"
        rows.append(f'<TR><TD BORDER="0" COLSPAN="{width + 1}">{_SMALL.format(note)}</TD></TR>')
    return title, f'<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">{"".join(rows)}</TABLE>'


# ---- the whole picture ------------------------------------------------------------------------------------------

def _title(p):
    t = p.t
    kind = "contiguous" if t.is_contiguous() else "not contiguous"
    formula = " → ".join(address_formula(p.size, p.stride, p.offset, times="·"))
    per = "row of the view" if len(p.size) >= 2 else "element"
    legend = (f"covers {len(p.covered)} of {p.nstorage} storage elements; coloured cells are covered "
              f"(one colour per {per}), grey ones are not")
    if not p.inverse_known:
        legend += f"; the view is too big ({p.numel} elements) to show which element lands where"
    return (f'<<FONT POINT-SIZE="16"><B>{html.escape(t.dtype.name)}{list(p.size)}</B></FONT>'
            f'<FONT POINT-SIZE="12">   sizes {list(p.size)}  ·  strides {list(p.stride)}  ·  '
            f'storage_offset {p.offset}  ·  {kind}</FONT><BR/>'
            f'<FONT POINT-SIZE="12" FACE="Courier">{html.escape(formula)}</FONT><BR/>'
            f'{_SMALL.format(html.escape(legend))}>')


def _cluster(name, title, table, where):
    """A borderless cluster: the table, captioned by `title` above ("t") or below ("b") it."""
    return [f"  subgraph cluster_{name} {{",
            f'    label=<{title}>; labelloc={where}; labeljust=l; color=white; fontname="{_FONT}"; fontsize=12;',
            f"    {name} [label=<{table}>];",
            "  }"]


def storage_dot(t, covered=None):
    """DOT text drawing tensor `t`'s logical grid above its storage strip (`covered`: its covered indices, if known)."""
    p = _Picture(t, covered)
    return "\n".join([
        "digraph storage {",
        f'  graph [rankdir=TB, labelloc=t, fontname="{_FONT}", ranksep=0.3, pad=0.3, bgcolor=white, '
        f"label={_title(p)}];",
        f'  node [shape=plaintext, fontname="{_FONT}", fontsize=11];',
        *_cluster("view", *_view_table(p), "t"),
        *_cluster("storage", *_storage_table(p), "b"),   # captioned below, so the arrow meets the cells
        '  view -> storage [color="#888888", arrowsize=0.7];',
        "}",
    ])
