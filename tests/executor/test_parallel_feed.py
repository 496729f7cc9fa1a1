"""Data-parallel feed splitting, loss-gradient scales and fetch merging (SPEC §6 Feed,
Fetch, Loss gradient; PADDLE_SEMANTICS §1.3 and §3 items 1-7, 34-37 translated to the
[better] rules). Pure numpy: no kernel is compiled or run here."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.distributed.feed import (loss_grad_scales, merge_fetch, split_feed,
                                              split_sizes)
from numbaflow.distributed.modes import GradientScaleStrategy as GSS
from numbaflow.utils import unique_name

LOSS_GRAD = "mean_0.tmp_0@GRAD"


def _seed_net():
    """Paddle's seed net: X [None, 1] -> fc 10 -> mean -> SGD (training) and its test clone."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data(name="X", shape=[None, 1], dtype="float32")
        hidden = static.nn.fc(x=x, size=10)
        loss = paddle.mean(hidden)
        paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, main.clone(for_test=True), loss


MAIN, TEST, LOSS = _seed_net()
BLOCK, TEST_BLOCK = MAIN.global_block(), TEST.global_block()


def _two_inputs():
    prog = static.Program()
    with static.program_guard(prog, static.Program()), unique_name.guard():
        static.data(name="X", shape=[None, 3], dtype="float32")
        static.data(name="label", shape=[None, 1], dtype="int64")
    return prog.global_block()


def _x(batch, cols=1, dtype="float32"):
    return np.arange(batch * cols, dtype=dtype).reshape(batch, cols)


# ---------------------------------------------------------------- split_sizes

@pytest.mark.parametrize("batch, devices, sizes", [
    (3, 2, [2, 1]), (5, 2, [3, 2]), (10, 2, [5, 5]), (7, 4, [2, 2, 2, 1]),
    (5, 4, [2, 1, 1, 1]), (6, 4, [2, 2, 1, 1]), (9, 4, [3, 2, 2, 2]), (4, 4, [1, 1, 1, 1]),
    (8, 1, [8]), (1, 2, [1, 0]), (0, 3, [0, 0, 0])])
def test_split_sizes_examples(batch, devices, sizes):
    assert split_sizes(batch, devices) == sizes


def test_split_sizes_rejects_bad_arguments():
    with pytest.raises(ValueError, match="device count must be at least 1, got 0"):
        split_sizes(4, 0)
    with pytest.raises(ValueError, match="batch size must be >= 0, got -1"):
        split_sizes(-1, 2)


# ---------------------------------------------------------------- dict feed

@pytest.mark.parametrize("batch, devices, sizes", [
    (10, 2, [5, 5]), (3, 2, [2, 1]), (5, 2, [3, 2]), (7, 4, [2, 2, 2, 1]),
    # Paddle rejects 5, 6 and 9 rows on 4 devices ("number(3)"); SPEC accepts them
    (5, 4, [2, 1, 1, 1]), (6, 4, [2, 2, 1, 1]), (9, 4, [3, 2, 2, 2])])
def test_dict_feed_splits_into_contiguous_chunks_first_larger(batch, devices, sizes):
    x = _x(batch)
    feeds, got = split_feed(BLOCK, {"X": x}, devices, training=True)
    assert got == sizes
    assert [f["X"].shape for f in feeds] == [(s, 1) for s in sizes]
    np.testing.assert_array_equal(np.concatenate([f["X"] for f in feeds]), x)
    assert all(set(f) == {"X"} for f in feeds)


def test_dict_feed_chunks_are_views_not_copies():
    x = _x(10, 1)
    feeds, _ = split_feed(BLOCK, {"X": x}, 2, training=True)
    assert all(np.shares_memory(f["X"], x) for f in feeds)
    assert all(f["X"].flags.c_contiguous for f in feeds)


def test_dict_feed_non_contiguous_input_becomes_c_contiguous_with_same_values():
    x = np.asfortranarray(_x(6, 3))[:, :1]          # not C-contiguous
    feeds, sizes = split_feed(BLOCK, {"X": x}, 4, training=True)
    assert sizes == [2, 2, 1, 1]
    assert all(f["X"].flags.c_contiguous for f in feeds)
    np.testing.assert_array_equal(np.concatenate([f["X"] for f in feeds]), x)


