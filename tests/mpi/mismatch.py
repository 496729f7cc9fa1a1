"""Run under `mpiexec -n 2`: programs or scopes that differ between ranks make
broadcast_parameters raise ValueError on EVERY rank (then the job ends normally).
Rank 0 prints `RAISED <case> rank <r>: <message>` for each rank."""
import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

rank = dist.get_rank()


def build(size, dtype="float32"):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 4], dtype)
        static.nn.fc(x, size)
    scope = static.Scope()
    static.Executor(paddle.CPUPlace()).run(startup, scope=scope)
    return main, scope


cases = {
    "shape": lambda: build(3 if rank == 0 else 5),
    "dtype": lambda: build(3, "float32" if rank == 0 else "float64"),
}


def extra_name():
    main, scope = build(3)
    if rank == 1:
        with static.program_guard(main, static.Program()), unique_name.guard("more_"):
            static.nn.fc(static.data("z", [None, 2], "float32"), 2)
    return main, scope


def only_rank1():
    main, scope = build(3)
    if rank == 0:
        scope.remove("fc_0.w_0")
    return main, scope


cases["program"] = extra_name
cases["held"] = only_rank1

for case, make in cases.items():
    main, scope = make()
    before = scope.get("fc_0.b_0") if scope.find_var("fc_0.b_0") else None
    try:
        dist.broadcast_parameters(main, scope)
    except ValueError as e:
        message = str(e)
        if before is not None:   # nothing was overwritten
            np.testing.assert_array_equal(scope.get("fc_0.b_0"), before)
    else:
        raise AssertionError(f"{case}: no ValueError on rank {rank}")
    # rank 0 prints for both: lines printed by two ranks can interleave mid-line
    for r, m in enumerate(dist.world().allgather_obj(message)):
        if rank == 0:
            print(f"RAISED {case} rank {r}: {m}", flush=True)
