"""numbaflow.profiler (paddle.profiler): where a training step's time goes.

    prof = paddle.profiler.Profiler(scheduler=(2, 5),
                                    on_trace_ready=paddle.profiler.export_chrome_tracing('./log'))
    prof.start()
    for batch in loader:
        exe.run(main, feed=batch, fetch_list=[loss])
        prof.step()
    prof.stop()
    prof.summary()        # per-op-type and per-op tables; open ./log/*.json in Perfetto

>>> sorted(n for n in paddle.profiler.__all__ if n[0].isupper())[:3]
['Profiler', 'ProfilerState', 'ProfilerTarget']
"""
from .profiler import (Profiler, ProfilerState, ProfilerTarget, SortedKeys, SummaryView,  # noqa: F401
                       export_chrome_tracing, export_protobuf, load_profiler_result,
                       make_scheduler)
from .record_event import RecordEvent  # noqa: F401

__all__ = ["Profiler", "ProfilerState", "ProfilerTarget", "SortedKeys", "SummaryView",
           "RecordEvent", "make_scheduler", "export_chrome_tracing", "export_protobuf",
           "load_profiler_result"]
