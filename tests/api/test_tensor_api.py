"""The paddle.tensor names a transformer needs (numbaflow/tensor/), in Paddle's spelling:
each built into a program, run, and compared with numpy (forward) and with central finite
differences of the program itself (backward, float64).
"""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from tensor_check import check

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


rng = np.random.default_rng(0)


def u(*shape):
    return rng.uniform(-1, 1, shape)


def distinct(*shape):
    n = int(np.prod(shape))
    return (rng.permutation(n) - n / 2.0).reshape(shape) * 0.1


# ---------------------------------------------------------------- creation
def test_arange_is_exact_and_typed_like_paddle():
    out = check(lambda: paddle.arange(5), [], np.arange(5))
    assert out.dtype == np.int64
    big = 2 ** 53 + 1          # not representable in float64: counted in integers
    check(lambda: paddle.arange(big, big + 6, 2), [], np.arange(big, big + 6, 2))
    check(lambda: paddle.arange(0.0, 1.0, 0.25), [], np.arange(0, 1, 0.25, np.float32))
    check(lambda: paddle.arange(5, 0, -2, dtype="int32"), [], np.arange(5, 0, -2,
                                                                         dtype=np.int32))
    with pytest.raises(ValueError, match="step"):
        paddle.arange(0, 3, 0)
    with pytest.raises(TypeError, match="static graph"):
        paddle.arange(static.data("ar_n", [1], "int64"))


def test_linspace():
    check(lambda: paddle.linspace(-1.0, 2.0, 7, "float64"), [], np.linspace(-1, 2, 7))


def test_triu_tril_forward_and_grad():
    x = u(2, 3, 4)
    check(lambda a: paddle.triu(a, 1), [x], np.triu(x, 1))
    check(lambda a: paddle.tril(a, -1), [x], np.tril(x, -1))
    with pytest.raises(ValueError, match="2 dims"):
        paddle.triu(static.data("tri_v", [3]))


# ---------------------------------------------------------------- search
def test_where_broadcast_scalars_and_grad():
    c, x, y = rng.random((3, 1)) < 0.5, u(3, 4), u(4)
    check(lambda c_, a, b: paddle.where(c_, a, b), [c, x, y], np.where(c, x, y))
    check(lambda a: paddle.where(a > 0.0, a, 0.0), [x], np.where(x > 0, x, 0.0))
    check(lambda a: paddle.where(a < 0.2, 1.5, a), [x], np.where(x < 0.2, 1.5, x))
    with pytest.raises(TypeError, match="bool"):
        paddle.where(static.data("wh_f", [3]), static.data("wh_g", [3]), 0.0)
    with pytest.raises(NotImplementedError, match="static graph"):
        paddle.where(static.data("wh_b", [3], "bool"))


def test_masked_fill_builds_a_causal_mask():
    s = u(2, 4, 4)
    mask = np.triu(np.ones((4, 4)), 1) > 0.5
    check(lambda a: paddle.masked_fill(a, paddle.triu(paddle.ones([4, 4], "float64"), 1)
                                       > 0.5, -5.0),
          [s], np.where(mask, -5.0, s))


@pytest.mark.parametrize("axis,largest", [(None, True), (0, True), (-1, False), (1, False)])
def test_topk(axis, largest):
    x = distinct(4, 6)
    ax = -1 if axis is None else axis
    order = np.argsort(-x if largest else x, axis=ax, kind="stable")
    idx = np.take(order, range(3), axis=ax)
    vals, ind = check(lambda a: paddle.topk(a, 3, axis=axis, largest=largest), [x],
                      (np.take_along_axis(x, idx, ax), idx))
    assert ind.dtype == np.int64


def test_argsort_and_sort():
    x = distinct(3, 5)
    check(lambda a: paddle.argsort(a, axis=0, descending=True), [x],
          np.argsort(-x, axis=0, kind="stable"), grad=False)
    check(lambda a: paddle.sort(a), [x], np.sort(x))
    ties = np.array([[2, 1, 2, 1, 3]], np.int64)
    check(lambda a: paddle.argsort(a, descending=True), [ties], np.array([[4, 0, 2, 1, 3]]))


