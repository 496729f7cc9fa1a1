"""paddle.profiler: the Chrome trace obeys the Trace Event Format, the summary reflects
known op times, scheduler windows record only their steps, and a run with no profiler
never takes the timed path."""
import json
import os
import time
import types

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.executor import plan as plan_mod
from numbaflow.executor.profiled import run_profiled
from numbaflow.profiler import Profiler, ProfilerState, RecordEvent, make_scheduler
from numbaflow.profiler.summary import statistics
from numbaflow.profiler.trace import chrome_trace
from numbaflow.utils import profiling_hook
from numbaflow.executor.executor import last_plan

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


@pytest.fixture(autouse=True)
def _in_tmp_dir(tmp_path, monkeypatch):
    """A Profiler with on_trace_ready=None exports to ./profiler_log/, as Paddle's: keep
    that out of the checkout."""
    monkeypatch.chdir(tmp_path)

N = 384     # the big matmul: N x N @ N x N, milliseconds; the tiny op is a scale of 1 value


def _program():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        a = static.data('a', [N, N])
        b = static.data('b', [N, N])
        s = static.data('s', [1])
        big = paddle.matmul(a, b)
        tiny = paddle.scale(s, 2.0)
    return main, big, tiny


def _feed():
    rng = np.random.default_rng(0)
    return {'a': rng.random((N, N), dtype='float32'), 'b': rng.random((N, N), dtype='float32'),
            's': np.ones(1, 'float32')}


def _profile(steps=4, **kw):
    main, big, tiny = _program()
    exe = static.Executor(paddle.CPUPlace())
    feed = _feed()
    exe.run(main, feed=feed, fetch_list=[big, tiny])       # compiled before the window
    seen = []
    prof = Profiler(on_trace_ready=seen.append, **kw)
    with prof:
        for _ in range(steps):
            with RecordEvent('user work'):
                exe.run(main, feed=feed, fetch_list=[big, tiny])
            prof.step()
    return prof, seen


def _check_trace(trace):
    """The Trace Event Format's rules for what we write; returns the X events by thread."""
    assert set(trace) >= {"traceEvents"}
    named, by_tid = set(), {}
    for e in trace["traceEvents"]:
        assert {"name", "ph", "pid", "tid"} <= set(e), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert isinstance(e["name"], str)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and "name" in e["args"]
            if e["name"] == "thread_name":
                named.add(e["tid"])
        else:
            assert e["ph"] == "X", e
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
            assert e["ts"] >= 0 and e["dur"] >= 0
            by_tid.setdefault(e["tid"], []).append(e)
    assert set(by_tid) <= named, "every thread with events is named by an M event"
    eps = 2e-3     # microseconds: ts and dur are rounded to nanoseconds
    for tid, events in by_tid.items():
        stack = []
        for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"] + eps:
                stack.pop()
            assert not stack or end <= stack[-1] + eps, \
                f"{e['name']} on thread {tid} overlaps its parent without nesting in it"
            stack.append(end)
    return by_tid


def test_trace_is_valid_trace_event_format(tmp_path):
    main, big, tiny = _program()
    exe = static.Executor(paddle.CPUPlace())
    feed = _feed()
    out = str(tmp_path / "log")
    with Profiler(on_trace_ready=paddle.profiler.export_chrome_tracing(out)) as prof:
        for _ in range(3):
            exe.run(main, feed=feed, fetch_list=[big, tiny])   # the first run: "compile"
            prof.step()
    (name,) = os.listdir(out)
    assert name.endswith(".paddle_trace.json")
    with open(os.path.join(out, name)) as f:
        trace = json.load(f)
    by_tid = _check_trace(trace)
    cats = {e["cat"] for events in by_tid.values() for e in events}
    assert {"ProfileStep", "executor", "operator", "compile"} <= cats
    steps = [e for events in by_tid.values() for e in events if e["cat"] == "ProfileStep"]
    assert [e["name"] for e in sorted(steps, key=lambda e: e["ts"])] == \
        ["ProfileStep#0", "ProfileStep#1", "ProfileStep#2"]


