"""--quick compiles no segments it does not time (issue 32: a cold --quick spent ~20 s of CPU
compiling the steady-state segments of plans it then timed for milliseconds): its plans stay
op by op, in this process and in the dp/* children, while a full run still makes them hot."""
import numpy as np

from numbaflow.bench import __main__ as bench
from numbaflow.bench import data_parallel as dp
from numbaflow.bench.cases import Config, quick_config
from numbaflow.bench.common import load_numbaflow
from numbaflow.bench.harness import Candidate, Case, plans_stay_cold
from numbaflow.executor import plan
from numbaflow.executor.executor import cached_plans
from numbaflow.executor.segments import wait_for_compiles


def _two_op_run(nf):
    main, startup = nf.static.Program(), nf.static.Program()
    with nf.static.program_guard(main, startup):
        x = nf.static.data("x", [4], "float32")
        y = nf.nn.functional.relu(x * 2.0 + 1.0)
    exe = nf.static.Executor(nf.CPUPlace())
    feed = {"x": np.array([-1, 0, 1, 2], np.float32)}
    return exe, lambda: exe.run(main, feed=feed, fetch_list=[y])[0]


def test_quick_plans_stay_op_by_op_past_the_hot_runs():
    nf = load_numbaflow()
    hot_runs = plan.HOT_RUNS
    exe, run = _two_op_run(nf)
    with plans_stay_cold():
        for _ in range(3 * hot_runs):
            out = run()
    np.testing.assert_array_equal(out, [0, 1, 3, 5])       # relu(2x + 1)
    p, = cached_plans(exe)
    assert p.units is None and p.compiling is None, "a --quick plan turned hot"
    assert plan.HOT_RUNS == hot_runs                       # restored on the way out
    with plans_stay_cold(False):
        assert plan.HOT_RUNS == hot_runs                   # a full run: unchanged
        run()           # the same plan, past HOT_RUNS outside --quick: its segments compile
    assert p.compiling is not None or p.units is not None
    wait_for_compiles()


def test_run_case_times_quick_cases_cold_and_full_cases_hot():
    seen = []

    def build(cfg):
        return [Candidate("a", lambda: seen.append(plan.HOT_RUNS)), Candidate("b", lambda: 1.0)]

    case = Case("t/cold", "w", build)
    for cfg, cold in ((quick_config(), True), (Config(repeat=1, min_time=0), False)):
        seen.clear()
        rows, failed = bench.run_case(case, cfg)
        assert not failed and rows[0].ratio > 0
        assert all((h > 10 ** 6) == cold for h in seen), (cold, seen)


def test_quick_dp_children_run_their_plan_fewer_than_hot_runs_times():
    s = dp.settings(quick_config())
    runs = 2 + s["warmup"] + 1 + s["steps"] + 1     # checks, warm-up, take-up, samples, last
    assert runs < plan.HOT_RUNS, s
    full = dp.settings(Config())
    assert full["warmup"] > plan.HOT_RUNS                 # a full run times the hot plan
