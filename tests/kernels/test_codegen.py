"""Generated kernels: readable dumps, the on-disk cache across processes, layouts."""
import numpy as np
import pytest
from child import run_script

from numbaflow.kernels import run_op
from numbaflow.kernels.codegen import cache, cpu


@pytest.fixture
def fresh_kernel_caches(monkeypatch, tmp_path):
    """Forget in-process compiled kernels so the next use goes through the disk cache."""
    monkeypatch.setattr(cache, "loaded_modules", {})
    monkeypatch.setattr(cpu, "compiled_kernels", {})
    monkeypatch.setenv("NUMBAFLOW_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_dump_dir_gets_readable_source(fresh_kernel_caches, monkeypatch):
    dump = fresh_kernel_caches / "dump"
    monkeypatch.setenv("NUMBAFLOW_DUMP_DIR", str(dump))
    x = np.random.rand(3, 4).astype(np.float32)
    out = run_op("leaky_relu", {"X": x}, {"alpha": 0.25})["Out"]
    np.testing.assert_allclose(out, np.where(x > 0, x, 0.25 * x), rtol=1e-6)
    files = list(dump.glob("elementwise_*.py"))
    assert len(files) == 1
    src = files[0].read_text(encoding="utf-8")
    assert "@njit(" in src and "def kernel(" in src
    assert "(_F(0.25) * t0)" in src and " if t1 else " in src   # the body, as scalar code
    compile(src, str(files[0]), "exec")                  # valid Python


@pytest.mark.slow
def test_second_process_loads_compiled_kernels_from_disk(tmp_path):
    runs = [run_script("codegen_disk_cache", NUMBAFLOW_CACHE_DIR=str(tmp_path / "cache"))
            for _ in range(2)]
    (h1, m1), (h2, m2) = [map(int, r.stdout.split()) for r in runs]
    assert m1 > 0 and h1 == 0           # first process compiles ...
    assert h2 == m1 and m2 == 0         # ... the second loads every kernel from disk
    assert list((tmp_path / "cache").glob("nfk_*.py"))


@pytest.mark.parametrize("xs, ys", [
    ((6, 7), (6, 7)),            # same shape: collapses to one dim
    ((6, 7), (7,)),              # bias along the last dim
    ((6, 7), (6, 1)),            # per-row scalar (stride 0 inside the row)
    ((2, 1, 7), (1, 3, 1)),      # broadcast on both sides
    ((2, 3, 4, 5), (3, 1, 5)),   # outer broadcast with a contiguous inner block
    ((), (4,)),                  # 0-D operand
])
def test_broadcast_layouts_match_numpy(xs, ys):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(xs), rng.standard_normal(ys)
    np.testing.assert_allclose(run_op("elementwise_mul", {"X": x, "Y": y})["Out"], x * y,
                               rtol=1e-12)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_large_arrays_split_over_the_threads_and_agree(threads):
    """Above PARALLEL_MIN_SIZE the one compiled kernel runs as T workers claiming row
    blocks (workshare.py); below it, or at one thread, it is one serial call."""
    import numba
    from numbaflow.kernels import workshare
    from numbaflow.kernels.registry import build_cpu_kernel
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip(f"numba has {numba.config.NUMBA_NUM_THREADS} threads")
    rng = np.random.default_rng(0)
    x = rng.random((1100, 1000), dtype=np.float32)          # > PARALLEL_MIN_SIZE
    b = rng.random(1000, dtype=np.float32)
    old = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        thunk, outs = build_cpu_kernel("elementwise_add", {"X": x, "Y": b})
        small, small_outs = build_cpu_kernel("elementwise_add", {"X": x[:3], "Y": b})
    finally:
        numba.set_num_threads(old)
    thunk()
    small()
    np.testing.assert_array_equal(outs["Out"][0], x + b)
    np.testing.assert_array_equal(small_outs["Out"][0], x[:3] + b)
    assert (thunk.func is workshare.run_workers) == (threads > 1)
    assert len(thunk.args[1]) == threads if threads > 1 else thunk.args[-1] is cpu.SERIAL
    assert small.args[-1] is cpu.SERIAL
    assert small.func is (thunk.args[1][0].func if threads > 1 else thunk.func)  # one kernel


@pytest.mark.parametrize("full,target", [((1, 1), (1, 1)), ((4, 6), (4, 6)), ((4, 6), (1, 6)),
                                         ((4, 6), (4, 1)), ((2, 3, 5), (1, 3, 1)),
                                         ((3, 4), (1, 1))])
def test_sum_to_sums_or_copies_whatever_the_destination_held(full, target):
    from numbaflow.kernels.codegen.cpu import broadcast_strides, sum_to
    rng = np.random.default_rng(0)
    src = rng.standard_normal(full).astype(np.float32)
    out = np.full(target, np.nan, np.float32)           # garbage must never leak in
    shape, (sst, dst), _ = broadcast_strides([full, target], full)
    sum_to(src.reshape(-1), np.array(sst), np.array(shape), np.array(dst), out.reshape(-1),
           target != full)
    axes = tuple(d for d, (t, f) in enumerate(zip(target, full)) if t != f)
    np.testing.assert_allclose(out, src.sum(axis=axes, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("shape", [(5, 7), (1 << 20,)])     # serial and parallel kernels
def test_in_place_output_stores_through_the_input_slice_and_agrees(shape):
    """An output that is an input's buffer (memory reuse) gets the kernel variant that
    stores through that input's slice (LLVM vectorizes it; two overlapping slices made
    it fall back to scalar code) and computes what the out-of-place kernel computes."""
    from numbaflow.kernels import scalar as S

    def body(a, x, d):
        return d * (0.5 * (1.0 + S.erf(x / S.SQRT_2)) + x * S.exp(-0.5 * x * x) * S.INV_SQRT_2PI)
    outs = S.trace(body, {}, 2)
    k = cpu.ElementwiseKernel(outs, [shape, shape], [shape], shape, np.float32)
    rng = np.random.default_rng(0)
    x, d = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    want = np.empty_like(x)
    k.bind([x, d.copy()], [want])()
    in_place = d.copy()
    k.bind([x, in_place], [in_place])()
    np.testing.assert_array_equal(in_place, want)
    x64 = x.astype(np.float64)
    from scipy.special import erf
    ref = d * (0.5 * (1 + erf(x64 / np.sqrt(2))) + x64 * np.exp(-x64 * x64 / 2) / np.sqrt(2 * np.pi))
    np.testing.assert_allclose(want, ref, rtol=2e-6, atol=1e-6)   # erf32: 4e-7 absolute
    src = cpu.kernel_source(outs, 2, 1, (1, 1), "float32", aliases=(1,))
    assert "y0 = x1" in src and "out0[" not in src


def test_in_place_output_of_another_dtype_keeps_its_own_type():
    """A cast written over its input's bytes (same size, other dtype) must store through
    the output's own type, not through the input's slice."""
    from numbaflow.kernels import scalar as S
    outs = S.trace(lambda a, x: S.cast(x * 2.0, "int32"), {}, 1)
    k = cpu.ElementwiseKernel(outs, [(6,)], [(6,)], (6,), np.float32)
    buf = np.arange(6, dtype=np.float32)
    out = buf.view(np.int32)
    k.bind([buf], [out])()
    np.testing.assert_array_equal(out, np.arange(6) * 2)