def test_dict_feed_converts_lists_to_declared_dtype_and_accepts_variable_keys():
    x_var = BLOCK.vars["X"]
    feeds, sizes = split_feed(BLOCK, {x_var: [[1.0], [2.0], [3.0]]}, 2, training=True)
    assert sizes == [2, 1]
    assert feeds[0]["X"].dtype == np.float32
    np.testing.assert_array_equal(feeds[1]["X"], [[3.0]])


def test_batch_smaller_than_devices_in_training_names_batch_devices_and_fix():
    with pytest.raises(ValueError) as e:
        split_feed(BLOCK, {"X": _x(1)}, 2, training=True)
    msg = str(e.value)
    for part in ("'X'", "batch size 1", "device count 2", "at least 2 samples",
                 "drop the last incomplete batch", "drop_last=True", "fewer places"):
        assert part in msg, (part, msg)
    with pytest.raises(ValueError, match="batch size 3 .* device count 4"):
        split_feed(BLOCK, {"X": _x(3)}, 4, training=True)


def test_test_program_with_fewer_samples_than_devices_runs_on_first_devices():
    # PADDLE_SEMANTICS §3.6: test program, batch 1 on 2 places runs; merged loss (1,)
    feeds, sizes = split_feed(TEST_BLOCK, {"X": _x(1)}, 2, training=False)
    assert sizes == [1] and len(feeds) == 1
    feeds, sizes = split_feed(TEST_BLOCK, {"X": _x(3)}, 5, training=False)
    assert sizes == [1, 1, 1]
    np.testing.assert_array_equal([f["X"][0, 0] for f in feeds], [0, 1, 2])
    loss = merge_fetch([[np.float32(0.25)] for _ in feeds], True)[0]
    assert loss.shape == (3,)


@pytest.mark.parametrize("training", [True, False])
def test_empty_batch_is_refused(training):
    with pytest.raises(ValueError, match=r"'X' have a batch of 0 samples; feed at least"):
        split_feed(BLOCK, {"X": np.zeros((0, 1), "float32")}, 2, training=training)


def test_different_batch_sizes_name_each_variable_and_size():
    block = _two_inputs()
    feed = {"X": _x(10, 3), "label": np.zeros((8, 1), "int64")}
    with pytest.raises(ValueError, match=r"different batch sizes \('X': 10, 'label': 8\)"):
        split_feed(block, feed, 2, training=True)
    feeds, sizes = split_feed(block, {"X": _x(5, 3), "label": np.arange(5).reshape(5, 1)},
                              2, training=True)
    assert sizes == [3, 2]
    np.testing.assert_array_equal(feeds[1]["label"], [[3], [4]])


def test_persistable_fed_with_one_value_goes_to_every_device():
    # §3.37: learning_rate_0 with one value on 2 devices; it is not a batch
    lr = np.array([0.5], "float32")
    feeds, sizes = split_feed(BLOCK, {"X": _x(3), "learning_rate_0": lr}, 2, training=True)
    assert sizes == [2, 1]
    assert all(f["learning_rate_0"] is lr for f in feeds)
    feeds, sizes = split_feed(BLOCK, {"learning_rate_0": 0.25}, 3, training=True)
    assert sizes == [1, 1, 1]
    assert [f["learning_rate_0"].shape for f in feeds] == [(1,)] * 3
    assert all(f["learning_rate_0"][0] == np.float32(0.25) for f in feeds)


def test_persistable_parameter_fed_whole_is_not_split():
    w = np.ones((1, 10), "float32")
    feeds, _ = split_feed(BLOCK, {"X": _x(4), "fc_0.w_0": w}, 2, training=True)
    assert all(f["fc_0.w_0"] is w for f in feeds)


def test_no_feed_gives_each_device_an_empty_dict_and_even_weight():
    for feed in (None, {}):
        feeds, sizes = split_feed(BLOCK, feed, 3, training=True)
        assert feeds == [{}, {}, {}] and sizes == [1, 1, 1]
        np.testing.assert_allclose(loss_grad_scales(sizes, 3, GSS.CoeffNumDevice), [1 / 3] * 3)


def test_feed_of_wrong_type_and_bad_device_count():
    with pytest.raises(TypeError, match="dict .* or a list of one such dict per device"):
        split_feed(BLOCK, "X", 2, training=True)
    with pytest.raises(ValueError, match="device count must be at least 1"):
        split_feed(BLOCK, {"X": _x(2)}, 0, training=True)


# ---------------------------------------------------------------- per-device checks (§3.34)