def test_comparisons():
    x, y = u(3, 4), u(4)
    check(lambda a, b: paddle.greater_equal(a, b), [x, y], x >= y, grad=False)
    check(lambda a, b: paddle.equal(a, b), [x, x], np.ones((3, 4), bool), grad=False)
    check(lambda a: a <= 0.25, [x], x <= 0.25, grad=False)


# ---------------------------------------------------------------- math
def test_cumsum_exact_ints_and_grad():
    x = u(3, 4)
    check(lambda a: paddle.cumsum(a, axis=1), [x], np.cumsum(x, 1))
    check(lambda a: paddle.cumsum(a), [x], np.cumsum(x))
    ints = rng.integers(2 ** 50, 2 ** 51, (3, 5))
    check(lambda a: paddle.cumsum(a, axis=0), [ints], np.cumsum(ints, 0))


def test_rsqrt_erf():
    from scipy.special import erf
    x = rng.uniform(0.3, 2.0, (3, 4))
    check(lambda a: paddle.rsqrt(a), [x], 1 / np.sqrt(x))
    check(lambda a: paddle.erf(a), [x - 1.0], erf(x - 1.0))


# ---------------------------------------------------------------- manipulation
def test_expand_expand_as_stack_tile():
    x = u(3, 1)
    check(lambda a: paddle.expand(a, [2, 3, 4]), [x], np.broadcast_to(x, (2, 3, 4)))
    check(lambda a, b: paddle.expand_as(a, b), [x, u(3, 5)], np.broadcast_to(x, (3, 5)))
    a_, b_ = u(2, 3), u(2, 3)
    check(lambda a, b: paddle.stack([a, b], axis=1), [a_, b_], np.stack([a_, b_], 1))
    check(lambda a: paddle.tile(a, [2, 3]), [a_], np.tile(a_, (2, 3)))
    check(lambda a: paddle.tile(a, [2, 1, 2]), [a_], np.tile(a_, (2, 1, 2)))


def test_expand_keeps_an_unknown_batch_dim():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 1, 3], "float64")
        y = paddle.expand(x, [-1, 4, 3])
        assert y.shape == (-1, 4, 3)
    xv = u(5, 1, 3)
    got, = static.Executor(paddle.CPUPlace()).run(main, feed={"x": xv}, fetch_list=[y])
    np.testing.assert_array_equal(got, np.broadcast_to(xv, (5, 4, 3)))


def test_gather_and_take_along_axis():
    x = u(5, 3)
    idx = np.array([4, 0, 4, -1])
    check(lambda a, i: paddle.gather(a, i), [x, idx], np.take(x, idx, 0))
    check(lambda a, i: paddle.gather(a, i, axis=1), [x, np.array([2, 0])],
          np.take(x, [2, 0], 1))
    ti = rng.integers(0, 3, (5, 2))
    check(lambda a, i: paddle.take_along_axis(a, i, 1), [x, ti],
          np.take_along_axis(x, ti, 1))
    # broadcast: one row of indices for every row of x
    check(lambda a, i: paddle.take_along_axis(a, i, 1), [x, ti[:1]],
          np.take_along_axis(x, np.broadcast_to(ti[:1], (5, 2)), 1))


def test_gather_index_out_of_range_raises_at_run():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [4, 2])
        i = static.data("i", [2], "int64")
        y = paddle.gather(x, i)
    with pytest.raises(Exception, match="outside"):
        static.Executor(paddle.CPUPlace()).run(
            main, feed={"x": np.ones((4, 2), "float32"), "i": np.array([1, 4])},
            fetch_list=[y])


# ---------------------------------------------------------------- linalg
def test_bmm():
    a, b = u(2, 3, 4), u(2, 4, 5)
    check(lambda x, y: paddle.bmm(x, y), [a, b], a @ b)


