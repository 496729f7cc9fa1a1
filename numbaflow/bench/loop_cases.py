"""control/while_loop (issue 29 item 8): the per-iteration cost of `static.nn.while_loop`
with a small body, against the same body as one Executor.run per iteration and against
numpy. Issue 29's target: a few microseconds per iteration (max_time 5 us)."""
import numpy as np

from .common import check_close, executor_runner, fresh_names, load_numbaflow
from .harness import Candidate, Case

WIDTH = 16      # the loop state: x [WIDTH] float32


def _body(i, x):
    """x <- 0.5 x + 1 (two elementwise ops), i <- i + 1."""
    return [i + 1, x * 0.5 + 1.0]


def loop_program(pd, trips):
    """(main, startup, fetch): x = 0 stepped `trips` times by one while_loop."""
    main, startup = pd.static.Program(), pd.static.Program()
    with fresh_names(pd), pd.static.program_guard(main, startup):
        n = pd.full([1], trips, "int64")
        _, x = pd.static.nn.while_loop(lambda i, x: i < n, _body,
                                       [pd.full([1], 0, "int64"), pd.zeros([WIDTH])])
    return main, startup, x


def step_program(pd):
    """One iteration of the body as its own program (x fed, the next x fetched)."""
    main, startup = pd.static.Program(), pd.static.Program()
    with fresh_names(pd), pd.static.program_guard(main, startup):
        x = pd.static.data("x", [WIDTH], "float32")
        _, nxt = _body(pd.full([1], 0, "int64"), x)
    return main, startup, nxt


def while_loop_case(trips=1000):
    """control/while_loop: `trips` iterations of a two-op body per Executor.run."""

    def build(cfg):
        nf = load_numbaflow()
        k = 20 if cfg.quick else trips
        main, startup, x = loop_program(nf, k)
        scope = nf.static.Scope()
        nf.static.Executor(nf.CPUPlace()).run(startup, scope=scope)
        loop = executor_runner(nf, main, {}, [x], scope)
        smain, _, nxt = step_program(nf)
        one = executor_runner(nf, smain, {"x": np.zeros(WIDTH, np.float32)}, [nxt], scope)

        def by_hand():
            v = np.zeros(WIDTH, np.float32)
            for _ in range(k):
                v = v * np.float32(0.5) + np.float32(1.0)
            return v
        check_close("while_loop", loop()[0], by_hand())
        return [Candidate(f"while_loop x{k}", loop, iterations=k,
                          note="time per iteration (one Executor.run of the whole loop)"),
                Candidate("Executor.run per iteration", one, note="the body as a program"),
                Candidate(f"numpy loop x{k}", by_hand, iterations=k)]

    return Case("control/while_loop", f"while_loop, body x = 0.5 x + 1 on [{WIDTH}] f32 "
                f"and i + 1, {trips} iterations per run", build, max_time=5e-6)