def test_wrong_trailing_dim_quotes_the_per_device_shape():
    with pytest.raises(ValueError) as e:
        split_feed(BLOCK, {"X": _x(10, 2)}, 2, training=True)
    msg = str(e.value)
    assert "The fed Variable 'X' should have dimensions = 2, shape = (-1, 1)" in msg
    assert "but received fed shape (5, 2) on each device" in msg
    assert "batch of 10 is split over 2 devices as [5, 5]" in msg


def test_uneven_split_shape_error_names_the_device():
    with pytest.raises(ValueError, match=r"received fed shape \(2, 2\) on device 0 "
                                         r"\(the batch of 3 is split over 2 devices as \[2, 1\]\)"):
        split_feed(BLOCK, {"X": _x(3, 2)}, 2, training=True)


def test_wrong_rank_and_wrong_dtype():
    with pytest.raises(ValueError, match=r"received fed shape \(2,\) on each device .*"
                                         r"reshape it to rank 2"):
        split_feed(BLOCK, {"X": np.zeros(4, "float32")}, 2, training=True)
    with pytest.raises(ValueError, match="The data type of fed Variable 'X' must be "
                                         "'float32', but received 'float64'"):
        split_feed(BLOCK, {"X": _x(4, dtype="float64")}, 2, training=True)


def test_unknown_or_unconvertible_feed_uses_check_feed_messages():
    with pytest.raises(ValueError, match="the program has no variable 'Z'"):
        split_feed(BLOCK, {"Z": _x(2)}, 2, training=True)
    with pytest.raises(ValueError, match="feed 'X': cannot convert list to float32"):
        split_feed(BLOCK, {"X": [["a"], ["b"]]}, 2, training=True)


# ---------------------------------------------------------------- Customized loss@GRAD

def test_loss_grad_declared_shape_is_the_loss_shape():
    assert BLOCK.vars[LOSS_GRAD].shape == LOSS.shape == ()


@pytest.mark.parametrize("value", [[0.5, 0.5], [[0.5], [0.5]]])
def test_customized_loss_grad_gives_each_device_its_element(value):
    feed = {"X": _x(10), LOSS_GRAD: np.array(value, "float32")}
    feeds, sizes = split_feed(BLOCK, feed, 2, training=True, loss_grad_name=LOSS_GRAD)
    assert sizes == [5, 5]          # loss@GRAD is not a batch
    assert [f[LOSS_GRAD].shape for f in feeds] == [(), ()]
    assert [float(f[LOSS_GRAD]) for f in feeds] == [0.5, 0.5]


def test_customized_loss_grad_weights_one_device():
    feeds, _ = split_feed(BLOCK, {"X": _x(3), LOSS_GRAD: [1, 0]}, 2, training=True,
                          loss_grad_name=LOSS_GRAD)
    assert [float(f[LOSS_GRAD]) for f in feeds] == [1.0, 0.0]
    assert feeds[0][LOSS_GRAD].dtype == np.float32


@pytest.mark.parametrize("value", [np.array([0.5], "float32"), np.float32(0.5),
                                   np.zeros((2, 2), "float32"), np.zeros(3, "float32")])
def test_customized_loss_grad_of_another_shape_names_it_and_the_expected_shape(value):
    with pytest.raises(ValueError) as e:
        split_feed(BLOCK, {"X": _x(4), LOSS_GRAD: value}, 2, training=True,
                   loss_grad_name=LOSS_GRAD)
    msg = str(e.value)
    assert LOSS_GRAD in msg and "(2,)" in msg and str(tuple(np.shape(value))) in msg


def test_customized_loss_grad_missing_is_an_error():
    with pytest.raises(ValueError, match=f"feed '{LOSS_GRAD}' with shape \\(2,\\)"):
        split_feed(BLOCK, {"X": _x(4)}, 2, training=True, loss_grad_name=LOSS_GRAD)


def test_customized_loss_grad_on_one_device_accepts_any_single_value():
    for value in (0.5, [0.5], [[0.5]]):
        feeds, _ = split_feed(BLOCK, {"X": _x(2), LOSS_GRAD: value}, 1, training=True,
                              loss_grad_name=LOSS_GRAD)
        assert feeds[0][LOSS_GRAD].shape == () and float(feeds[0][LOSS_GRAD]) == 0.5


# ---------------------------------------------------------------- list feed (§3.36)

