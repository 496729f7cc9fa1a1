"""paddle.profiler.RecordEvent: a user range in the profile (a span on the calling
thread, its own table in the summary). Costs one attribute read when no profiler
records.

>>> from numbaflow.profiler import RecordEvent
>>> with RecordEvent('augment'):
...     pass
>>> ev = RecordEvent('forward'); ev.begin(); ev.end()
"""
import time

from ..utils import profiling_hook


class RecordEvent:
    """A named range: `begin()` / `end()`, or `with RecordEvent(name):`.

    Args:
        name (str): the range's name in the trace and the summary.
        event_type: accepted for Paddle's signature; every range is "PythonUserDefined".

    Example:
        >>> with paddle.profiler.RecordEvent('load batch'):
        ...     batch = np.zeros((4, 3))
    """

    def __init__(self, name: str, event_type: object = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"RecordEvent: name must be a str, got {type(name).__name__}")
        self.name = name
        self._rec = None
        self._t0 = 0

    def begin(self) -> None:
        """Start the range (nothing happens when no profiler records)."""
        self._rec = profiling_hook.recorder
        if self._rec is not None:
            self._t0 = time.perf_counter_ns()

    def end(self) -> None:
        """End the range (recorded into the window that was recording at begin())."""
        rec, self._rec = self._rec, None
        if rec is not None and rec is profiling_hook.recorder:
            rec.add(self.name, "PythonUserDefined", self._t0, time.perf_counter_ns())

    def __enter__(self):
        self.begin()
        return self

    def __exit__(self, *exc):
        self.end()
