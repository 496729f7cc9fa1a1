"""paddle.profiler.Profiler: where a step's time goes, op by op.

A Profiler moves through ProfilerState's as `step()` is called (its scheduler says which
steps record); in a RECORD window every `Executor.run` times each op on the thread that
runs it (executor/profiled.py), and the DataLoader, the steps and `RecordEvent` ranges
are recorded too. When a window ends, `on_trace_ready(prof)` gets the profiler (by
default `export_chrome_tracing('./profiler_log/')`), and `summary()` prints its tables.
With no profiler recording the run path is untouched (one check per run).

A profiled run goes op by op even where the plan has compiled segments (each op needs
its own time), so a step is slower while recording; the ops' times are their own.
On a GPU place the times are launch times (kernels run asynchronously).
"""
from __future__ import annotations

import datetime
import os
import socket
import time
import warnings
from enum import Enum
from typing import Any, Callable, Iterable, NoReturn

from ..utils import profiling_hook
from .summary import summary_text
from .trace import write_chrome_trace
from .record_event import RecordEvent


class ProfilerState(Enum):
    """CLOSED: nothing recorded; READY: about to record; RECORD: recording;
    RECORD_AND_RETURN: the last step of a RECORD window (its data is handed over).

    Args:
        value (int): the member's number (as Paddle's).

    Example:
        >>> paddle.profiler.ProfilerState.RECORD.value
        2
    """
    CLOSED = 0
    READY = 1
    RECORD = 2
    RECORD_AND_RETURN = 3

    def __init__(self, value: int) -> None:
        self._value_ = value


class ProfilerTarget(Enum):
    """The devices to profile: CPU (the host's ops) and GPU (launch times); the others
    are accepted and ignored with a warning.

    Args:
        value (int): the member's number (as Paddle's).

    Example:
        >>> paddle.profiler.ProfilerTarget.CPU.name
        'CPU'
    """
    CPU = 0
    GPU = 1
    XPU = 2
    CUSTOM_DEVICE = 3

    def __init__(self, value: int) -> None:
        self._value_ = value


class SortedKeys(Enum):
    """How summary() orders its rows (GPU* order as CPU*: one clock times both).

    Args:
        value (int): the member's number (as Paddle's).

    Example:
        >>> paddle.profiler.SortedKeys.CPUAvg.value
        1
    """
    CPUTotal = 0
    CPUAvg = 1
    CPUMax = 2
    CPUMin = 3
    GPUTotal = 4
    GPUAvg = 5
    GPUMax = 6
    GPUMin = 7

    def __init__(self, value: int) -> None:
        self._value_ = value


class SummaryView(Enum):
    """The tables summary(views=...) prints (the others are Paddle's device views).

    Args:
        value (int): the member's number (as Paddle's).

    Example:
        >>> paddle.profiler.SummaryView.OperatorView.value
        5
    """
    DeviceView = 0
    OverView = 1
    ModelView = 2
    DistributedView = 3
    KernelView = 4
    OperatorView = 5
    MemoryView = 6
    MemoryManipulationView = 7
    UDFView = 8

    def __init__(self, value: int) -> None:
        self._value_ = value


_VIEWS = {SummaryView.OverView: "overview", SummaryView.OperatorView: "operator",
          SummaryView.KernelView: "operator", SummaryView.UDFView: "udf",
          SummaryView.ModelView: "compile"}