def test_list_feed_length_must_match_devices():
    with pytest.raises(ValueError) as e:
        split_feed(BLOCK, [{"X": _x(10)}], 2, training=True)
    msg = str(e.value)
    assert "The feed data number 1 does not match the device number 2" in msg
    assert "one dict per device" in msg and "drop_last=True" in msg


def test_list_feed_is_not_split_and_merges_back():
    a, b = _x(4), _x(6)
    feeds, sizes = split_feed(BLOCK, [{"X": a}, {"X": b}], 2, training=True)
    assert sizes == [4, 6]
    assert feeds[0]["X"] is a and feeds[1]["X"] is b
    hidden = [[np.ones((s, 10), "float32") * i] for i, s in enumerate(sizes)]
    merged, = merge_fetch(hidden, True)
    assert merged.shape == (10, 10)
    np.testing.assert_array_equal(merged[:4], 0)
    np.testing.assert_array_equal(merged[4:], 1)


def test_list_feed_errors_name_the_device():
    with pytest.raises(ValueError, match=r"received fed shape \(6, 2\) \[in the feed dict of "
                                         r"device 1\]"):
        split_feed(BLOCK, [{"X": _x(4)}, {"X": _x(6, 2)}], 2, training=True)
    with pytest.raises(TypeError, match="item 1 is a list"):
        split_feed(BLOCK, [{"X": _x(4)}, [_x(4)]], 2, training=True)
    block = _two_inputs()
    bad = {"X": _x(3, 3), "label": np.zeros((2, 1), "int64")}
    with pytest.raises(ValueError, match=r"'X': 3, 'label': 2.*device 0"):
        split_feed(block, [bad, bad], 2, training=True)


def test_list_feed_with_customized_loss_grad():
    feeds, sizes = split_feed(BLOCK, [{"X": _x(2), LOSS_GRAD: [0.25]},
                                      {"X": _x(3), LOSS_GRAD: np.float32(0.75)}],
                              2, training=True, loss_grad_name=LOSS_GRAD)
    assert sizes == [2, 3]
    assert [float(f[LOSS_GRAD]) for f in feeds] == [0.25, 0.75]
    with pytest.raises(ValueError, match=f"feed '{LOSS_GRAD}' in every dict .*device 1"):
        split_feed(BLOCK, [{"X": _x(2), LOSS_GRAD: 0.5}, {"X": _x(2)}], 2, training=True,
                   loss_grad_name=LOSS_GRAD)


# ---------------------------------------------------------------- loss_grad_scales

def test_loss_grad_scales():
    assert loss_grad_scales([5, 5], 10, GSS.CoeffNumDevice) == [0.5, 0.5]     # §3.7
    np.testing.assert_allclose(loss_grad_scales([2, 1, 1, 1], 5, GSS.CoeffNumDevice),
                               [0.4, 0.2, 0.2, 0.2])
    # rank 0 of 2 ranks: local chunks [3, 2] of a global batch of 10
    np.testing.assert_allclose(loss_grad_scales([3, 2], 10, GSS.CoeffNumDevice), [0.3, 0.2])
    assert loss_grad_scales([3, 2], 5, GSS.One) == [1.0, 1.0]
    assert loss_grad_scales([3, 2], 5, GSS.Customized) is None
    with pytest.raises(ValueError, match="global_batch 4 must be positive and at least the "
                                         "local batch 5"):
        loss_grad_scales([3, 2], 4, GSS.CoeffNumDevice)
    with pytest.raises(TypeError, match="must be a GradientScaleStrategy"):
        loss_grad_scales([3, 2], 5, "CoeffNumDevice")


# ---------------------------------------------------------------- merge_fetch (§3.1, 3.2, 3.7)

def test_merge_scalar_losses_stack_to_device_count():
    per_device = [[np.float32(-0.1), np.ones((5, 10), "float32")],
                  [np.float32(-0.2), np.zeros((5, 10), "float32")]]
    loss, hidden = merge_fetch(per_device, True)
    assert loss.shape == (2,) and loss.dtype == np.float32
    np.testing.assert_array_equal(loss, np.array([-0.1, -0.2], "float32"))
    assert hidden.shape == (10, 10)
    np.testing.assert_array_equal(hidden[:5], 1)
    loss_list, hidden_list = merge_fetch(per_device, False)
    assert [np.shape(v) for v in loss_list] == [(), ()]
    assert [v.shape for v in hidden_list] == [(5, 10), (5, 10)]


