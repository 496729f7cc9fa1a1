"""elementwise_mod (paddle.remainder) on the simulated GPU against numpy, integer and float,
signs and broadcasts; prints `checked N`. Run by tests/kernels/test_mod.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.kernels import run_op

rng = np.random.default_rng(0)
failures, checked = [], 0
for dt in ("int8", "int16", "int32", "int64", "uint8", "float32", "float64"):
    if dt.startswith("float"):
        x = rng.uniform(-100, 100, (3, 4, 5)).astype(dt)
        y = (rng.uniform(0.5, 9, (3, 4, 5)) * rng.choice([-1, 1], (3, 4, 5))).astype(dt)
    else:
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, (3, 4, 5), dtype=dt, endpoint=True)
        y = rng.integers(info.min, info.max, (3, 4, 5), dtype=dt, endpoint=True)
        y[y == 0] = 1
        x.flat[0], y.flat[0] = info.min, (-1 if info.min < 0 else 1)
    for ins in ({"X": x, "Y": y}, {"X": x, "Y": y[0, 0]}, {"X": x, "Y": y[:, :1]}):
        got = run_op("elementwise_mod", ins, {}, device="gpu")["Out"]
        checked += 1
        if got.dtype != x.dtype or not np.array_equal(got, np.remainder(ins["X"], ins["Y"])):
            failures.append(f"{dt} {ins['Y'].shape}: {got.ravel()[:6]}")
    if dt.startswith("int") or dt == "uint8":
        y0 = y.copy()
        y0[1, 2, 3] = 0
        try:
            run_op("elementwise_mod", {"X": x, "Y": y0}, {}, device="gpu")
            failures.append(f"{dt}: no error for a zero divisor")
        except ZeroDivisionError as e:
            checked += 1
            if "integer modulo by zero" not in str(e):
                failures.append(f"{dt}: message {e}")

# through the executor on CUDAPlace, plain and auto-fused: the op is named
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    a = static.data("a", [4], "int64")
    b = static.data("b", [4], "int64")
    r = (a + 1) % b
exe = static.Executor(paddle.CUDAPlace(0))
for fuse in (False, True):
    prog = main
    if fuse:
        bs = static.BuildStrategy()
        bs.enable_auto_fusion = True
        prog = static.CompiledProgram(main, build_strategy=bs)
    try:
        exe.run(prog, feed={"a": np.ones(4, np.int64), "b": np.array([1, 2, 0, 1])},
                fetch_list=[r])
        failures.append(f"executor fuse={fuse}: no error")
    except ZeroDivisionError as e:
        checked += 1
        if "integer modulo by zero" not in str(e) or "'b'" not in str(e):
            failures.append(f"executor fuse={fuse}: message {e}")
    out, = exe.run(prog, feed={"a": np.array([6, -8, 9, 2 ** 53 + 1]),
                               "b": np.array([4, 3, -4, 2])}, fetch_list=[r])
    if out.tolist() != [3, 2, -2, 0]:
        failures.append(f"executor fuse={fuse}: {out}")
print("checked", checked)
print("\n".join(failures))
raise SystemExit(1 if failures else 0)
