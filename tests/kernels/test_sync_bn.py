"""BuildStrategy.sync_batch_norm: the `sync_batch_norm` pass and the sync_batch_norm ops
(kernels/parallel/sync_bn.py). The central property: a conv + batch_norm + relu + fc net trained
on D local devices with batch B/D each equals one device with batch B (losses,
parameters, running statistics; rtol 1e-5), for even and uneven splits — and without
the pass it does not. The kernels' communicator path is also checked on its own, with a
stand-in communicator, on the CPU and on the simulated GPU."""

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph.verify import verify
from numbaflow.kernels import get_op_def, run_op
from numbaflow.kernels.registry import ConcreteOp, InferContext, VarInfo
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs, replicas
from simulator import run_sim

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

CIN, HW, NCLS = 2, 5, 3


def cnn():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, CIN, HW, HW], "float32")
        y = static.data("y", [None, 1], "int64")
        h = static.nn.conv2d(x, num_filters=4, filter_size=3, padding=1)
        h = static.nn.batch_norm(h, act="relu", momentum=0.8)
        loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, NCLS), y)
        paddle.optimizer.SGD(learning_rate=0.2).minimize(loss)
    return main, startup, loss


def batch(n, step):
    rng = np.random.default_rng(100 + step)
    # a shifted, scaled input: the per-device statistics differ visibly from the global ones
    return {"x": (rng.standard_normal((n, CIN, HW, HW)) * 2 + 1).astype(np.float32),
            "y": rng.integers(0, NCLS, (n, 1)).astype(np.int64)}


def persistables(main, scope):
    return {v.name: scope.get(v.name) for v in main.global_block().vars.values()
            if v.persistable and v.name in scope.local_var_names()}


def train_both(places, batch_size, sync, steps=3):
    """(merged per-device losses, whole-batch losses, D-device state, 1-device state)."""
    main, startup, loss = cnn()
    exe = static.Executor()
    s_par, s_one = static.Scope(), static.Scope()
    exe.run(startup, scope=s_par)
    for n in s_par.local_var_names():
        s_one.set(n, s_par.get(n))
    bs = static.BuildStrategy()
    bs.sync_batch_norm = sync            # the pipeline applies the sync_batch_norm pass
    compiled = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
        loss_name=loss.name, places=[paddle.CPUPlace()] * places)
    sizes = [len(r) for r in np.array_split(np.arange(batch_size), places)]
    par, one = [], []
    for step in range(steps):
        f = batch(batch_size, step)
        per_device, = exe.run(compiled, feed=f, fetch_list=[loss], scope=s_par)
        whole, = exe.run(main, feed=f, fetch_list=[loss], scope=s_one)
        assert per_device.shape == (places,)
        par.append(np.dot(per_device, sizes) / batch_size)
        one.append(float(whole))
    return compiled, np.array(par), np.array(one), persistables(main, s_par), \
        persistables(main, s_one)


# ---------------------------------------------------------------- the pass
def test_pass_renames_training_batch_norm_and_its_gradient():
    main, _, _ = cnn()
    before = [op.type for op in main.global_block().ops]
    g = static.Graph(main)
    assert g.apply_pass("sync_batch_norm") is True
    types = [op.type for op in g.program.global_block().ops]
    verify(g.program)
    assert types == [{"batch_norm": "sync_batch_norm",
                      "batch_norm_grad": "sync_batch_norm_grad"}.get(t, t) for t in before]
    assert "batch_norm" in before and "batch_norm_grad" in before
    assert [op.type for op in main.global_block().ops] == before    # the user's is untouched


def test_pass_leaves_running_statistics_batch_norm_alone_and_says_why():
    main, _, _ = cnn()
    g = static.Graph(main, for_test=True)           # is_test=True on batch_norm
    assert g.apply_pass("sync_batch_norm") is False
    assert [op.type for op in g.program.global_block().ops].count("batch_norm") == 1
    (what, why), = g.applied_passes[0].refusals
    assert "batch_norm" in what and "is_test" in why