def test_summary_orders_ops_by_time_and_totals_fit_in_the_steps():
    prof, seen = _profile(steps=4)
    assert seen == [prof]
    t = statistics(prof.profiler_result)
    assert t["type"]["matmul_v2"].calls == 4 and t["type"]["scale"].calls == 4
    assert t["type"]["matmul_v2"].total > 10 * t["type"]["scale"].total
    steps = t["step"]["steps"]
    assert steps.calls == 4
    ops = sum(s.total for s in t["type"].values())
    user = t["user"]["user work"].total
    assert ops <= user <= steps.total           # the ops run inside the user's range
    text = prof.summary_text()
    rows = [line.split()[0] for line in text.splitlines()
            if line.startswith(("matmul_v2 ", "scale "))]
    assert rows[:2] == ["matmul_v2", "scale"]       # the by-type table, largest first
    assert "user work" in text and "Operator Detail" in text
    assert "compile" not in {line.split()[0] for line in text.splitlines() if line.strip()}
    assert all(len(line) <= 120 for line in text.splitlines())
    assert "Operator Detail" not in prof.summary_text(op_detail=False)


def test_known_op_times_are_measured():
    """A plan whose two 'kernels' sleep 40 ms and 5 ms: the recorded spans say so."""
    op = lambda t: types.SimpleNamespace(type=t, output_arg_names=[t + ".out"])  # noqa: E731
    fake = types.SimpleNamespace(ops=[op("matmul_v2"), op("scale")], runs=2, units=None,
                                 scheduler=None, _at=0,
                                 thunks=[lambda: time.sleep(0.040), lambda: time.sleep(0.005)])
    rec = profiling_hook.Recorder()
    run_profiled(fake, rec, 2)
    t = statistics(rec)
    slow, fast = t["type"]["matmul_v2"], t["type"]["scale"]
    assert slow.calls == fast.calls == 2
    assert 0.080e9 <= slow.total < 0.080e9 + 0.2e9
    assert 0.010e9 <= fast.total < 0.010e9 + 0.2e9
    assert t["executor"]["executor"].total >= slow.total + fast.total


def test_scheduler_records_only_its_window():
    prof, seen = _profile(steps=6, scheduler=(2, 4))
    assert len(seen) == 1                               # one window, handed over once
    names = [e[0] for e in prof.profiler_result.events if e[1] == "ProfileStep"]
    assert names == ["ProfileStep#2", "ProfileStep#3"]
    assert statistics(prof.profiler_result)["type"]["matmul_v2"].calls == 2
    assert profiling_hook.recorder is None and profiling_hook.open_profilers == 0


def test_make_scheduler_matches_paddles_cycle():
    s = make_scheduler(closed=1, ready=1, record=2, repeat=2, skip_first=1)
    C, Rd, R, RR = (ProfilerState.CLOSED, ProfilerState.READY, ProfilerState.RECORD,
                    ProfilerState.RECORD_AND_RETURN)
    assert [s(i) for i in range(10)] == [C, C, Rd, R, RR, C, Rd, R, RR, C]
    prof, seen = _profile(steps=9, scheduler=make_scheduler(closed=1, ready=1, record=2))
    assert len(seen) == 2           # windows [2, 3] and [6, 7]
    names = [e[0] for e in prof.profiler_result.events if e[1] == "ProfileStep"]
    assert names == ["ProfileStep#6", "ProfileStep#7"]
    with pytest.raises(ValueError, match="record must be an int >= 1"):
        make_scheduler(closed=1, ready=1, record=0)
    with pytest.raises(ValueError, match=r"0 <= start < end"):
        Profiler(scheduler=(3, 2))


def test_no_profiler_never_takes_the_timed_path(monkeypatch):
    def boom(*a):
        raise AssertionError("timed path taken with no profiler")
    monkeypatch.setattr(plan_mod, "run_profiled", boom)
    main, big, tiny = _program()
    exe = static.Executor(paddle.CPUPlace())
    exe.run(main, feed=_feed(), fetch_list=[big])
    with RecordEvent("nothing records this"):
        pass
    assert profiling_hook.recorder is None