def test_merge_parameter_and_its_grad_and_loss_grad():
    w = np.arange(10, dtype="float32").reshape(1, 10)
    merged_w, merged_g, merged_lg = merge_fetch(
        [[w, w, np.array(0.5, "float32")], [w, w, np.array(0.5, "float32")]], True)
    assert merged_w.shape == (2, 10) and merged_g.shape == (2, 10)
    np.testing.assert_array_equal(merged_w, np.vstack([w, w]))
    np.testing.assert_array_equal(merged_lg, [0.5, 0.5])


def test_merge_one_element_per_device_values_like_old_paddle():
    merged, = merge_fetch([[np.array([1.0])], [np.array([2.0])]], True)
    assert merged.shape == (2,)


def test_merge_ragged_trailing_dims_advises_unmerged():
    per_device = [[np.zeros((2, 3))], [np.zeros((2, 4))]]
    with pytest.raises(ValueError, match=r"\[\(2, 3\), \(2, 4\)\] differ after axis 0.*"
                                         r"return_merged=False"):
        merge_fetch(per_device, True)
    with pytest.raises(ValueError, match="return_merged=False"):
        merge_fetch([[np.float32(1)], [np.zeros(2)]], True)
    a, = merge_fetch(per_device, False)
    assert [x.shape for x in a] == [(2, 3), (2, 4)]


def test_merge_rejects_inconsistent_device_results():
    with pytest.raises(ValueError, match="no device results"):
        merge_fetch([], True)
    with pytest.raises(ValueError, match=r"different numbers of fetches \[1, 2\]"):
        merge_fetch([[np.zeros(1)], [np.zeros(1), np.zeros(1)]], True)


def test_merge_with_no_fetches():
    assert merge_fetch([[], []], True) == [] and merge_fetch([[], []], False) == []


# ---------------------------------------------------------------- properties

@settings(max_examples=60, deadline=None)
@given(devices=st.integers(1, 5), extra=st.integers(0, 40), cols=st.integers(1, 3),
       data=st.data())
def test_split_round_trips_and_weights_average_exactly(devices, extra, cols, data):
    batch = devices + extra
    block = _BLOCKS.setdefault(cols, _data_block(cols))
    x = np.asarray(data.draw(st.lists(st.floats(-10, 10, width=32), min_size=batch * cols,
                                      max_size=batch * cols)), "float32").reshape(batch, cols)
    feeds, sizes = split_feed(block, {"X": x}, devices, training=True)
    assert len(feeds) == devices and sum(sizes) == batch
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)
    chunks = [f["X"] for f in feeds]
    assert [c.shape[0] for c in chunks] == sizes
    np.testing.assert_array_equal(np.concatenate(chunks), x)
    assert all(np.shares_memory(c, x) for c in chunks)
    # CoeffNumDevice: the weighted per-device mean losses sum to the whole-batch mean
    scales = loss_grad_scales(sizes, batch, GSS.CoeffNumDevice)
    weighted = sum(s * c.astype("float64").mean() for s, c in zip(scales, chunks))
    np.testing.assert_allclose(weighted, x.astype("float64").mean(), rtol=1e-9, atol=1e-9)
    merged, = merge_fetch([[c] for c in chunks], True)
    np.testing.assert_array_equal(merged, x)


_BLOCKS = {}


def _data_block(cols):
    prog = static.Program()
    with static.program_guard(prog, static.Program()), unique_name.guard():
        static.data(name="X", shape=[None, cols], dtype="float32")
    return prog.global_block()


def test_data_parallel_list_feeds_follow_the_executor_conversion_rules():
    # a fraction into an int variable, or strings, are refused as by Executor.run's check
    import numbaflow.static as static
    main = static.Program()
    with static.program_guard(main, static.Program()):
        static.data("ids", [None, 2], "int64")
        static.data("x", [None, 2], "float32")
    block = main.global_block()
    with pytest.raises(ValueError, match="'ids'.*1.7"):
        split_feed(block, {"ids": [[1.7, 2], [3, 4]]}, 2, False)
    with pytest.raises(ValueError, match="'x'.*not numbers"):
        split_feed(block, {"x": [["1", "2"], ["3", "4"]]}, 2, False)
    feeds, sizes = split_feed(block, {"ids": [[1, 2], [3, 4]]}, 2, False)
    assert sizes == [1, 1] and feeds[1]["ids"].dtype == np.int64