# ---------------------------------------------------------------- the central property
@pytest.mark.parametrize("places,batch_size", [(2, 8), (3, 7)])
def test_sync_bn_on_d_devices_equals_one_device_on_the_whole_batch(places, batch_size):
    compiled, par, one, state_par, state_one = train_both(places, batch_size, sync=True)
    ops = {op.type for p in passed_programs(compiled) for op in p.global_block().ops}
    assert {"sync_batch_norm", "sync_batch_norm_grad", "c_allreduce_start", "c_allreduce_wait"} <= ops
    assert "batch_norm" not in ops
    np.testing.assert_allclose(par, one, rtol=1e-5)
    stats = [n for n in state_one if n.startswith("batch_norm") and n[-4:] in (".w_1", ".w_2")]
    assert len(stats) == 2, sorted(state_one)       # running mean and variance are compared
    assert set(state_par) == set(state_one)
    for n in state_one:
        np.testing.assert_allclose(state_par[n], state_one[n], rtol=1e-5, atol=1e-7, err_msg=n)


def test_without_sync_bn_d_devices_differ_from_one_device():
    _, par, one, state_par, state_one = train_both(2, 8, sync=False)
    mean = next(n for n in state_one if n.startswith("batch_norm") and n.endswith(".w_1"))
    assert not np.allclose(state_par[mean], state_one[mean], rtol=1e-3)
    assert not np.allclose(par[1:], one[1:], rtol=1e-5)


def test_running_statistics_stay_identical_on_every_device():
    compiled, *_ = train_both(3, 7, sync=True, steps=2)
    for name in ("batch_norm_0.w_1", "batch_norm_0.w_2"):
        values = [r.scope.get(name) for r in replicas(compiled)]
        for v in values[1:]:
            np.testing.assert_array_equal(v, values[0], err_msg=name)


# ---------------------------------------------------------------- the kernels' comm path
class AddComm:
    """Stands in for the other devices: allreduce_ adds, call by call, what they would
    contribute (given in numpy)."""

    def __init__(self, *others):
        self.others = list(others)

    def allreduce_(self, arrays, bucket=0):
        for a in arrays:
            a += self.others.pop(0)


def bind_with_comm(op, arrays, attrs, comm, device="cpu"):
    """Bind `op`'s kernel with `comm` as its communicator: (thunk, {slot: [outputs]})."""
    opdef = get_op_def(op)
    full = dict(opdef.attrs, **attrs)
    infos = {k: [VarInfo(a.shape, a.dtype)] for k, a in arrays.items()}
    oinfos = {k: [v] for k, v in opdef.infer(InferContext(op, full, infos)).items()}
    cop = ConcreteOp(op, full, infos, oinfos, comm)
    if device == "cpu":
        ins = {k: [a] for k, a in arrays.items()}
        outs = {k: [np.empty(v[0].shape, v[0].dtype)] for k, v in oinfos.items()}
        return opdef.cpu(cop)(ins, outs), outs
    from numba import cuda
    ins = {k: [cuda.to_device(a)] for k, a in arrays.items()}
    outs = {k: [cuda.device_array(v[0].shape, v[0].dtype)] for k, v in oinfos.items()}
    return opdef.gpu(cop)(ins, outs), outs


def split_case(dtype="float64"):
    """x (N, C, L) split into a first device's rows and the others'; the others'
    contributions to the forward and backward sums, from the whole-batch batch_norm."""
    rng = np.random.default_rng(5)
    N, C, L, first = 5, 3, 4, 2
    x = (rng.standard_normal((N, C, L)) * 3 + 2).astype(dtype)
    p = {"Scale": rng.uniform(0.5, 1.5, C), "Bias": rng.uniform(-1, 1, C),
         "Mean": rng.uniform(-1, 1, C), "Variance": rng.uniform(0.5, 2, C)}
    p = {k: v.astype(dtype) for k, v in p.items()}
    dy = rng.standard_normal(x.shape).astype(dtype)
    attrs = {"momentum": 0.7}
    whole = run_op("batch_norm", dict(p, X=x), attrs)
    grads = run_op("batch_norm_grad", {"X": x, "Scale": p["Scale"],
                                       "SavedMean": whole["SavedMean"],
                                       "SavedVariance": whole["SavedVariance"],
                                       "Y@GRAD": dy}, attrs)
    rest, dyr = x[first:].astype(np.float64), dy[first:].astype(np.float64)
    count = np.full(C, rest.shape[0] * L, np.float64)
    fwd_other = np.stack([rest.sum((0, 2)), (rest ** 2).sum((0, 2)), count])
    mu = whole["SavedMean"].astype(np.float64)[None, :, None]
    inv = whole["SavedVariance"].astype(np.float64)[None, :, None]
    bwd_other = np.stack([dyr.sum((0, 2)), (dyr * (rest - mu) * inv).sum((0, 2)), count])
    return x[:first], dy[:first], p, attrs, whole, grads, fwd_other, bwd_other


