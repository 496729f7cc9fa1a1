"""Shape ops (reshape2, transpose2, concat, split, flatten_contiguous_range, squeeze2,
unsqueeze2), losses (softmax_with_cross_entropy, cross_entropy) and accuracy.

Forwards run one op through `run_op` against independent numpy references; shape
inference is checked through the user API with unknown (-1) batch dims; gradients run
through a real program (static.gradients + Executor) against central finite
differences in float64.
"""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph.verify import verify
from numbaflow.kernels import run_op

F = paddle.nn.functional
RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def new_programs():
    return static.program_guard(static.Program(), static.Program())


# ---------------------------------------------------------------- gradient harness
def check_grad(build, feeds, wrt, shapes=None, eps=1e-6, rtol=1e-5, atol=1e-7):
    """d/d(wrt) of sum_i sum(out_i * w_i), out_i = build(vars), vs central differences.

    feeds: {name: array} (float64 for differentiated inputs); shapes: {name: declared
    shape} to declare unknown (None) dims. Returns the analytic gradients by name.
    """
    shapes = shapes or {}
    main = static.Program()
    with static.program_guard(main, static.Program()):
        vs = {n: static.data(n, shapes.get(n, a.shape), str(a.dtype)) for n, a in feeds.items()}
        for n in wrt:
            vs[n].stop_gradient = False
        outs = build(vs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        ws = [static.data(f"w_{i}", o.shape, str(o.dtype)) for i, o in enumerate(outs)]
        terms = [paddle.sum(o * w) for o, w in zip(outs, ws)]
        loss = terms[0]
        for t in terms[1:]:
            loss = loss + t
        grads = static.gradients([loss], [vs[n] for n in wrt])
    verify(main)
    assert all(g is not None for g in grads), grads
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    out_vals = exe.run(main, feed=feeds, fetch_list=outs, scope=scope)
    feed = dict(feeds)
    feed.update({f"w_{i}": RNG.standard_normal(o.shape) for i, o in enumerate(out_vals)})
    *analytic, _ = exe.run(main, feed=feed, fetch_list=list(grads) + [loss], scope=scope)

    def f(name, x):
        return float(exe.run(main, feed=dict(feed, **{name: x}), fetch_list=[loss],
                             scope=scope)[0])
    result = {}
    for n, g in zip(wrt, analytic):
        x0 = feeds[n]
        assert g.shape == x0.shape and g.dtype == x0.dtype
        num = np.zeros_like(x0)
        for idx in np.ndindex(*x0.shape):
            xp, xm = x0.copy(), x0.copy()
            xp[idx] += eps
            xm[idx] -= eps
            num[idx] = (f(n, xp) - f(n, xm)) / (2 * eps)
        np.testing.assert_allclose(g, num, rtol=rtol, atol=atol, err_msg=f"d/d{n}")
        result[n] = g
    return result


def test_zero_d_inputs_through_executor():
    # run_op and a 0-D feed both turn 0-D into shape (1,) (np.ascontiguousarray does), so
    # the 0-D value is made inside the program
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = paddle.sum(static.data("x0", [1], "float64"))
        assert x.shape == ()
        outs = [paddle.reshape(x, [1, 1]), paddle.reshape(x, []), paddle.flatten(x),
                paddle.unsqueeze(x, [0, -1]), paddle.transpose(x, []), paddle.squeeze(x)]
    assert [o.shape for o in outs] == [(1, 1), (), (1,), (1, 1), (), ()]
    got = static.Executor(paddle.CPUPlace()).run(main, feed={"x0": np.array([2.5])},
                                                 fetch_list=outs)
    for g, o in zip(got, outs):
        assert g.shape == o.shape and g.reshape(-1)[0] == 2.5


# ---------------------------------------------------------------- reshape2
def np_reshape(x, shape):
    return x.reshape([x.shape[i] if d == 0 else d for i, d in enumerate(shape)])


@pytest.mark.parametrize("in_shape,shape", [
    ((2, 3, 4), [4, -1]), ((2, 3, 4), [0, 0, -1]), ((2, 3, 4), [-1]), ((2, 3, 4), [0, 12]),
    ((2, 3, 4), [1, 2, 1, 12]), ((6,), [2, -1, 1]), ((1,), []), ((0, 3), [-1, 3]),
])
def test_reshape_forward(in_shape, shape):
    x = rand(*in_shape)
    out = run_op("reshape2", {"X": x}, {"shape": shape})["Out"]
    np.testing.assert_array_equal(out, np_reshape(x, shape))
    assert not np.shares_memory(out, x)


@pytest.mark.parametrize("in_shape,shape,want", [
    ([None, 4, 6], [0, -1], (-1, 24)), ([None, 4, 6], [-1, 24], (-1, 24)),
    ([None, 4, 6], [-1, 2, 12], (-1, 2, 12)), ([None, 4, 6], [0, 4, 3, 2], (-1, 4, 3, 2)),
    ([None, 4, 6], [4, -1], (4, -1)), ([None, 4, 6], [0, 0, 0], (-1, 4, 6)),
    ([3, None], [-1], (-1,)), ([3, 4], [0, -1, 2], (3, 2, 2)),
])
def test_reshape_infer_unknown(in_shape, shape, want):
    with new_programs():
        x = static.data("x", in_shape)
        assert paddle.reshape(x, shape).shape == want


@pytest.mark.parametrize("shape,msg", [
    ([5, -1], "reshape2"), ([5, 5], "24"), ([0, 0, 0, 0], "position 3"), ([-2, 12], "-2"),
])
def test_reshape_errors_name_the_input(shape, msg):
    with new_programs():
        x = static.data("xin", [2, 3, 4])
        with pytest.raises(ValueError, match=msg) as e:
            paddle.reshape(x, shape)
        assert "xin" in str(e.value) and "(2, 3, 4)" in str(e.value)
    with pytest.raises(ValueError, match="-1"):
        with new_programs():
            paddle.reshape(static.data("x", [4]), [-1, -1])


def test_reshape_runtime_mismatch_is_value_error():
    with new_programs():
        main = static.default_main_program()
        x = static.data("x", [None, 6])
        y = paddle.reshape(x, [4, 3])      # only right for a batch of 2
        exe = static.Executor(paddle.CPUPlace())
        out, = exe.run(main, feed={"x": rand(2, 6, dtype=np.float32)}, fetch_list=[y])
        assert out.shape == (4, 3)
        with pytest.raises(ValueError, match="reshape2"):
            exe.run(main, feed={"x": rand(3, 6, dtype=np.float32)}, fetch_list=[y])


def test_reshape_grad():
    check_grad(lambda v: paddle.reshape(v["x"], [0, -1]), {"x": rand(2, 3, 2)}, ["x"],
               shapes={"x": [None, 3, 2]})
    check_grad(lambda v: paddle.reshape(v["x"] * v["x"], [3, 4]), {"x": rand(2, 6)}, ["x"])


# ---------------------------------------------------------------- transpose2
@pytest.mark.parametrize("in_shape,perm", [
    ((2, 3, 4), [2, 0, 1]), ((2, 3, 4), [-1, 0, -2]), ((5, 7), [1, 0]),
    ((2, 3, 4, 5), [0, 2, 3, 1]), ((4,), [0]),
])
def test_transpose_forward(in_shape, perm):
    x = rand(*in_shape)
    out = run_op("transpose2", {"X": x}, {"axis": perm})["Out"]
    np.testing.assert_array_equal(out, np.transpose(x, [p % max(x.ndim, 1) for p in perm]))
    assert out.flags.c_contiguous


def test_transpose_infer_and_errors():
    with new_programs():
        x = static.data("x", [None, 3, 4])
        assert paddle.transpose(x, [2, 0, 1]).shape == (4, -1, 3)
        with pytest.raises(ValueError, match="permutation"):
            paddle.transpose(x, [0, 1])
    with pytest.raises(ValueError, match="transpose2.*permutation.*xt"):
        with new_programs():
            block = static.default_main_program().global_block()
            xt = static.data("xt", [2, 3])
            out = block.create_var("o", (), xt.dtype)
            block.append_op("transpose2", {"X": xt}, {"Out": out}, {"axis": [0, 0]})


def test_transpose_grad():
    check_grad(lambda v: paddle.transpose(v["x"], [1, 2, 0]), {"x": rand(2, 3, 4)}, ["x"],
               shapes={"x": [None, 3, 4]})


# ---------------------------------------------------------------- concat
@pytest.mark.parametrize("shapes,axis", [
    ([(2, 3), (4, 3), (1, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1), ([(2, 3), (2, 1)], -1),
    ([(2, 3, 4), (2, 2, 4)], -2), ([(3,)], 0), ([(2, 0), (2, 3)], 1),
])
def test_concat_forward(shapes, axis):
    xs = [rand(*s) for s in shapes]
    out = run_op("concat", {"X": xs}, {"axis": axis})["Out"]
    np.testing.assert_array_equal(out, np.concatenate(xs, axis=axis))


def test_concat_infer_unknown_and_errors():
    with new_programs():
        a, b = static.data("a", [None, 3]), static.data("b", [None, 5])
        assert paddle.concat([a, b], axis=1).shape == (-1, 8)
        assert paddle.concat([a, static.data("c", [4, 3])], axis=0).shape == (-1, 3)
        assert paddle.concat([static.data("d", [2, 3]), static.data("e", [4, 3])]).shape == (6, 3)
        with pytest.raises(ValueError, match="concat.*dim 1.*'a'.*'b'"):
            paddle.concat([a, b], axis=0)
        with pytest.raises(ValueError, match="concat.*rank"):
            paddle.concat([a, static.data("r", [3])], axis=0)
        with pytest.raises(ValueError, match="concat.*dtype.*cast"):
            paddle.concat([a, static.data("i", [None, 3], "float64")], axis=1)
        with pytest.raises(ValueError, match="out of range"):
            paddle.concat([a, a], axis=2)


def test_concat_grad_some_inputs():
    # y needs no gradient: concat_grad still gets one output per input
    g = check_grad(lambda v: paddle.concat([v["x"], v["y"], v["z"] * 2.0], axis=-1),
                   {"x": rand(2, 3), "y": rand(2, 1), "z": rand(2, 2)}, ["x", "z"],
                   shapes={"x": [None, 3], "y": [None, 1], "z": [None, 2]})
    assert set(g) == {"x", "z"}
    check_grad(lambda v: paddle.concat([v["x"], v["x"]], axis=0), {"x": rand(2, 3)}, ["x"])


# ---------------------------------------------------------------- split
@pytest.mark.parametrize("shape,nos,axis", [
    ((6, 4), 3, 0), ((6, 4), 2, 1), ((2, 6, 3), [1, 2, 3], 1), ((2, 6, 3), [2, -1], -2),
    ((2, 5), [-1, 0, 5], 1), ((4, 3), 1, -1),
])
def test_split_forward(shape, nos, axis):
    x = rand(*shape)
    if isinstance(nos, int):
        attrs = {"num": nos, "sections": [], "axis": axis}
        want = np.split(x, nos, axis=axis)
    else:
        attrs = {"num": 0, "sections": nos, "axis": axis}
        secs = [x.shape[axis] - sum(s for s in nos if s != -1) if s == -1 else s for s in nos]
        want = np.split(x, np.cumsum(secs)[:-1], axis=axis)
    outs = run_op("split", {"X": x}, attrs)["Out"]
    assert len(outs) == len(want)
    for o, w in zip(outs, want):
        np.testing.assert_array_equal(o, w)


def test_split_infer_unknown_and_errors():
    with new_programs():
        x = static.data("xs", [None, 6])
        assert [o.shape for o in paddle.split(x, 3, axis=1)] == [(-1, 2)] * 3
        assert [o.shape for o in paddle.split(x, 2, axis=0)] == [(-1, 6)] * 2
        assert [o.shape for o in paddle.split(x, [2, -1], axis=0)] == [(2, 6), (-1, 6)]
        assert [o.shape for o in paddle.split(x, [1, -1], axis=-1)] == [(-1, 1), (-1, 5)]
        for nos, msg in ((4, "divisible"), ([2, 2], "add up"), ([4, 4, -1], "more than"),
                         ([-1, -1], "one -1")):
            with pytest.raises(ValueError, match=f"split.*{msg}.*xs") as e:
                paddle.split(x, nos, axis=1)
            assert "(-1, 6)" in str(e.value)


def test_split_grad_with_unused_outputs():
    # only the first and last outputs reach the loss: the middle one's gradient is zeros
    def build(v):
        a, _, c = paddle.split(v["x"], [1, 2, -1], axis=1)
        return [a, c * c]
    g = check_grad(build, {"x": rand(3, 5)}, ["x"], shapes={"x": [None, 5]})["x"]
    assert np.all(g[:, 1:3] == 0)
    check_grad(lambda v: paddle.split(v["x"], 2, axis=0), {"x": rand(4, 2)}, ["x"])


# ---------------------------------------------------------------- flatten
def np_flatten(x, start, stop):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start % x.ndim, stop % x.ndim
    return x.reshape(x.shape[:s] + (int(np.prod(x.shape[s:e + 1])),) + x.shape[e + 1:])


@pytest.mark.parametrize("shape,start,stop", [
    ((2, 3, 4, 5), 0, -1), ((2, 3, 4, 5), 1, 2), ((2, 3, 4, 5), -3, -1), ((2, 3, 4, 5), 2, 2),
    ((2, 3), 1, 1), ((4,), 0, 0),
])
def test_flatten_forward(shape, start, stop):
    x = rand(*shape)
    out = run_op("flatten_contiguous_range", {"X": x},
                 {"start_axis": start, "stop_axis": stop})["Out"]
    np.testing.assert_array_equal(out, np_flatten(x, start, stop))


def test_flatten_infer_and_errors():
    with new_programs():
        x = static.data("xf", [None, 3, 4, 5])
        assert paddle.flatten(x).shape == (-1,)
        assert paddle.flatten(x, 1).shape == (-1, 60)
        assert paddle.flatten(x, 1, 2).shape == (-1, 12, 5)
        with pytest.raises(ValueError, match="flatten_contiguous_range.*after.*xf"):
            paddle.flatten(x, 2, 1)
        with pytest.raises(ValueError, match="start_axis 4 is out of range.*xf"):
            paddle.flatten(x, 4)


def test_flatten_grad():
    check_grad(lambda v: paddle.flatten(v["x"], 1, 2), {"x": rand(2, 2, 3, 2)}, ["x"],
               shapes={"x": [None, 2, 3, 2]})


# ---------------------------------------------------------------- squeeze2 / unsqueeze2
def np_squeeze(x, axes):
    if not axes:
        return np.squeeze(x)
    norm = {a % x.ndim for a in axes}
    return np.squeeze(x, axis=tuple(a for a in norm if x.shape[a] == 1))


@pytest.mark.parametrize("shape,axes", [
    ((1, 3, 1, 4), []), ((1, 3, 1, 4), [0]), ((1, 3, 1, 4), [-2]), ((1, 3, 1, 4), [0, 2]),
    ((1, 3, 1, 4), [1]), ((1, 1), []), ((2, 3), []), ((1,), [-1]),
])
def test_squeeze_forward(shape, axes):
    x = rand(*shape)
    out = run_op("squeeze2", {"X": x}, {"axes": axes})["Out"]
    want = np_squeeze(x, axes)
    assert out.shape == want.shape
    np.testing.assert_array_equal(out, want)


def np_unsqueeze(x, axes):
    for a in axes:    # Paddle: each axis goes into the shape produced so far
        x = np.expand_dims(x, a)
    return x


@pytest.mark.parametrize("shape,axes", [
    ((3, 4), [0]), ((3, 4), [-1]), ((3, 4), [0, 2]), ((3, 4), [1, 1]), ((3, 4), [-1, -1]),
    ((3, 4), [2, 0]), ((3, 4), [-3]),
])
def test_unsqueeze_forward(shape, axes):
    x = rand(*shape)
    out = run_op("unsqueeze2", {"X": x}, {"axes": axes})["Out"]
    want = np_unsqueeze(x, axes)
    assert out.shape == want.shape
    np.testing.assert_array_equal(out, want)


def test_squeeze_unsqueeze_infer_and_errors():
    with new_programs():
        x = static.data("xq", [None, 1, 4])
        assert paddle.squeeze(x).shape == (-1, 4)          # unknown dims are not squeezed
        assert paddle.squeeze(x, 1).shape == (-1, 4)
        assert paddle.squeeze(x, [0, 1]).shape == (4,)     # Paddle: an asked-for -1 is squeezed
        assert paddle.squeeze(x, 2).shape == (-1, 1, 4)    # size != 1: kept, as Paddle
        assert paddle.unsqueeze(x, [0, -1]).shape == (1, -1, 1, 4, 1)
        with pytest.raises(ValueError, match="squeeze2.*axis 3 is out of range.*xq"):
            paddle.squeeze(x, 3)
        with pytest.raises(ValueError, match="unsqueeze2.*axis 5 is out of range.*xq"):
            paddle.unsqueeze(x, 5)


def test_squeeze_unsqueeze_grad():
    check_grad(lambda v: paddle.squeeze(v["x"], [1]), {"x": rand(3, 1, 2)}, ["x"],
               shapes={"x": [None, 1, 2]})
    check_grad(lambda v: paddle.unsqueeze(v["x"] * v["x"], [0, -1]), {"x": rand(3, 2)}, ["x"])


# ---------------------------------------------------------------- softmax_with_cross_entropy
def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def np_swce_hard(x, label, axis, ignore=-100):
    ls = np_log_softmax(x.astype(np.float64), axis)
    safe = np.where(label == ignore, 0, label)
    loss = -np.take_along_axis(ls, safe, axis=axis)
    return np.where(label == ignore, 0.0, loss)


def hard_labels(shape, axis, n, dtype=np.int64):
    lshape = list(shape)
    lshape[axis] = 1
    return RNG.integers(0, n, lshape).astype(dtype)


@pytest.mark.parametrize("shape,axis,dtype,ldtype", [
    ((4, 5), -1, np.float64, np.int64), ((4, 5), 1, np.float32, np.int32),
    ((2, 3, 4), 1, np.float64, np.int64), ((2, 3, 4), 0, np.float64, np.int64),
    ((3, 2, 6), -1, np.float32, np.int64), ((7,), 0, np.float64, np.int64),
])
def test_swce_hard_forward(shape, axis, dtype, ldtype):
    x = (rand(*shape) * 3).astype(dtype)
    lab = hard_labels(shape, axis, shape[axis], ldtype)
    r = run_op("softmax_with_cross_entropy", {"Logits": x, "Label": lab}, {"axis": axis})
    assert r["Loss"].shape == lab.shape and r["Loss"].dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(r["Loss"], np_swce_hard(x, lab, axis), rtol=tol, atol=tol)
    np.testing.assert_allclose(r["Softmax"], np.exp(np_log_softmax(x.astype(np.float64), axis)),
                               rtol=tol, atol=tol)


def test_swce_is_numerically_stable():
    x = np.array([[1000.0, 0.0, -1000.0], [-800.0, -800.0, -800.0]], np.float32)
    lab = np.array([[2], [1]])
    r = run_op("softmax_with_cross_entropy", {"Logits": x, "Label": lab})
    np.testing.assert_allclose(r["Loss"].ravel(), [2000.0, np.log(3.0)], rtol=1e-6)
    assert np.isfinite(r["Softmax"]).all()


@pytest.mark.parametrize("shape,axis", [((4, 5), -1), ((2, 3, 4), 1)])
def test_swce_soft_forward(shape, axis):
    x = rand(*shape)
    lab = np.abs(rand(*shape))        # not normalised on purpose
    r = run_op("softmax_with_cross_entropy", {"Logits": x, "Label": lab},
               {"soft_label": True, "axis": axis})
    want = -(lab * np_log_softmax(x, axis)).sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(r["Loss"], want, rtol=1e-12)


def test_swce_ignore_index_and_bad_label():
    x = rand(4, 3)
    lab = np.array([[0], [-1], [2], [-1]])
    r = run_op("softmax_with_cross_entropy", {"Logits": x, "Label": lab}, {"ignore_index": -1})
    np.testing.assert_allclose(r["Loss"], np_swce_hard(x, lab, -1, ignore=-1), rtol=1e-12)
    assert r["Loss"][1, 0] == 0 and r["Loss"][3, 0] == 0
    for bad in (3, -1, 100):
        with pytest.raises(ValueError, match=f"softmax_with_cross_entropy: label {bad} .*row 2"):
            run_op("softmax_with_cross_entropy",
                   {"Logits": x, "Label": np.array([[0], [1], [bad], [0]])})


def test_swce_bad_label_through_executor_names_op():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("logits", [None, 3], "float64")
        y = static.data("label", [None, 1], "int64")
        loss = F.softmax_with_cross_entropy(x, y)
    exe = static.Executor(paddle.CPUPlace())
    with pytest.raises(ValueError, match="op softmax_with_cross_entropy failed.*label.*"
                                         "label 5 .*outside \\[0, 3\\)"):
        exe.run(main, feed={"logits": rand(2, 3), "label": np.array([[0], [5]])},
                fetch_list=[loss])


def test_swce_infer_and_errors():
    with new_programs():
        x = static.data("lg", [None, 4, 5])
        y = static.data("lb", [None, 1, 5], "int64")
        loss, sm = F.softmax_with_cross_entropy(x, y, axis=1, return_softmax=True)
        assert loss.shape == (-1, 1, 5) and sm.shape == (-1, 4, 5)
        for bad_shape in ([None, 2, 5], [None, 1, 4]):
            with pytest.raises(ValueError, match="(?i)label b.* does not match .*lg"):
                F.softmax_with_cross_entropy(x, static.data(f"b{len(bad_shape)}{bad_shape[1]}",
                                                            bad_shape, "int64"), axis=1)
        with pytest.raises(ValueError, match="softmax_with_cross_entropy.*soft labels sl"):
            F.softmax_with_cross_entropy(x, static.data("sl", [None, 4, 5], "float64"),
                                         soft_label=True)
    # the op itself checks label dtypes too (the API checks first)
    with pytest.raises(ValueError, match="hard labels Label must be int64"):
        run_op("softmax_with_cross_entropy", {"Logits": rand(2, 3), "Label": rand(2, 1)})


def test_swce_grad_hard_soft_and_axis():
    lab = np.array([[1], [0], [2], [-100]])
    g = check_grad(lambda v: F.softmax_with_cross_entropy(v["x"], v["y"]),
                   {"x": rand(4, 3), "y": lab}, ["x"], shapes={"x": [None, 3], "y": [None, 1]})
    assert np.all(g["x"][3] == 0)                        # ignored row: no gradient
    check_grad(lambda v: F.softmax_with_cross_entropy(v["x"], v["y"], axis=1),
               {"x": rand(2, 3, 2), "y": hard_labels((2, 3, 2), 1, 3)}, ["x"])
    check_grad(lambda v: F.softmax_with_cross_entropy(v["x"], v["y"], soft_label=True),
               {"x": rand(3, 4), "y": np.abs(rand(3, 4))}, ["x"])
    check_grad(lambda v: F.softmax_with_cross_entropy(v["x"], v["y"], soft_label=True, axis=0),
               {"x": rand(3, 2), "y": np.abs(rand(3, 2))}, ["x"])


def test_swce_grad_through_softmax_output():
    def build(v):
        loss, sm = F.softmax_with_cross_entropy(v["x"], v["y"], return_softmax=True)
        return [loss, sm]
    check_grad(build, {"x": rand(3, 4), "y": hard_labels((3, 4), 1, 4)}, ["x"])
    check_grad(lambda v: F.softmax_with_cross_entropy(v["x"], v["y"], return_softmax=True)[1],
               {"x": rand(3, 4), "y": hard_labels((3, 4), 1, 4)}, ["x"])


# ---------------------------------------------------------------- cross_entropy (probabilities)
def probs(*shape):
    e = np.exp(rand(*shape))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)])