def make_scheduler(*, closed: int, ready: int, record: int, repeat: int = 0,
                   skip_first: int = 0) -> Callable[[int], ProfilerState]:
    """A scheduler: step number -> ProfilerState. After `skip_first` steps, cycles of
    `closed` CLOSED, `ready` READY and `record` RECORD steps (the last one
    RECORD_AND_RETURN), `repeat` times (0: until the profiler stops).

    Args:
        closed (int): steps recording nothing, at the start of each cycle.
        ready (int): steps getting ready (nothing recorded) after them.
        record (int): steps recorded (>= 1).
        repeat (int): cycles (0: until the profiler stops).
        skip_first (int): steps skipped before the first cycle.

    Returns:
        callable: step number -> ProfilerState.

    Example:
        >>> s = paddle.profiler.make_scheduler(closed=1, ready=1, record=2, repeat=1)
        >>> [s(i).name for i in range(5)]
        ['CLOSED', 'READY', 'RECORD', 'RECORD_AND_RETURN', 'CLOSED']
    """
    for name, v, least in (("closed", closed, 0), ("ready", ready, 0), ("record", record, 1),
                           ("repeat", repeat, 0), ("skip_first", skip_first, 0)):
        if not isinstance(v, int) or v < least:
            raise ValueError(f"make_scheduler: {name} must be an int >= {least}, got {v!r}")
    period = closed + ready + record

    def state(step):
        if step < skip_first:
            return ProfilerState.CLOSED
        step -= skip_first
        if repeat > 0 and step // period >= repeat:
            return ProfilerState.CLOSED
        k = step % period
        if k < closed:
            return ProfilerState.CLOSED
        if k < closed + ready:
            return ProfilerState.READY
        return ProfilerState.RECORD if k < period - 1 else ProfilerState.RECORD_AND_RETURN
    return state


def _window(scheduler):
    """Paddle's (start, end) tuple: record steps [start, end)."""
    start, end = scheduler
    if not (isinstance(start, int) and isinstance(end, int) and end > start >= 0):
        raise ValueError(f"Profiler: scheduler=(start, end) must be ints with "
                         f"0 <= start < end (steps [start, end) are recorded), got {scheduler!r}")
    if start >= 1:
        return make_scheduler(closed=start - 1, ready=1, record=end - start, repeat=1)
    return make_scheduler(closed=0, ready=0, record=end - start, repeat=1)


def export_chrome_tracing(dir_name: str, worker_name: str | None = None
                          ) -> Callable[[Profiler], None]:
    """An on_trace_ready that writes each window's trace to
    `dir_name/<worker_name>_time_<date>.paddle_trace.json` (worker_name: host and pid).

    Args:
        dir_name (str): the folder (created when missing).
        worker_name (str, optional): the file name's prefix.

    Returns:
        callable: the handler, called with the Profiler.

    Example:
        >>> import tempfile
        >>> handler = paddle.profiler.export_chrome_tracing(tempfile.mkdtemp())
        >>> callable(handler)
        True
    """
    def handle(prof):
        worker = worker_name or f"host_{socket.gethostname()}pid_{os.getpid()}"
        now = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S_%f")
        prof.export(os.path.join(dir_name, f"{worker}_time_{now}.paddle_trace.json"), "json")
    return handle


def export_protobuf(dir_name: str, worker_name: str | None = None) -> NoReturn:
    """Not supported: raises NotImplementedError (use export_chrome_tracing).

    Args:
        dir_name (str): the folder Paddle would write to.
        worker_name (str, optional): the file name's prefix.

    Raises:
        NotImplementedError: always.

    Example:
        >>> paddle.profiler.export_protobuf('./log')
        Traceback (most recent call last):
        NotImplementedError: numbaflow.profiler writes Chrome traces only (JSON, opened by Perfetto); use on_trace_ready=export_chrome_tracing(dir_name)
    """
    raise NotImplementedError("numbaflow.profiler writes Chrome traces only (JSON, opened by "
                              "Perfetto); use on_trace_ready=export_chrome_tracing(dir_name)")


def load_profiler_result(filename: str) -> NoReturn:
    """Not supported: raises NotImplementedError (open the JSON trace in Perfetto).

    Args:
        filename (str): a saved result.

    Raises:
        NotImplementedError: always.

    Example:
        >>> paddle.profiler.load_profiler_result('x.json')  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        NotImplementedError: numbaflow.profiler cannot load a saved result: ...
    """
    raise NotImplementedError("numbaflow.profiler cannot load a saved result: open the Chrome "
                              f"trace {filename!r} at https://ui.perfetto.dev instead")


