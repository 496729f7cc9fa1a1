"""The bench's stderr: a progress line per case (`  running <case> ... 12.3 s`) that no
other output lands inside, and every line within WIDTH columns.

A cold compile's notice (the numbaflow logger), a Python warning or a traceback printed
while a case runs first ends the open progress line, then comes out wrapped to WIDTH
columns; the case's time then gets a line of its own.

>>> import io
>>> out = io.StringIO()
>>> with ProgressLines(out) as lines:
...     with lines.case('mlp/step'):
...         print('numbaflow WARNING: ' + 'compiling ' * 20, file=sys.stderr)
>>> [len(ln) <= WIDTH for ln in out.getvalue().splitlines()]
[True, True, True, True]
>>> out.getvalue().splitlines()[0]
'  running mlp/step ...'
"""
import contextlib
import logging
import sys
import textwrap
import time

from .report import WIDTH


class ProgressLines:
    """A stand-in for stderr (`with ProgressLines(stream) as lines:`) that keeps the
    progress line of `lines.case(name)` whole and wraps every other line."""

    def __init__(self, stream, width=WIDTH):
        self.stream, self.width = stream, width
        self._open = False          # a progress line is written without its end
        self._pending = ""          # other output not yet ended by a newline
        self._swapped = []

    # ---- the stream interface (what print, logging and warnings call)
    def write(self, text):
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._line(line)
        return len(text)

    def flush(self):
        self.stream.flush()

    def isatty(self):
        return False

    def _line(self, line):
        if self._open:
            self.stream.write("\n")
            self._open = False
        if len(line) <= self.width:
            self.stream.write(line + "\n")
            return
        indent = " " * min(len(line) - len(line.lstrip()) + 4, 12)
        for piece in textwrap.wrap(line, self.width, subsequent_indent=indent,
                                   break_long_words=True, break_on_hyphens=False):
            self.stream.write(piece + "\n")

    # ---- a case's progress line
    @contextlib.contextmanager
    def case(self, name):
        """`  running <name> ...` now, its time when the case ends."""
        self._end_pending()
        self.stream.write(f"  running {name} ...")
        self.stream.flush()
        self._open = True
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._end_pending()
            took = f"{time.perf_counter() - t0:.1f} s"
            self.stream.write(f" {took}\n" if self._open else f"  {name}: {took}\n")
            self._open = False
            self.stream.flush()

    def _end_pending(self):
        if self._pending:
            line, self._pending = self._pending, ""
            self._line(line)

    # ---- installed as sys.stderr and as the stream of the handlers writing to stderr
    def __enter__(self):
        real = {id(sys.stderr), id(sys.__stderr__)}
        handlers = logging.getLogger("numbaflow").handlers + logging.getLogger().handlers
        self._swapped = [(h, h.stream) for h in handlers
                         if isinstance(h, logging.StreamHandler) and id(h.stream) in real]
        for h, _ in self._swapped:
            h.setStream(self)
        self._stderr, sys.stderr = sys.stderr, self
        return self

    def __exit__(self, *exc):
        self._end_pending()
        sys.stderr = self._stderr
        for h, stream in self._swapped:
            h.setStream(stream)
        self._swapped = []