def check_first_device(run, dtype):
    x0, dy0, p, attrs, whole, grads, fwd_other, bwd_other = split_case(dtype)
    fwd = run("sync_batch_norm", dict(p, X=x0), attrs, AddComm(fwd_other))
    tol = {"rtol": 1e-5, "atol": 1e-6}
    np.testing.assert_allclose(fwd["Y"], whole["Y"][:len(x0)], **tol)
    for slot in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance"):
        np.testing.assert_allclose(fwd[slot], whole[slot], err_msg=slot, **tol)
    bwd = run("sync_batch_norm_grad", {"X": x0, "Scale": p["Scale"],
                                       "SavedMean": fwd["SavedMean"],
                                       "SavedVariance": fwd["SavedVariance"],
                                       "Y@GRAD": dy0}, attrs, AddComm(bwd_other))
    np.testing.assert_allclose(bwd["X@GRAD"], grads["X@GRAD"][:len(x0)], **tol)
    # the parameter gradients stay local: the data-parallel rewrite sums them
    local = run_op("batch_norm_grad", {"X": x0, "Scale": p["Scale"],
                                       "SavedMean": fwd["SavedMean"],
                                       "SavedVariance": fwd["SavedVariance"],
                                       "Y@GRAD": dy0}, attrs)
    for slot in ("Scale@GRAD", "Bias@GRAD"):
        np.testing.assert_allclose(bwd[slot], local[slot], err_msg=slot, **tol)
        assert not np.allclose(bwd[slot], grads[slot], rtol=1e-3)


def _run_cpu(op, arrays, attrs, comm):
    thunk, outs = bind_with_comm(op, arrays, attrs, comm)
    thunk()
    assert not comm.others, "every contribution was used"
    return {k: v[0] for k, v in outs.items()}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_kernels_reduce_through_the_communicator(dtype):
    check_first_device(_run_cpu, dtype)


def test_global_statistics_make_no_collective_call():
    x0, _, p, *_ = split_case()
    attrs = {"use_global_stats": True}
    comm = AddComm()                        # any call would fail: nothing to pop
    fwd = _run_cpu("sync_batch_norm", dict(p, X=x0), attrs, comm)
    np.testing.assert_array_equal(fwd["Y"], run_op("batch_norm", dict(p, X=x0), attrs)["Y"])


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_kernels_on_the_simulator():
    assert "gpu ok" in run_sim("sync_bn", timeout=300).stdout


def test_fewer_samples_than_devices_with_sync_bn_is_refused_not_a_hang():
    # forward only, batch_norm in training mode: B < D is allowed for a program without
    # backward, but the statistics exchange needs every device, so it is refused
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, CIN, HW, HW], "float32")
        out = paddle.mean(static.nn.batch_norm(static.nn.conv2d(x, 4, 3, padding=1)))
    exe = static.Executor()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    bs = static.BuildStrategy()
    bs.sync_batch_norm = True
    c = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
        places=[paddle.CPUPlace()] * 3)
    with pytest.raises(ValueError, match="smaller than the device count 3"):
        exe.run(c, feed={"x": batch(2, 0)["x"]}, fetch_list=[out], scope=scope)
    got, = exe.run(c, feed={"x": batch(3, 0)["x"]}, fetch_list=[out], scope=scope)
    assert got.shape == (3,)