class Profiler:
    """Profile the steps of a training loop (Paddle's paddle.profiler.Profiler).

    Args:
        targets (list of ProfilerTarget, optional): CPU and/or GPU (default both).
        scheduler (callable or (start, end), optional): which steps record (default all).
        on_trace_ready (callable, optional): called with the profiler when a RECORD window
            ends (default: export_chrome_tracing('./profiler_log/')).
        timer_only (bool): only time the steps and the data loading (step_info); no op
            is timed and nothing is traced.
        record_shapes, profile_memory, emit_nvtx, custom_device_types, with_flops:
            accepted for Paddle's signature, ignored.

    Example:
        >>> x = static.data('x', [None, 4])
        >>> y = paddle.mean(static.nn.fc(x, 3))
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> with paddle.profiler.Profiler(on_trace_ready=lambda p: None) as prof:
        ...     for _ in range(3):
        ...         _ = exe.run(feed={'x': np.ones((2, 4), 'float32')}, fetch_list=[y])
        ...         prof.step()
        >>> 'Operator Summary' in prof.summary_text()
        True
    """

    def __init__(self, *, targets: Iterable[ProfilerTarget] | None = None,
                 scheduler: Callable[[int], ProfilerState] | tuple | None = None,
                 on_trace_ready: Callable[[Profiler], Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 timer_only: bool = False, emit_nvtx: bool = False,
                 custom_device_types: list | None = None, with_flops: bool = False) -> None:
        self.targets = set(targets) if targets else {ProfilerTarget.CPU, ProfilerTarget.GPU}
        for t in self.targets - {ProfilerTarget.CPU, ProfilerTarget.GPU}:
            warnings.warn(f"Profiler: target {t} is not supported here; ignored", stacklevel=2)
        if callable(scheduler):
            self.scheduler = scheduler
        elif isinstance(scheduler, (tuple, list)):
            self.scheduler = _window(scheduler)
        elif scheduler is None:
            self.scheduler = lambda step: ProfilerState.RECORD
        else:
            raise TypeError(f"Profiler: scheduler must be a callable (make_scheduler) or a "
                            f"(start, end) tuple, got {type(scheduler).__name__}")
        self.on_trace_ready = on_trace_ready if on_trace_ready is not None \
            else export_chrome_tracing("./profiler_log/")
        self.timer_only = timer_only
        self.step_num = 0
        self.current_state = self.scheduler(0)
        self.previous_state = ProfilerState.CLOSED
        self.profiler_result = None     # the Recorder of the last finished window
        self._recorder = None
        self._started = False
        self._step_start = None
        self._timer = []                # (step seconds, data seconds, num_samples) since step_info

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self) -> None:
        """Start at step 0 (recording at once if the scheduler says so)."""
        if self._started:
            raise RuntimeError("Profiler.start: already started; call stop() first")
        self._started = True
        profiling_hook.open_profilers += 1
        self._data_mark = profiling_hook.data_ns
        self._step_start = time.perf_counter_ns()
        if not self.timer_only and self.current_state in (ProfilerState.RECORD,
                                                          ProfilerState.RECORD_AND_RETURN):
            self._begin_record()

    def step(self, num_samples: int | None = None) -> None:
        """Mark the end of a step (and the start of the next).

        Args:
            num_samples (int, optional): the step's batch size, for step_info's ips.
        """
        if not self._started:
            raise RuntimeError("Profiler.step: the profiler is not started; call start() "
                               "or use it as a context manager")
        self._end_step(num_samples)
        self.previous_state = self.current_state
        self.step_num += 1
        self.current_state = self.scheduler(self.step_num)
        if self.timer_only:
            return
        if self._recorder is not None and (
                self.previous_state == ProfilerState.RECORD_AND_RETURN
                or self.current_state in (ProfilerState.CLOSED, ProfilerState.READY)):
            self._finish_record()
        if self._recorder is None and self.current_state in (
                ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN):
            self._begin_record()

    def stop(self) -> None:
        """End the last step and the profiler; hands a window still recording over."""
        if not self._started:
            return
        rec = self._recorder
        if rec is None or any(e[2] >= self._step_start for e in rec.events[-1:]):
            self._end_step(None, timed=False)   # (no empty step after the last step())
        self._started = False
        profiling_hook.open_profilers -= 1
        if self._recorder is not None:
            self._finish_record()

    def _end_step(self, num_samples, timed=True):
        now = time.perf_counter_ns()
        data = profiling_hook.data_ns
        if timed:       # step_info's steps: those ended by step()
            self._timer.append(((now - self._step_start) / 1e9,
                                (data - self._data_mark) / 1e9, num_samples))
        self._data_mark = data
        if self._recorder is not None:
            self._recorder.add(f"ProfileStep#{self.step_num}", "ProfileStep",
                               self._step_start, now)
        self._step_start = now

    def _begin_record(self):
        if profiling_hook.recorder is not None:
            raise RuntimeError("Profiler: another profiler is recording; one at a time "
                               "(stop the other first)")
        self._recorder = profiling_hook.recorder = profiling_hook.Recorder()
        self._step_start = self._recorder.start_ns     # the step span inside the window

    def _finish_record(self):
        rec, self._recorder = self._recorder, None
        profiling_hook.recorder = None
        rec.end_ns = time.perf_counter_ns()
        self.profiler_result = rec
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def export(self, path: str, format: str = "json") -> str:
        """Write the last window's trace to `path` (format 'json': a Chrome trace).

        Args:
            path (str): the file.
            format (str): 'json' (the only one).

        Returns:
            str: the path.
        """
        if format != "json":
            raise NotImplementedError(f"Profiler.export: format {format!r} is not supported; "
                                      f"use 'json' (a Chrome trace, opened by Perfetto)")
        return write_chrome_trace(self._result("export"), path)

    def _result(self, what):
        if self.profiler_result is None:
            raise RuntimeError(f"Profiler.{what}: nothing recorded yet (no RECORD window has "
                               f"ended; check the scheduler, or call stop() first)")
        return self.profiler_result

    def summary_text(self, sorted_by: SortedKeys = SortedKeys.CPUTotal, op_detail: bool = True,
                     thread_sep: bool = False, time_unit: str = "ms", views: Any = None) -> str:
        """What summary() prints, as a string.

        Args:
            sorted_by, op_detail, thread_sep, time_unit, views: as summary().

        Returns:
            str: the tables.
        """
        if views is not None:
            views = {_VIEWS.get(v) for v in (views if isinstance(views, (list, tuple, set))
                                             else [views])}
        return summary_text(self._result("summary"), sorted_by.value % 4, op_detail, time_unit,
                            views)

    def summary(self, sorted_by: SortedKeys = SortedKeys.CPUTotal, op_detail: bool = True,
                thread_sep: bool = False, time_unit: str = "ms", views: Any = None) -> None:
        """Print the last window's tables: an overview of the steps, the operators by type
        and (op_detail) one by one (calls, total, average, min, max, share of the step
        time), the RecordEvent ranges, and apart the first runs, whose time is mostly
        compiling kernels.

        Args:
            sorted_by (SortedKeys): the rows' order (total, average, max or min time).
            op_detail (bool): also the table of each op.
            thread_sep (bool): accepted, ignored (one table for all threads).
            time_unit (str): 's', 'ms', 'us' or 'ns'.
            views (SummaryView or list, optional): only these tables.
        """
        print(self.summary_text(sorted_by, op_detail, thread_sep, time_unit, views))

    def step_info(self, unit: str | None = None) -> str:
        """The average step since the last call: reader_cost (waiting for the
        DataLoader), batch_cost (the step) and ips (num_samples per second, or steps/s).

        Args:
            unit (str, optional): the samples' unit in ips (default 'samples').

        Returns:
            str: 'reader_cost: ... s batch_cost: ... s ips: ...'.
        """
        rows, self._timer = self._timer, []
        if not rows:
            return "no step since the last step_info"
        n = len(rows)
        batch = sum(r[0] for r in rows) / n
        reader = sum(r[1] for r in rows) / n
        samples = [r[2] for r in rows if r[2] is not None]
        if len(samples) == n and batch > 0:
            ips = f"{sum(samples) / n / batch:.3f} {unit or 'samples'}/s"
        else:
            ips = f"{1.0 / batch if batch > 0 else 0.0:.3f} steps/s"
        return f"reader_cost: {reader:.5f} s batch_cost: {batch:.5f} s ips: {ips}"


__all__ = ["Profiler", "ProfilerState", "ProfilerTarget", "SortedKeys", "SummaryView",
           "RecordEvent", "make_scheduler", "export_chrome_tracing", "export_protobuf",
           "load_profiler_result"]
