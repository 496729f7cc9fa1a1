"""The rnn op over several threads: the recurrence split into blocks of batch rows and the
weight gradients into chunks of time steps (kernels/nn/rnn.py) give the numpy reference's
outputs (numbaflow.testing.rnn_reference) and one thread's gradients; float32 through the
vectorized gates (kernels/fastmath.py's tanh and sigmoid) stays within float32 rounding
of the float64 reference. The large products (the input projection, the weight gradients,
dx) forced over 2 and 3 GEMM workers at the op table's tiny sizes still equal the numpy
reference and central finite differences (tests/op_rows/rnn.py; GRU rows cover its
separate gradient of h' W_hh^T)."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.kernels.math import gemm_cpu
from numbaflow.kernels.nn import rnn as rnn_kernels
from numbaflow.nn.functional_rnn import rnn, rnn_parameters
from numbaflow.testing.op_test import check_grad, check_output
from numbaflow.testing.rnn_reference import rnn_reference
from op_rows import load_all

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

T, B, IN, H, L = 6, 5, 3, 4, 2


def _program(mode, dtype):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, T, IN], dtype)
        x.stop_gradient = False
        lens = static.data("lens", [None], "int64")
        n = 2 if mode == "LSTM" else 1
        states = [static.data(f"s{i}", [2 * L, None, H], dtype) for i in range(n)]
        ws = rnn_parameters(mode, IN, H, L, "bidirect", dtype, name="net")
        out, _ = rnn(x, ws, mode, H, L, "bidirect", initial_states=states, sequence_length=lens)
        cot = static.data("cot", [None, T, 2 * H], dtype)
        grads = static.gradients(paddle.sum(out * cot), [x] + ws + states)
    return main, startup, ws, out, grads


def _feed(mode, dtype, rng):
    n = 2 if mode == "LSTM" else 1
    feed = {"x": rng.uniform(-1, 1, (B, T, IN)), "lens": np.array([6, 2, 5, 0, 3]),
            "cot": rng.uniform(-1, 1, (B, T, 2 * H))}
    feed.update({f"s{i}": rng.uniform(-1, 1, (2 * L, B, H)) for i in range(n)})
    return {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in feed.items()}


def _reference(mode, feed, per_cell):
    """`per_cell`: the parameters as rnn_parameters lists them, (W_ih, W_hh, b_ih, b_hh)
    per layer and direction; the reference takes Paddle's WeightList (weights, then biases)."""
    weights = [w for k in range(0, len(per_cell), 4) for w in per_cell[k:k + 2]] + \
        [b for k in range(0, len(per_cell), 4) for b in per_cell[k + 2:k + 4]]
    states = [feed[f"s{i}"] for i in range(2 if mode == "LSTM" else 1)]
    out, _ = rnn_reference(feed["x"].transpose(1, 0, 2), states, weights, mode, H, L, True,
                           feed["lens"])
    return out.transpose(1, 0, 2)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_rows_and_steps_split_over_three_threads_equal_one_thread(monkeypatch, mode):
    main, startup, ws, out, grads = _program(mode, "float64")
    exe, scope = static.Executor(static.CPUPlace()), static.global_scope()
    exe.run(startup)
    rng = np.random.default_rng(7)
    for w in ws:
        scope.set(w.name, rng.uniform(-0.6, 0.6, w.shape))
    feed = _feed(mode, "float64", rng)
    runs = []
    for threads in (1, 3):     # 3 threads: row blocks of 2, 2, 1; steps in chunks of 2
        monkeypatch.setattr(rnn_kernels, "parallel_threads", lambda work, units: threads)
        monkeypatch.setattr(rnn_kernels, "gemm_threads", lambda m, n, k, b, t: threads)
        runs.append(exe.run(main, feed=feed, fetch_list=[out] + grads))
    weights = [np.asarray(scope.get(w.name)) for w in ws]
    want = _reference(mode, feed, weights)
    for got in runs:
        np.testing.assert_allclose(got[0], want, rtol=1e-10, atol=1e-12)
    for one, three in zip(runs[0][1:], runs[1][1:]):
        np.testing.assert_allclose(three, one, rtol=1e-12, atol=1e-13)
    assert not runs[0][1][3].any()          # the empty sequence's input gets no gradient


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_float32_gates_within_float32_rounding_of_the_float64_reference(mode):
    main, startup, ws, out, grads = _program(mode, "float32")
    exe, scope = static.Executor(static.CPUPlace()), static.global_scope()
    exe.run(startup)
    rng = np.random.default_rng(8)
    weights = [rng.uniform(-1.5, 1.5, w.shape).astype("float32") for w in ws]
    for w, v in zip(ws, weights):
        scope.set(w.name, v)
    feed = _feed(mode, "float32", rng)
    got = exe.run(main, feed=feed, fetch_list=[out])[0]
    want = _reference(mode, {k: v.astype(np.float64) if v.dtype.kind == "f" else v
                             for k, v in feed.items()}, [w.astype(np.float64) for w in weights])
    np.testing.assert_allclose(got, want, rtol=0, atol=3e-6)


CASES = [c for c in load_all() if c.op == "rnn" and c.id.endswith("-L2-bi-lens")
         and ("LSTM" in c.id or "GRU" in c.id)]


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rnn_products_over_workers_match_reference(monkeypatch, case, workers):
    monkeypatch.setattr(gemm_cpu, "gemm_threads", lambda m, n, k, batch, threads: workers)
    monkeypatch.setattr(gemm_cpu, "block_size", lambda dim, threads: 5)    # many blocks
    check_output(case, "float64")
    check_grad(case)


def test_the_rows_are_there():
    assert sorted(c.id for c in CASES) == ["rnn-GRU-L2-bi-lens", "rnn-LSTM-L2-bi-lens"]
