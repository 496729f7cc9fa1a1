"""The GPU twins of tests/kernels/test_int_exact.py: integer ops on the simulated GPU are
exact against numpy; prints `checked N`. Run by tests/gpu/test_int_exact_gpu_sim.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.kernels import run_op

rng = np.random.default_rng(0)
failures, checked = [], 0

def trunc_div(x, y):
    with np.errstate(all="ignore"):
        q = x // y
        return np.where((q * y != x) & ((x < 0) != (y < 0)), q + 1, q).astype(x.dtype)

for dt in ("int8", "int16", "int32", "int64", "uint8"):
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, (3, 4, 5), dtype=dt, endpoint=True)
    y = rng.integers(info.min, info.max, (3, 4, 5), dtype=dt, endpoint=True)
    y[y == 0] = 1
    x.flat[0], y.flat[0] = info.min, (-1 if info.min < 0 else 1)   # INT_MIN / -1 wraps
    i64 = x.astype(np.int64)
    with np.errstate(all="ignore"):
        cases = [
            ("elementwise_div", {"X": x, "Y": y}, {}, trunc_div(x, y)),
            ("elementwise_div", {"X": x, "Y": y[0, 0]}, {}, trunc_div(x, y[0, 0])),  # row
            ("elementwise_add", {"X": x, "Y": y}, {}, x + y),
            ("elementwise_mul", {"X": x, "Y": y[:, :1]}, {}, x * y[:, :1]),   # general
            ("scale", {"X": x}, {"scale": 3.0, "bias": 1.0}, (i64 * 3 + 1).astype(dt)),
            ("reduce_sum", {"X": x}, {"dim": [1]}, i64.sum(axis=1)),
            ("reduce_sum", {"X": x}, {"dim": [0, 2]}, i64.sum(axis=(0, 2))),
            ("reduce_sum", {"X": x}, {"reduce_all": True}, i64.sum()),
        ]
    for op, ins, attrs, want in cases:
        got = run_op(op, ins, attrs, device="gpu")["Out"]
        checked += 1
        if got.dtype.kind not in "iu" or not np.array_equal(got, want):
            failures.append(f"{op} {attrs} {dt}: {got.ravel()[:6]} vs {want.ravel()[:6]}")
    # a zero divisor: recorded on the device, raised as ZeroDivisionError; cleared
    y0 = y.copy()
    y0[1, 2, 3] = 0
    try:
        run_op("elementwise_div", {"X": x, "Y": y0}, {}, device="gpu")
        failures.append(f"{dt}: no error for a zero divisor")
    except ZeroDivisionError as e:
        checked += 1
        if "division by zero" not in str(e):
            failures.append(f"{dt}: message {e}")
    again = run_op("elementwise_div", {"X": x, "Y": y}, {}, device="gpu")["Out"]
    if not np.array_equal(again, trunc_div(x, y)):
        failures.append(f"{dt}: a good run after the error differs")

# through the executor on CUDAPlace: the op is named, as on the CPU
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    a = static.data("a", [4], "int64")
    b = static.data("b", [4], "int64")
    q = paddle.divide(a + 1, b)
exe = static.Executor(paddle.CUDAPlace(0))
ones = np.ones(4, np.int64)
for fuse in (False, True):
    prog = main
    if fuse:
        bs = static.BuildStrategy()
        bs.enable_auto_fusion = True
        prog = static.CompiledProgram(main, build_strategy=bs)
    try:
        exe.run(prog, feed={"a": ones, "b": np.array([1, 2, 0, 1])}, fetch_list=[q])
        failures.append(f"executor fuse={fuse}: no error")
    except ZeroDivisionError as e:
        checked += 1
        if "division by zero" not in str(e) or "'b'" not in str(e):
            failures.append(f"executor fuse={fuse}: message {e}")
    out, = exe.run(prog, feed={"a": np.array([2 ** 53 + 1] * 4), "b": ones}, fetch_list=[q])
    if int(out[0]) != 2 ** 53 + 2:
        failures.append(f"executor fuse={fuse}: {out}")
print("checked", checked)
print("\n".join(failures))
raise SystemExit(1 if failures else 0)