@pytest.mark.parametrize("eq,shapes", [
    ("bqd,bkd->bqk", [(2, 3, 4), (2, 5, 4)]),
    ("ij,jk", [(3, 4), (4, 2)]),
    ("bhqk,bkhd->bqhd", [(2, 2, 3, 4), (2, 4, 2, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("i,i->", [(4,), (4,)]),
    ("ab,c->abc", [(2, 3), (4,)]),
])
def test_einsum(eq, shapes):
    arrays = [u(*s) for s in shapes]
    check(lambda *xs: paddle.einsum(eq, *xs), arrays, np.einsum(eq, *arrays))


def test_einsum_refuses_what_it_cannot_do():
    x = static.data("ein_x", [3, 3])
    with pytest.raises(NotImplementedError, match="diagonal"):
        paddle.einsum("ii->i", x)
    with pytest.raises(NotImplementedError, match="pairwise"):
        paddle.einsum("ij,jk,kl", x, x, x)


# ---------------------------------------------------------------- random
def test_random_creation_shapes_and_moments():
    paddle.seed(7)
    main = static.Program()
    with static.program_guard(main, static.Program()):
        outs = [paddle.randn([200, 100]), paddle.rand([200, 100], "float64"),
                paddle.uniform([200, 100], min=2.0, max=4.0), paddle.normal(1.0, 3.0,
                                                                           [200, 100])]
    r = static.Executor(paddle.CPUPlace()).run(main, fetch_list=outs)
    for a, (mean, std, dt) in zip(r, [(0, 1, "float32"), (0.5, 12 ** -0.5, "float64"),
                                      (3.0, 2 / 12 ** 0.5, "float32"), (1.0, 3.0, "float32")]):
        assert a.shape == (200, 100) and a.dtype == dt
        assert abs(a.mean() - mean) < 5 * std / 100 and abs(a.std() / std - 1) < 0.03


def _sampler(probs, n, replacement, seed):
    paddle.seed(seed)
    main = static.Program()
    with static.program_guard(main, static.Program()):
        p = static.data("p", list(probs.shape), "float32")
        s = paddle.multinomial(p, n, replacement)
    return main, s


def test_multinomial_frequencies_follow_the_weights():
    probs = np.array([[1.0, 2.0, 0.0, 7.0], [5.0, 0.0, 5.0, 0.0]], np.float32)
    main, s = _sampler(probs, 4000, True, 3)
    got, = static.Executor(paddle.CPUPlace()).run(main, feed={"p": probs}, fetch_list=[s])
    assert got.shape == (2, 4000) and got.dtype == np.int64
    for row, p in zip(got, probs):
        freq = np.bincount(row, minlength=4) / row.size
        np.testing.assert_allclose(freq, p / p.sum(), atol=0.03)
    # without replacement: every category once when all are asked for
    main, s = _sampler(probs[:1] + 1, 4, False, 3)
    got, = static.Executor(paddle.CPUPlace()).run(main, feed={"p": probs[:1] + 1},
                                                  fetch_list=[s])
    assert sorted(got[0]) == [0, 1, 2, 3]


def test_multinomial_is_reproducible_per_seed_and_advances_per_run():
    probs = np.full((1, 50), 1.0, np.float32)

    def two_runs(seed):
        main, s = _sampler(probs, 5, True, seed)
        exe = static.Executor(paddle.CPUPlace())
        return [exe.run(main, feed={"p": probs}, fetch_list=[s])[0] for _ in range(2)]
    a, b = two_runs(11), two_runs(11)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], a[1])          # each run draws anew


def test_multinomial_rejects_bad_weights():
    main, s = _sampler(np.ones((1, 3), np.float32), 1, True, 1)
    with pytest.raises(Exception, match="negative"):
        static.Executor(paddle.CPUPlace()).run(
            main, feed={"p": np.array([[1.0, -1.0, 0.5]], np.float32)}, fetch_list=[s])
    with pytest.raises(ValueError, match="replacement=True"):
        paddle.multinomial(static.data("mn_q", [2, 3]), 4)
