"""conv2d at the API level: names, shapes (-1 batch), depthwise selection, activation
naming, parameter initialisation, errors, and a small CNN whose parameter gradients match
finite differences. (Each op's forward vs numpy and gradient vs finite differences: the
op table, tests/op_rows/conv.py.)"""

import numpy as np
import pytest
from op_rows.conv import conv_ref_np

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.kernels.nn import conv_im2col
from numbaflow.kernels import workshare
from numbaflow.kernels import run_op
from numbaflow.nn.functional_conv import conv2d, fluid_conv2d, static_conv2d
from numbaflow.utils import unique_name


pytestmark = pytest.mark.usefixtures("fresh_graph_state")   # tests/conftest.py


def build(fn):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        out = fn()
    return main, startup, out


def op_types(program):
    return [op.type for op in program.global_block().ops]


def run(main, feed, fetch, startup=None):
    exe = static.Executor(paddle.CPUPlace())
    if startup is not None:
        exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=fetch)


RNG = np.random.default_rng(5)


# ---------------------------------------------------------------- functional conv2d
def test_functional_conv2d_names_shapes_bias_and_values_for_any_batch():
    def net():
        x = static.data("x", [None, 3, 9, 8])
        w = static.data("w", [4, 3, 3, 3])
        b = static.data("b", [4])
        return x, w, conv2d(x, w, b, stride=2, padding=1)
    main, _, (_, _, y) = build(net)
    verify(main)
    assert op_types(main) == ["conv2d", "elementwise_add"]
    conv, add = main.global_block().ops
    assert conv.output("Output") == ["conv2d_0.tmp_0"] and y.name == "conv2d_0.tmp_1"
    assert add.attr("axis") == 1
    assert conv.attr("strides") == [2, 2] and conv.attr("paddings") == [1, 1, 1, 1]
    assert y.shape == (-1, 4, 5, 4)
    wv, bv = RNG.standard_normal((4, 3, 3, 3), "f4"), RNG.standard_normal(4, "f4")
    for batch in (1, 3):           # one program, two batch sizes
        xv = RNG.standard_normal((batch, 3, 9, 8), "f4")
        got, = run(main, {"x": xv, "w": wv, "b": bv}, [y])
        want = conv_ref_np(xv, wv, (2, 2), (1, 1), (1, 1), 1) + bv.reshape(1, 4, 1, 1)
        assert got.shape == (batch, 4, 5, 4)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c_in,c_out,groups,expected", [
    (4, 4, 4, "depthwise_conv2d"),
    (4, 8, 4, "depthwise_conv2d"),      # channel multiplier 2
    (4, 6, 2, "conv2d"),                # grouped, not depthwise
    (4, 6, 4, None),                    # 6 % 4 != 0: invalid for any conv
    (1, 3, 1, "conv2d"),                # one channel: Paddle keeps conv2d
])
def test_depthwise_selection(c_in, c_out, groups, expected):
    if c_out % groups:
        with pytest.raises(ValueError, match="groups=4 must divide"):
            build(lambda: conv2d(static.data("x", [2, c_in, 5, 5]),
                                 static.data("w", [c_out, c_in // groups, 3, 3]), groups=groups))
        return
    main, _, y = build(lambda: conv2d(static.data("x", [2, c_in, 5, 5]),
                                      static.data("w", [c_out, c_in // groups, 3, 3]),
                                      groups=groups, padding=1))
    assert op_types(main) == [expected]
    assert y.name == f"{expected}_0.tmp_0" and y.shape == (2, c_out, 5, 5)


def test_functional_padding_forms():
    def conv(padding, **kw):
        with unique_name.guard():
            _, _, y = build(lambda: conv2d(static.data("x", [1, 2, 7, 6]),
                                           static.data("w", [3, 2, 3, 3]), padding=padding, **kw))
        op = y.block.ops[0]
        return op.attr("paddings"), op.attr("dilations"), y.shape
    assert conv(1)[0] == [1, 1, 1, 1]
    assert conv([1, 2])[0] == [1, 1, 2, 2]
    assert conv([0, 1, 2, 0]) == ([0, 1, 2, 0], [1, 1], (1, 3, 6, 6))
    assert conv([[0, 0], [0, 0], [1, 0], [0, 2]])[0] == [1, 0, 0, 2]
    assert conv("VALID")[2] == (1, 3, 5, 4)
    # SAME: output ceil(size / stride); Paddle resets the dilation to 1
    assert conv("SAME", stride=2, dilation=2) == ([1, 1, 0, 1], [1, 1], (1, 3, 4, 3))
    with pytest.raises(ValueError, match="padding must be"):
        conv("FULL")
    with pytest.raises(ValueError, match="padding must be >= 0"):
        conv([-1, 0])


# ---------------------------------------------------------------- static.nn.conv2d
def test_static_conv2d_parameters_names_and_act():
    main, startup, y = build(lambda: static_conv2d(static.data("x", [None, 3, 8, 8]), 8, 3,
                                                   padding=1, act="relu"))
    verify(main)
    block = main.global_block()
    assert op_types(main) == ["conv2d", "elementwise_add", "relu"]
    assert block.var("conv2d_0.w_0").shape == (8, 3, 3, 3)
    assert block.var("conv2d_0.b_0").shape == (8,)
    assert [o.name for o in block.ops[0].output_vars()] == ["conv2d_0.tmp_0"]
    assert y.name == "conv2d_0.tmp_2" and y.shape == (-1, 8, 8, 8)
    assert {p.name for p in main.all_parameters()} == {"conv2d_0.w_0", "conv2d_0.b_0"}
    # Paddle's default weight init: Normal(0, sqrt(2 / (kh * kw * C_in))); bias zeros
    init = {op.output_vars()[0].name: op for op in startup.global_block().ops}
    assert init["conv2d_0.w_0"].type == "gaussian_random"
    assert init["conv2d_0.w_0"].attr("std") == pytest.approx((2.0 / 27) ** 0.5)
    assert init["conv2d_0.b_0"].type == "fill_constant"
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    w = static.global_scope().get("conv2d_0.w_0")
    assert abs(w.std() - (2.0 / 27) ** 0.5) < 0.1


def test_static_conv2d_without_bias_and_depthwise_naming():
    def net():
        x = static.data("x", [2, 4, 6, 6])
        a = static_conv2d(x, 4, 3, groups=4, padding=1, bias_attr=False, act="relu")
        b = static_conv2d(x, 6, [1, 3], groups=2, stride=[1, 2])
        return a, b
    main, _, (a, b) = build(net)
    verify(main)
    assert op_types(main) == ["depthwise_conv2d", "relu", "conv2d", "elementwise_add"]
    assert a.name == "depthwise_conv2d_0.tmp_1" and a.shape == (2, 4, 6, 6)
    assert main.global_block().var("depthwise_conv2d_0.w_0").shape == (4, 1, 3, 3)
    assert "depthwise_conv2d_0.b_0" not in main.global_block().vars
    assert main.global_block().var("conv2d_0.w_0").shape == (6, 2, 1, 3)
    assert b.shape == (2, 6, 6, 2)


def test_fluid_conv2d_matches_numpy():
    def net():
        x = paddle.fluid.layers.data("x", [2, 5, 5])
        return fluid_conv2d(x, 3, 3, stride=1, padding=[1, 0], act="sigmoid", use_cudnn=True)
    main, startup, y = build(net)
    assert op_types(main) == ["conv2d", "elementwise_add", "sigmoid"]
    assert y.shape == (-1, 3, 5, 3) and y.name == "conv2d_0.tmp_2"
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    static.global_scope().set("conv2d_0.b_0", np.array([0.1, -0.2, 0.3], "f4"))
    xv = RNG.standard_normal((2, 2, 5, 5), "f4")
    got, = exe.run(main, feed={"x": xv}, fetch_list=[y])
    w = static.global_scope().get("conv2d_0.w_0")
    bias = np.array([0.1, -0.2, 0.3]).reshape(3, 1, 1)
    pre = conv_ref_np(xv, w, (1, 1), (1, 0), (1, 1), 1) + bias
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-pre)), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("xs,ws,kw,match", [
    ((2, 3, 5, 5), (4, 2, 3, 3), {}, r"channel mismatch: x has 3 channels.*weight w"),
    ((2, 4, 5, 5), (6, 2, 3, 3), {"groups": 3}, "groups=3 must divide"),
    ((2, 3, 4, 4), (2, 3, 7, 3), {"padding": 1},
     r"kernel height 7 is larger than the padded input height 4 \+ 2 of Input x"),
    ((2, 3, 5, 5), (2, 3, 3, 3), {"stride": 0}, "stride must be >= 1"),
    ((2, 3, 5), (2, 3, 3, 3), {}, r"x x must be 4-D"),
])
def test_functional_errors_name_the_variables(xs, ws, kw, match):
    with pytest.raises(ValueError, match=match):
        build(lambda: conv2d(static.data("x", list(xs)), static.data("w", list(ws)), **kw))


def test_op_level_errors():
    x, w = np.zeros((1, 4, 5, 5), "f4"), np.zeros((3, 2, 3, 3), "f4")
    with pytest.raises(ValueError, match="groups=3 does not divide the 4 channels"):
        run_op("conv2d", {"Input": x, "Filter": w}, {"groups": 3})
    with pytest.raises(ValueError, match="groups=2 does not divide the 3 output channels"):
        run_op("conv2d", {"Input": x, "Filter": w}, {"groups": 2})
    with pytest.raises(ValueError, match="channel mismatch"):
        run_op("conv2d", {"Input": x, "Filter": np.zeros((4, 3, 3, 3), "f4")})
    with pytest.raises(ValueError, match="larger than the padded input width"):
        run_op("conv2d", {"Input": x, "Filter": np.zeros((2, 4, 1, 9), "f4")},
               {"paddings": [0, 0, 1, 2]})
    with pytest.raises(ValueError, match="paddings must be"):
        run_op("conv2d", {"Input": x, "Filter": np.zeros((2, 4, 3, 3), "f4")},
               {"paddings": [1, 1, 1]})
    with pytest.raises(ValueError, match="data_format 'NHWC' is not supported"):
        run_op("conv2d", {"Input": x, "Filter": np.zeros((2, 4, 3, 3), "f4")},
               {"data_format": "NHWC"})
    with pytest.raises(ValueError, match="depthwise conv needs groups == in_channels"):
        run_op("depthwise_conv2d", {"Input": x, "Filter": np.zeros((4, 1, 3, 3), "f4")},
               {"groups": 1})
    with pytest.raises(ValueError, match="same float dtype"):
        run_op("conv2d", {"Input": x, "Filter": np.zeros((2, 4, 3, 3), "f8")})


def test_unknown_batch_and_spatial_dims_infer_minus_one():
    def net():
        x = static.data("x", [None, 3, None, None])
        w = static.data("w", [6, 1, 3, 3])
        return conv2d(x, w, groups=3, padding=1)
    main, _, y = build(net)
    assert y.shape == (-1, 6, -1, -1) and op_types(main) == ["depthwise_conv2d"]
    xv, wv = RNG.standard_normal((2, 3, 4, 5), "f4"), RNG.standard_normal((6, 1, 3, 3), "f4")
    got, = run(main, {"x": xv, "w": wv}, [y])
    np.testing.assert_allclose(got, conv_ref_np(xv, wv, (1, 1), (1, 1), (1, 1), 3),
                               rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- parallel kernels
@pytest.mark.parametrize("attrs,ws", [
    ({"paddings": [1, 1]}, (16, 1, 3, 3)),                      # unrolled 3x3
    ({"paddings": [2, 1], "strides": [2, 1]}, (32, 1, 5, 3)),   # general path, multiplier 2
])
def test_depthwise_parallel_path_matches_reference(monkeypatch, attrs, ws):
    """Large enough for the multi-threaded kernels (per-thread buffers and dFilter partials)."""
    monkeypatch.setattr(workshare, "PARALLEL_MIN_WORK", 0)
    x = RNG.standard_normal((3, 16, 12, 11))
    w = RNG.standard_normal(ws)
    a = dict(attrs, groups=16, fuse_relu_before_depthwise_conv=True)
    out = run_op("depthwise_conv2d", {"Input": x, "Filter": w}, a)["Output"]
    want = conv_ref_np(x, w, a.get("strides", (1, 1)), a["paddings"], (1, 1), 16, True)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    d = RNG.standard_normal(out.shape)
    g = run_op("depthwise_conv2d_grad", {"Input": x, "Filter": w, "Output@GRAD": d}, a)
    # the serial kernels (checked against finite differences by the op table) agree
    monkeypatch.setattr(workshare, "PARALLEL_MIN_WORK", 1 << 60)
    g1 = run_op("depthwise_conv2d_grad", {"Input": x, "Filter": w, "Output@GRAD": d}, a)
    for k in ("Input@GRAD", "Filter@GRAD"):
        np.testing.assert_allclose(g[k], g1[k], rtol=1e-12, atol=1e-12)
    # dFilter by definition: sum over (n, oh, ow) of d * shifted relu(x)
    want_dw = np.zeros(w.shape)
    for idx in np.ndindex(w.shape):
        e = np.zeros(w.shape)
        e[idx] = 1
        want_dw[idx] = np.sum(d * conv_ref_np(x, e, a.get("strides", (1, 1)), a["paddings"],
                                              (1, 1), 16, True))
    np.testing.assert_allclose(g["Filter@GRAD"], want_dw, rtol=1e-10, atol=1e-10)
    assert np.all(g["Input@GRAD"][x <= 0] == 0)


@pytest.mark.parametrize("attrs,ws", [
    ({"paddings": [1, 1]}, (4, 3, 3, 3)),                                   # unit stride
    ({"paddings": [1, 2], "strides": [2, 1], "dilations": [1, 2], "groups": 3},
     (6, 1, 3, 3)),                                                         # strided, groups
    ({"paddings": [2, 0], "strides": [2, 2]}, (4, 3, 3, 2)),                # stride 2
    ({}, (5, 3, 1, 1)),                                                     # 1x1
])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("chunk", ["one sample", "several"])
def test_conv2d_split_over_threads_matches_reference_and_serial(monkeypatch, attrs, ws, fused,
                                                                 chunk):
    """conv2d (and fused_conv2d: + bias, relu) with its 5 samples split over 3 threads: the
    output equals numpy's convolution, and every gradient equals the serial kernels' (whose
    gradients the op table checks against finite differences); the bias gradient, summed
    from per-thread partials, equals the masked dOut's sum. Samples go through the GEMMs
    one at a time or several side by side (2 per chunk over 3 threads, all 5 serially)."""
    from numbaflow.kernels.nn import conv
    monkeypatch.setattr(conv, "CHUNK_ELEMS", 1 if chunk == "one sample" else 1 << 19)
    x = RNG.standard_normal((5, 3, 7, 6))
    w = RNG.standard_normal(ws)
    b = RNG.standard_normal(ws[0])
    a = dict({"strides": [1, 1], "dilations": [1, 1], "groups": 1}, **attrs)
    op, ins = "conv2d", {"Input": x, "Filter": w}
    if fused:
        op, ins, a = "fused_conv2d", dict(ins, Bias=b), dict(a, activation="relu")

    def forward_backward(threads):
        monkeypatch.setattr(conv_im2col, "parallel_threads", lambda work, units: threads)
        out = run_op(op, ins, a)["Output"]
        d = np.random.default_rng(1).standard_normal(out.shape)
        grad_ins = {"Input": x, "Filter": w, "Output@GRAD": d, **({"Output": out} if fused else {})}
        return out, d, run_op(op + "_grad", grad_ins, a)

    out, d, g = forward_backward(3)
    want = conv_ref_np(x, w, a["strides"], a["paddings"] if "paddings" in a else [0, 0],
                       a["dilations"], a["groups"])
    if fused:
        want = np.maximum(want + b[None, :, None, None], 0)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    out1, _, g1 = forward_backward(1)
    np.testing.assert_array_equal(out, out1)
    names = ["Input@GRAD", "Filter@GRAD"] + (["Bias@GRAD"] if fused else [])
    for k in names:
        np.testing.assert_allclose(g[k], g1[k], rtol=1e-12, atol=1e-12)
    if fused:
        np.testing.assert_allclose(g["Bias@GRAD"], (d * (out > 0)).sum(axis=(0, 2, 3)),
                                   rtol=1e-12)
    # and by finite differences: L = sum(d * out) along one random direction per input
    monkeypatch.setattr(conv_im2col, "parallel_threads", lambda work, units: 3)
    eps, rng = 1e-6, np.random.default_rng(2)
    for name, grad in (("Input", "Input@GRAD"), ("Filter", "Filter@GRAD")):
        v = rng.standard_normal(ins[name].shape)
        loss = [float(np.sum(d * run_op(op, dict(ins, **{name: ins[name] + s * eps * v}),
                                        a)["Output"])) for s in (1, -1)]
        assert (loss[0] - loss[1]) / (2 * eps) == pytest.approx(float(np.sum(g[grad] * v)),
                                                               rel=1e-6, abs=1e-6)


# ---------------------------------------------------------------- a small CNN
def test_small_cnn_parameter_gradients_match_finite_differences():
    """conv (bias, relu) -> depthwise conv (stride 2, bias) -> mean, float64."""
    def net():
        x = static.data("x", [2, 2, 6, 6], dtype="float64")
        h = static_conv2d(x, 3, 3, padding=1, act="relu")
        h = static_conv2d(h, 3, 3, stride=2, padding=1, groups=3)
        loss = paddle.mean(h * h)
        params = [p for p in x.block.program.all_parameters()]
        return loss, params, static.gradients([loss], params)
    main, startup, (loss, params, grads) = build(net)
    verify(main)
    types = op_types(main)
    assert {"conv2d_grad", "depthwise_conv2d_grad", "relu_grad"} <= set(types)
    assert [p.name for p in params] == ["conv2d_0.w_0", "conv2d_0.b_0", "depthwise_conv2d_0.w_0",
                                        "depthwise_conv2d_0.b_0"]
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    scope = static.global_scope()
    # move the biases off zero so relu's kink and the bias gradients are exercised
    for p in params:
        if p.name.endswith(".b_0"):
            scope.set(p.name, RNG.uniform(-0.3, 0.3, p.shape))
    feed = {"x": RNG.standard_normal((2, 2, 6, 6))}
    analytic = exe.run(main, feed=feed, fetch_list=grads)
    eps = 1e-6
    for p, got in zip(params, analytic):
        base = scope.get(p.name)
        num = np.empty(base.size)
        for i in range(base.size):
            vals = []
            for s in (eps, -eps):
                v = base.copy().reshape(-1)
                v[i] += s
                scope.set(p.name, v.reshape(base.shape))
                vals.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            num[i] = (vals[0] - vals[1]) / (2 * eps)
        scope.set(p.name, base)
        np.testing.assert_allclose(got, num.reshape(base.shape), rtol=1e-5, atol=1e-8,
                                   err_msg=p.name)