def test_timer_only_step_info_and_dataloader():
    main, big, tiny = _program()
    exe = static.Executor(paddle.CPUPlace())
    feed = _feed()
    loader = paddle.io.DataLoader.from_generator(
        feed_list=[main.global_block().var(n) for n in "abs"], capacity=2)
    loader.set_batch_generator(lambda: iter([(feed['a'], feed['b'], feed['s'])] * 3))
    prof = Profiler(timer_only=True)
    prof.start()
    for batch in loader():
        exe.run(main, feed=batch, fetch_list=[big])
        prof.step(num_samples=N)
    prof.stop()
    info = prof.step_info()
    assert info.startswith("reader_cost: ") and "batch_cost: " in info and "samples/s" in info
    assert prof.profiler_result is None
    with pytest.raises(RuntimeError, match="nothing recorded yet"):
        prof.summary()
    # recording: the loader's waits are spans of their own
    prof = Profiler(on_trace_ready=None)
    with prof:
        for batch in loader():
            exe.run(main, feed=batch, fetch_list=[big])
            prof.step()
    assert statistics(prof.profiler_result)["data"]["DataLoader.next"].calls >= 3
    _check_trace(chrome_trace(prof.profiler_result))


def test_refusals_say_what_to_use():
    with pytest.raises(NotImplementedError, match="export_chrome_tracing"):
        paddle.profiler.export_protobuf("x")
    with pytest.raises(NotImplementedError, match="perfetto"):
        paddle.profiler.load_profiler_result("x.json")
    prof = Profiler(on_trace_ready=None)
    with pytest.raises(RuntimeError, match="not started"):
        prof.step()


def test_threads_and_collectives_are_traced_on_their_threads():
    """Data parallel over 2 places with 2 scheduler threads each: the ops land on the
    threads that ran them (each named), the allreduce ops as "collective"."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data('x', [None, 8])
        y = paddle.mean(static.nn.fc(x, 4) + static.nn.fc(x, 4))
        paddle.optimizer.SGD(0.1).minimize(y)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    es = static.ExecutionStrategy()
    es.num_threads = 2
    cp = static.CompiledProgram(main).with_data_parallel(
        loss_name=y.name, exec_strategy=es, places=[paddle.CPUPlace()] * 2)
    feed = {'x': np.ones((4, 8), 'float32')}
    exe.run(cp, feed=feed, fetch_list=[y])
    with Profiler(on_trace_ready=None) as prof:
        for _ in range(2):
            exe.run(cp, feed=feed, fetch_list=[y])
            prof.step()
    by_tid = _check_trace(chrome_trace(prof.profiler_result))
    op_threads = {tid for tid, events in by_tid.items()
                  if any(e["cat"] == "operator" for e in events)}
    assert len(op_threads) >= 2
    assert any(e["cat"] == "collective" for events in by_tid.values() for e in events)


def test_a_hot_plan_with_segments_profiles_op_by_op_and_computes_the_same():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data('x', [None, 8])
        y = paddle.mean(paddle.nn.functional.relu(static.nn.fc(x, 8)) * 2.0 + 1.0)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feed = {'x': np.linspace(-1, 1, 32, dtype='float32').reshape(4, 8)}
    for _ in range(plan_mod.HOT_RUNS + 2):
        (want,) = exe.run(main, feed=feed, fetch_list=[y])
    from numbaflow.executor.segments import wait_for_compiles
    wait_for_compiles()
    (want,) = exe.run(main, feed=feed, fetch_list=[y])
    with Profiler(on_trace_ready=None) as prof:
        (got,) = exe.run(main, feed=feed, fetch_list=[y])
        prof.step()
    assert got == want
    by_tid = _check_trace(chrome_trace(prof.profiler_result))
    cats = {e["cat"] for events in by_tid.values() for e in events}
    assert "operator" in cats
    plan = last_plan(exe)
    if any(u.segment for u in plan.units or ()):    # (segments pay on this machine)
        assert "segment" in cats
    (after,) = exe.run(main, feed=feed, fetch_list=[y])
    assert after == want
