"""Turning Graphviz DOT text into pictures: `render(dot_source, "g.svg")` writes SVG, PNG or PDF with `dot`.

lantern draws every picture (storage cells, autograd graphs, JIT graphs) as DOT text first, so the text itself is
always available (`.to_dot()`) and the drawing is left to Graphviz's `dot` program, which `make` installs.

>>> import tempfile
>>> path = render('digraph { a -> b }', os.path.join(tempfile.mkdtemp(), "ab.svg"))
>>> open(path).read().count("<svg")
1
"""
import os
import shutil
import subprocess

__all__ = ["render", "dot_quote", "FORMATS"]

FORMATS = ("svg", "png", "pdf", "dot")


def dot_quote(text):
    """`text` as a double-quoted DOT string (backslashes, quotes and newlines escaped)."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def render(dot_source, path):
    """Write `dot_source` to `path` in the format its suffix names (.svg, .png, .pdf or .dot); returns `path`."""
    fmt = os.path.splitext(str(path))[1].lstrip(".").lower()
    if fmt not in FORMATS:
        raise ValueError(f"render: cannot write {path!r}: the suffix must be one of "
                         f"{', '.join('.' + f for f in FORMATS)}")
    if fmt == "dot":
        with open(path, "w") as f:
            f.write(dot_source)
        return path
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(f"render: drawing {path!r} needs Graphviz's `dot` program, which is not on PATH; "
                           "`make` installs it (apt-get install graphviz), or save as .dot and draw it elsewhere")
    done = subprocess.run([exe, f"-T{fmt}", "-o", str(path)], input=dot_source.encode(), capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"render: dot failed on {path!r}: {done.stderr.decode(errors='replace').strip()}")
    return path