def test_cross_entropy_forward(shape):
    x = probs(*shape)
    lab = hard_labels(shape, -1, shape[-1])
    y = run_op("cross_entropy", {"X": x, "Label": lab})["Y"]
    np.testing.assert_allclose(y, -np.log(np.take_along_axis(x, lab, axis=-1)), rtol=1e-12)
    soft = probs(*shape)
    y = run_op("cross_entropy", {"X": x, "Label": soft}, {"soft_label": True})["Y"]
    np.testing.assert_allclose(y, -(soft * np.log(x)).sum(-1, keepdims=True), rtol=1e-12)


def test_cross_entropy_ignore_and_bad_label():
    x = probs(3, 4)
    y = run_op("cross_entropy", {"X": x, "Label": np.array([[1], [7], [0]])},
               {"ignore_index": 7})["Y"]
    np.testing.assert_allclose(y.ravel(), [-np.log(x[0, 1]), 0.0, -np.log(x[2, 0])])
    with pytest.raises(ValueError, match="cross_entropy: label 4 .*row 1.*outside \\[0, 4\\)"):
        run_op("cross_entropy", {"X": x, "Label": np.array([[1], [4], [0]])})


def test_cross_entropy_grad():
    g = check_grad(lambda v: F.cross_entropy(v["x"], v["y"], use_softmax=False,
                                             reduction="none", ignore_index=2),
                   {"x": probs(4, 3) + 0.1, "y": np.array([[0], [2], [1], [0]])}, ["x"],
                   shapes={"x": [None, 3], "y": [None, 1]})
    assert np.all(g["x"][1] == 0)
    check_grad(lambda v: F.cross_entropy(v["x"], v["y"], use_softmax=False, soft_label=True,
                                         reduction="none"),
               {"x": probs(2, 2, 3) + 0.1, "y": probs(2, 2, 3)}, ["x"])


