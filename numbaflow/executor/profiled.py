"""A plan's run while a profiler records (numbaflow.profiler): every op timed on the
thread that runs it, into the profiler's Recorder (utils/profiling_hook.py).

Plan._run picks this path with one check per run, so the usual path has no timing in
it. Here the plan runs op by op (or on its Scheduler's threads) even where it has
compiled segments, so each op's time is its own; the segment the op belongs to is
recorded as a span around its ops. A plan's first run compiles its kernels: its ops
are recorded as "compile", kept out of the operator tables.
"""
import time

from ..kernels.registry import COLLECTIVE, get_op_def


def _label(op, i):
    out = op.output_arg_names
    return f"{op.type}#{i}" + (f" -> {out[0]}" if out else "")


def _kinds(plan):
    """(category, args) of each op, cached on the plan for later profiled runs."""
    kinds = getattr(plan, "_profile_kinds", None)
    if kinds is None:
        kinds = plan._profile_kinds = [
            ("collective" if get_op_def(op.type).has(COLLECTIVE) else "operator",
             {"op_type": op.type, "op": _label(op, i), "index": i})
            for i, op in enumerate(plan.ops)]
    return kinds


def run_profiled(plan, rec, iterations):
    """Run `plan`'s kernels `iterations` times, timing each op into `rec`."""
    kinds = _kinds(plan)
    first = plan.runs == 1
    clock, add, ops, thunks = time.perf_counter_ns, rec.add, plan.ops, plan.thunks
    times = [None] * len(thunks)

    def timed(i):
        thunk, (cat, args) = thunks[i], kinds[i]
        cat = "compile" if first else cat

        def run():
            t0 = clock()
            try:
                thunk()
            except Exception as e:      # the op index, whatever the plan's units are
                e.failed_op = ops[i]
                raise
            t1 = clock()
            add(ops[i].type, cat, t0, t1, args)
            times[i] = (t0, t1)
        return run

    wrapped = [timed(i) for i in range(len(thunks))]
    # (segments exist only where the plan runs in program order: no scheduler)
    units = [(n, u.ops) for n, u in enumerate(plan.units or ()) if u.segment]
    what = f"Executor.run ({len(ops)} ops{', first run' if first else ''})"
    for _ in range(iterations):
        t0 = clock()
        if plan.scheduler is not None:
            plan.scheduler.run(wrapped)
        else:
            for plan._at, run in enumerate(wrapped):
                run()
        for n, members in units:        # the span of the ops a compiled segment merges
            add(f"segment {n} ({len(members)} ops)", "segment", times[members[0]][0],
                times[members[-1]][1], {"ops": list(members)})
        add(what, "executor", t0, clock(), {"iterations": iterations})
