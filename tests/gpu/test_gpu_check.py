"""The GPU compile gate (numbaflow.gpu_check) and what it checks without a GPU: every
kernel compiles for sm_80 / sm_90 with numba-cuda's real compiler, every op with a GPU
kernel is traced, the hot loops meet their instruction targets, kernels are cached, and
a CUDAPlace runs on its own device."""
import os
import subprocess
import sys

import numpy as np
import pytest
from locations import ROOT
from simulator import run_sim


cuda_compiler = pytest.mark.skipif(
    os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", reason="compiles for a real GPU")


def _is_compiled_with_cuda():
    from numbaflow import is_compiled_with_cuda
    return is_compiled_with_cuda()


needs_toolkit = pytest.mark.skipif(not _is_compiled_with_cuda(),
                                   reason="numba-cuda[cu12] (the 'cuda' extra) not installed")


@pytest.mark.slow
@cuda_compiler
@needs_toolkit
def test_gate_compiles_every_kernel_for_sm80_and_sm90(tmp_path):
    """The gate itself, as CI runs it: 0 failures for both targets, PTX and SASS (ptxas,
    with every kernel's registers fitting the block it is launched with)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBAFLOW_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    r = subprocess.run([sys.executable, "-m", "numbaflow.gpu_check", "--cc", "8.0", "--cc",
                        "9.0", "--ptxas"], env=env, capture_output=True, text=True, timeout=1500)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    line = [ln for ln in out.splitlines() if ln.startswith("compiled ")][-1]
    n, m, k = (int(w) for w in np.array(line.replace(",", "").split())[[1, 4, 6]])
    assert k == 0 and n >= 300 and m >= 250, line


@cuda_compiler
@needs_toolkit
def test_trace_reaches_every_op_with_a_gpu_kernel():
    """An op registered later with a GPU kernel is traced through its op-table row: the
    trace covers every registered (non-collective) GPU op and meets no error."""
    from numbaflow import gpu_check
    from numbaflow.kernels import all_op_types, get_op_def
    from numbaflow.kernels.registry import COLLECTIVE
    launches, problems, untraced = gpu_check.trace_launches(ROOT / "tests")
    assert not problems and not untraced, (problems, untraced)
    sigs = gpu_check.signatures(launches)
    names = {gpu_check.kernel_name(k) for k in sigs}
    assert any("gemm" in n for n in names) and any("fill" in n for n in names)
    gpu_ops = {t for t in all_op_types() if get_op_def(t).gpu is not None
               and not get_op_def(t).has(COLLECTIVE)}
    assert len(gpu_ops) > 50


@cuda_compiler
@needs_toolkit
def test_every_kernel_is_cached_on_disk():
    """A second process loads compiled kernels from numba's cache: every launched kernel
    was declared cache=True (generated ones live in files, the others in the package)."""
    from numbaflow import gpu_check
    launches, _, _ = gpu_check.trace_launches(ROOT / "tests")
    from numbaflow.kernels.codegen.cache import cached_on_disk
    uncached = sorted({gpu_check.kernel_name(k) for k, _ in launches if not cached_on_disk(k)})
    assert not uncached, uncached


@cuda_compiler
@needs_toolkit
def test_a_kernel_that_does_not_compile_is_reported():
    """The defect the gate was built for (a shared-array shape computed inside the kernel,
    which the simulator accepts) fails the compile and is counted."""
    from numba import cuda, float32, types

    from numbaflow import gpu_check
    TL = 8

    @cuda.jit
    def bad(out):
        sh = cuda.shared.array((TL, TL + 1), float32)
        sh[0, 0] = 1.0
        out[0] = sh[0, 0]

    @cuda.jit
    def good(out):
        out[0] = 1.0

    sig = (types.Array(types.float32, 1, "C"),)
    failures = gpu_check.compile_all({bad: [sig], good: [sig]}, [(9, 0)], log=lambda m: None)
    assert len(failures) == 1 and "bad" in failures[0], failures


@pytest.mark.slow
@cuda_compiler
@needs_toolkit
def test_hot_loops_meet_the_instruction_targets():
    """From the compiled sm_90 PTX: the elementwise loop <= 25 instructions per element
    (same shape and last-axis broadcast), the GEMM >= 4 FMAs per shared-memory load."""
    from numbaflow import gpu_counts
    rows = dict(gpu_counts.hot_loop_report((9, 0), log=lambda m: None))
    for label, text in rows.items():
        if "per element" in text:
            assert float(text.split()[0]) <= 25, (label, text)
        else:
            fma_per_load = float(text.split("(")[1].split()[0])
            assert fma_per_load >= 4, (label, text)
            assert "0 bytes spilled" in text, (label, text)
    assert len(rows) == 5


@cuda_compiler
@needs_toolkit
def test_cuda_place_runs_on_its_device_and_checks_the_index(fresh_graph_state):
    """With two (traced) GPUs, CUDAPlace(1) allocates, launches and keeps its parameters
    on device 1; CUDAPlace(2) raises at construction naming the index."""
    import numbaflow as paddle
    import numbaflow.static as static
    from numbaflow import gpu_check
    launches = []
    with gpu_check.traced_device(launches, n_gpus=2) as state:
        with pytest.raises(RuntimeError, match="out of range"):
            paddle.CUDAPlace(2)
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", [None, 4])
            loss = paddle.mean(static.nn.fc(x, 3, activation="relu"))
            paddle.optimizer.SGD(0.1).minimize(loss)
        scope = static.Scope()
        exe = static.Executor(paddle.CUDAPlace(1))
        exe.run(startup, scope=scope)
        exe.run(main, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[loss], scope=scope)
        assert scope.device_id == 1
        scope.get("fc_0.w_0")        # a host read-back, in device 1's context
    assert len(launches) > 5 and set(state.launch_devices) == {1}
    assert not state.stack and not state.misplaced, state.misplaced


@cuda_compiler
@needs_toolkit
def test_data_parallel_over_two_gpus_keeps_each_replica_on_its_device(fresh_graph_state):
    """Two (traced) GPUs: each replica allocates, launches and is re-broadcast to (after a
    Scope.set on the user's scope) inside its own device's context; no array is touched
    while another device is current."""
    import numbaflow as paddle
    import numbaflow.static as static
    from numbaflow import gpu_check
    launches = []
    with gpu_check.traced_device(launches, n_gpus=2) as state:
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", [None, 4])
            y = static.data("y", [None, 1], "int64")
            loss = paddle.nn.functional.cross_entropy(static.nn.fc(x, 3), y)
            paddle.optimizer.SGD(0.1).minimize(loss)
        scope = static.Scope()
        exe = static.Executor(paddle.CUDAPlace(0))
        exe.run(startup, scope=scope)
        prog = static.CompiledProgram(main).with_data_parallel(
            loss_name=loss.name, places=[paddle.CUDAPlace(0), paddle.CUDAPlace(1)])
        feed = {"x": np.ones((4, 4), np.float32), "y": np.zeros((4, 1), np.int64)}
        exe.run(prog, feed=feed, fetch_list=[loss], scope=scope)
        scope.set("fc_0.b_0", np.full(3, 0.5, np.float32))     # re-broadcast next run
        exe.run(prog, feed=feed, fetch_list=[loss], scope=scope)
    assert set(state.launch_devices) == {0, 1}
    assert not state.misplaced, state.misplaced[:5]


def test_cuda_availability_is_reported():
    """is_compiled_with_cuda: the toolkit; cuda_available: a usable GPU. Without one,
    CUDAPlace(0) raises at construction and says what is missing."""
    import numbaflow as paddle
    from numbaflow.executor import place
    assert paddle.is_compiled_with_cuda() == (place._toolkit_problem() is None)
    if not paddle.cuda_available():
        with pytest.raises(RuntimeError, match="cannot be used: .*(driver|GPU|numba-cuda|NVVM|"
                                               "NVRTC|out of range)"):
            paddle.CUDAPlace(0)


@pytest.mark.slow
@pytest.mark.gpu
def test_simulator_has_one_device_and_cuda_place_1_raises():
    r = run_sim("cuda_places", timeout=300)
    assert "CUDAPlace(1) cannot be used: device index 1 is out of range" in r.stdout


def test_block_register_budget():
    """--ptxas rejects a kernel whose registers do not fit its largest block (allocated
    per warp in units of 256): 255 registers fit 256 threads only just, 256 do not fit
    257 threads."""
    from numbaflow.gpu_check import REGISTERS_PER_BLOCK, _block_registers
    assert _block_registers(255, 256) == REGISTERS_PER_BLOCK
    assert _block_registers(238, 256) == 61440
    assert _block_registers(32, 257) == 9 * 1024
    assert _block_registers(256, 257) > REGISTERS_PER_BLOCK


def _register_heavy_kernel(n=96):
    """A real kernel that needs far more than 64 registers per thread: n float64 values
    are loaded, summed, then each is divided by the sum and stored to another array (which
    may alias the first, so no value can be loaded again): all n stay live."""
    from numba import cuda
    src = "def heavy(a, b):\n    i = cuda.grid(1)\n" + \
        "".join(f"    v{k} = a[i, {k}]\n" for k in range(n)) + \
        f"    s = {' + '.join(f'v{k} * v{k}' for k in range(n))}\n" + \
        "".join(f"    b[i, {k}] = v{k} / s\n" for k in range(n))
    ns = {}
    exec(src, {"cuda": cuda}, ns)
    return cuda.jit(ns["heavy"])


@cuda_compiler
@needs_toolkit
def test_the_gate_rejects_a_kernel_over_its_register_limit():
    """compile_all with ptxas rejects a kernel whose registers per thread x the largest
    block it is launched with (gpu_trace records it) exceed a block's registers, and passes
    the same kernel launched with a small block: the decision, not only the arithmetic."""
    from numba import types

    from numbaflow import gpu_check
    sig = (types.Array(types.float64, 2, "C"),) * 2
    heavy = _register_heavy_kernel()
    regs = int(gpu_check.re.search(r"Used (\d+) registers", gpu_check.assemble(
        gpu_check.compile_ptx(heavy, sig, (9, 0)), (9, 0), verbose=True)).group(1))
    assert regs > 64, regs          # 64 x 1024 threads is exactly a block's 65536
    heavy.nf_block_threads = 1024
    failures = gpu_check.compile_all({heavy: [sig]}, [(9, 0)], use_ptxas=True,
                                     log=lambda m: None)
    assert len(failures) == 1 and "heavy" in failures[0] and \
        f"{regs} registers per thread x 1024 threads exceed" in failures[0], failures
    heavy.nf_block_threads = 32
    assert gpu_check.compile_all({heavy: [sig]}, [(9, 0)], use_ptxas=True,
                                 log=lambda m: None) == []


def test_fresh_seed_counter_restarts_the_op_seeds_and_restores_the_callers():
    # the trace builds its programs inside it: the same kernels whatever ran before, and
    # the caller's random stream unchanged afterwards
    from numbaflow.kernels.tensor import creation
    with creation.seed_guard(5):
        first = [creation.next_op_seed() for _ in range(3)]
        creation.set_global_seed(5)
        creation.next_op_seed()
        with creation.fresh_seed_counter():
            inside = [creation.next_op_seed() for _ in range(3)]
        assert inside == first
        assert creation.next_op_seed() == first[1]