# ---------------------------------------------------------------- F.cross_entropy reductions
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 1])
@pytest.mark.parametrize("label_rank", [1, 2])
def test_functional_cross_entropy(reduction, ignore_index, label_rank):
    x = rand(6, 4)
    lab = np.array([0, 1, 3, 1, 2, 3])
    main = static.Program()
    with static.program_guard(main, static.Program()):
        xv = static.data("x", [None, 4], "float64")
        yv = static.data("y", [None] * label_rank, "int64")
        xv.stop_gradient = False
        loss = F.cross_entropy(xv, yv, reduction=reduction, ignore_index=ignore_index)
        fetch = [loss]
        if reduction != "none":
            fetch += static.gradients([loss], [xv])
    feed_lab = lab if label_rank == 1 else lab[:, None]
    got = static.Executor(paddle.CPUPlace()).run(main, feed={"x": x, "y": feed_lab},
                                                 fetch_list=fetch)
    per = np_swce_hard(x, lab[:, None], -1, ignore_index)
    valid = lab != ignore_index
    want = {"none": per, "sum": per.sum(), "mean": per.sum() / valid.sum()}[reduction]
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    if reduction != "none":
        sm = np.exp(np_log_softmax(x, -1))
        dx = (sm - np.eye(4)[lab]) * valid[:, None]
        dx = dx / valid.sum() if reduction == "mean" else dx
        np.testing.assert_allclose(got[1], dx, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- accuracy
def np_accuracy(x, lab, k):
    top = np.argsort(-x, axis=1, kind="stable")[:, :k]
    return float(np.mean([l in t for l, t in zip(lab.ravel(), top)]))


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("lshape", [(20, 1), (20,)])
def test_accuracy_forward(k, lshape):
    x = rand(20, 5, dtype=np.float32)
    lab = RNG.integers(0, 5, lshape)
    r = run_op("accuracy", {"Out": x, "Label": lab}, {"k": k})
    assert r["Accuracy"].shape == () and r["Accuracy"].dtype == np.float32
    assert r["Correct"].dtype == np.int64 and r["Total"] == 20
    assert r["Accuracy"] == pytest.approx(np_accuracy(x, lab, k))
    assert r["Correct"] == round(np_accuracy(x, lab, k) * 20)


def test_accuracy_ties_and_bad_label():
    x = np.array([[0.5, 0.5, 0.0], [0.2, 0.4, 0.4], [0.1, 0.1, 0.1], [0.3, 0.6, 0.1]])
    lab = np.array([[1], [2], [0], [0]])
    r = run_op("accuracy", {"Out": x, "Label": lab}, {"k": 1})
    assert int(r["Correct"]) == 3 and r["Accuracy"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="accuracy: label 3 .*row 1"):
        run_op("accuracy", {"Out": x, "Label": np.array([0, 3, 0, 0])})


def test_metric_accuracy_through_executor():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        xv = static.data("x", [None, 4])
        yv = static.data("y", [None, 1], "int64")
        acc = paddle.metric.accuracy(F.softmax(xv), yv, k=2)
        assert acc.shape == () and acc.stop_gradient
        with pytest.raises(ValueError, match="accuracy.*k=5.*x"):
            paddle.metric.accuracy(xv, yv, k=5)
        with pytest.raises(ValueError, match="accuracy.*Label yy.*rows"):
            paddle.metric.accuracy(static.data("xx", [3, 4]), static.data("yy", [2, 1], "int64"))
    x = rand(8, 4, dtype=np.float32)
    lab = RNG.integers(0, 4, (8, 1))
    got, = static.Executor(paddle.CPUPlace()).run(main, feed={"x": x, "y": lab},
                                                  fetch_list=[acc])
    assert got.shape == () and got == pytest.approx(np_accuracy(x, lab, 2))
