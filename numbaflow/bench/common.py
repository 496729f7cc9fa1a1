"""What the benchmark cases share: numbaflow in static mode, fresh parameter names, the
agreement check every candidate passes before it is timed, an executor runner, and the
fused CompiledProgram with the summary of what it fused."""
import importlib

import numpy as np


def load_numbaflow():
    """numbaflow, in static mode (imported when a case is built, not when listed)."""
    import numbaflow
    numbaflow.enable_static()
    return numbaflow


def fresh_names(pd):
    """A fresh unique-name generator: parameters are always named fc_0.w_0, fc_0.b_0, ..."""
    return importlib.import_module(pd.__name__ + ".utils.unique_name").guard()


def check_close(name, got, want, rtol=1e-4, atol=1e-5):
    """The candidates must agree before their times mean anything."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got - want)) if got.shape == want.shape else "shape"
        raise AssertionError(f"{name}: result differs from the baseline "
                             f"(shapes {got.shape} vs {want.shape}, max abs err {err})")


def executor_runner(nf, program, feed, fetch, scope):
    """A no-argument call running `program` once on a CPU executor of `nf`."""
    exe = nf.static.Executor(nf.CPUPlace())
    return lambda: exe.run(program, feed=feed, fetch_list=fetch, scope=scope)


def fused_compiled(nf, program, **flags):
    """CompiledProgram with Paddle's add+act fusion and the general elementwise fuser
    (plus any other BuildStrategy flags given)."""
    bs = nf.static.BuildStrategy()
    bs.fuse_elewise_add_act_ops = True
    bs.enable_auto_fusion = True
    for name, value in flags.items():
        setattr(bs, name, value)
    return nf.static.CompiledProgram(program, build_strategy=bs)


def passed_ops(compiled):
    """The op types of the program a CompiledProgram really ran (after its passes);
    it must have run exactly one feed/fetch signature."""
    from ..compiler.compiled_program import passed_programs
    programs = passed_programs(compiled)
    assert len(programs) == 1, f"expected one compiled program, got {len(programs)}"
    return [op.type for op in programs[0].global_block().ops]


def is_fused(op_type):
    from ..kernels.registry import FUSED, get_op_def
    return get_op_def(op_type).has(FUSED)


def fused_summary(types):
    """'3 fused_elementwise, 1 fused_sgd' for the fused ops of a compiled program."""
    counts = {t: types.count(t) for t in dict.fromkeys(types) if t.startswith("fused")}
    return ", ".join(f"{n} {t}" for t, n in counts.items()) or "no fused op"
