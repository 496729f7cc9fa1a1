"""`static.draw(program, "g.svg")`: a picture of a program's graph.

Ops are boxes, variables ellipses (parameters and optimizer state shaded), edges run
input -> op -> output. Rendering needs Graphviz's ``dot`` program; without it the DOT text
is written instead (with a warning saying how to render it), so graphviz is never a hard
dependency.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import warnings

from ..graph.graphviz import program_to_dot
from ..utils.atomic_file import atomic_write as _atomic_write

_TEXT_FORMATS = ("dot", "gv")
_STYLE = ('  graph [rankdir=TB, fontname="Helvetica", nodesep=0.25, ranksep=0.3];\n'
          '  node [fontname="Helvetica", fontsize=10, height=0.3];\n'
          '  edge [arrowsize=0.6];\n')


def to_dot(program: object) -> str:
    """The DOT text of `program` (a Program, or a CompiledProgram: its user program)."""
    program = getattr(program, "program", program)
    if not hasattr(program, "global_block"):
        raise TypeError(f"draw: expected a static.Program or CompiledProgram, got "
                        f"{type(program).__name__}")
    text = program_to_dot(program)
    head, rest = text.split("\n", 1)
    return f"{head}\n{_STYLE}{rest}"


def draw(program: object, path: str | os.PathLike[str], format: str | None = None) -> str:
    """Render `program` (its ops, variables and their shapes) to the picture `path`.

    Uses the ``graphviz`` Python package when it is installed and Graphviz's ``dot``
    program is found, else ``dot`` directly. Without ``dot`` it writes the DOT text to
    ``<path>.dot`` instead and warns (``UserWarning``) with the command that renders it.

    Args:
        program (Program or CompiledProgram): what to draw (a CompiledProgram: the
            program it was made from).
        path (str or PathLike): the file to write; missing directories are created.
        format (str, optional): svg, png, pdf, ... or dot / gv for the DOT text itself;
            default: the extension of `path`.

    Returns:
        str: the path written (``<path>.dot`` when ``dot`` was not found).

    Raises:
        TypeError: `program` is not a Program or CompiledProgram.
        ValueError: the format cannot be told from `path` and `format` is not given.
        RuntimeError: ``dot`` failed.

    Example:
        >>> import os, tempfile
        >>> x = static.data('x', [None, 3])
        >>> y = static.nn.fc(x, size=2)
        >>> path = static.draw(static.default_main_program(),
        ...                    os.path.join(tempfile.mkdtemp(), 'graph.dot'))
        >>> print(open(path).read().count('shape=box'))     # two ops: mul, elementwise_add
        2
    """
    path = os.fspath(path)
    fmt = (format or os.path.splitext(path)[1].lstrip(".")).lower()
    if not fmt:
        raise ValueError(f"draw: cannot tell the format of {path!r}: give the file an "
                         f"extension (.svg, .png, .pdf, .dot) or pass format=")
    dot_text = to_dot(program)
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    if fmt in _TEXT_FORMATS:
        _atomic_write(path, dot_text)
        return path
    dot = shutil.which("dot")
    if dot is None:
        dot_path = path + ".dot"
        _atomic_write(dot_path, dot_text)
        warnings.warn(f"draw: Graphviz's `dot` program was not found, so {path!r} was not "
                      f"rendered; the graph's DOT text is in {dot_path!r}. Install Graphviz "
                      f"(e.g. `apt-get install graphviz`, `brew install graphviz` or "
                      f"`conda install graphviz`) and run `dot -T{fmt} {dot_path} -o {path}`, "
                      f"or open the .dot file in any DOT viewer", UserWarning, stacklevel=2)
        return dot_path
    try:
        import graphviz
    except ImportError:
        graphviz = None
    if graphviz is not None:
        graphviz.Source(dot_text).render(outfile=path, format=fmt, cleanup=True)
        # graphviz leaves the DOT source next to the picture unless cleanup removes it
        return path
    r = subprocess.run([dot, f"-T{fmt}", "-o", path], input=dot_text, text=True,
                       capture_output=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"draw: `dot -T{fmt}` failed (exit {r.returncode}): "
                           f"{r.stderr.strip()}")
    return path
