"""Loaders as strict as feeds, and typed argument errors (issue 17 items 5 and 6).

Each error must name what was given, what was expected, and the fix; references are the
values themselves (numpy's own cast for `lossy_cast=True`)."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow import fluid

pytestmark = pytest.mark.usefixtures("fresh_graph_state", "programs")


@pytest.fixture
def programs():
    with static.program_guard(static.Program(), static.Program()):
        yield


def feed_vars():
    with static.program_guard(static.Program(), static.Program()):
        return static.data("x", [None, 2], "float32"), static.data("y", [None, 1], "int64")


class Samples(paddle.io.Dataset):
    def __init__(self, samples):
        self.samples = samples

    def __getitem__(self, i):
        return self.samples[i]

    def __len__(self):
        return len(self.samples)


def loader_feeds(samples, **kw):
    x, y = feed_vars()
    loader = paddle.io.DataLoader(Samples(samples), feed_list=[x, y], batch_size=len(samples),
                                  return_list=False, use_buffer_reader=False, **kw)
    return list(loader())


def feeder_feed(samples, **kw):
    x, y = feed_vars()
    return fluid.DataFeeder([x, y], fluid.CPUPlace(), **kw).feed(samples)


GOOD = (np.ones(2, "float32"), 1)


# ----------------------------------------------------------------------------- values
@pytest.mark.parametrize("feed", [loader_feeds, feeder_feed])
@pytest.mark.parametrize("bad, var, shown", [
    ((np.ones(2), 1.7), "y", "1.7"),                       # a fraction into int64
    ((np.ones(2), float("nan")), "y", "nan"),              # NaN into int64 (INT64_MIN before)
    ((np.array([1e300, 0.0]), 1), "x", "1e+300"),          # overflows float32 to inf
    ((np.ones(2), 1e19), "y", "1e+19"),                    # beyond int64
])
def test_a_value_the_dtype_cannot_hold_raises_naming_variable_sample_and_value(feed, bad, var,
                                                                               shown):
    with pytest.raises(ValueError) as e:
        feed([GOOD, GOOD, bad])
    msg = str(e.value)
    assert f"sample #2 of {var!r}" in msg and shown in msg and "lossy_cast=True" in msg, msg
    assert ("batch #0" in msg) == (feed is loader_feeds), msg


@pytest.mark.parametrize("feed", [loader_feeds, feeder_feed])
def test_lossy_cast_opts_in_to_numpys_cast_and_rounding_stays_allowed(feed):
    got = feed([(np.ones(2), 1.7), (np.array([0.1, 1e300]), 2)], lossy_cast=True)
    got = got[0] if isinstance(got, list) else got
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got["x"], np.array([[1, 1], [0.1, 1e300]]).astype("f4"))
    np.testing.assert_array_equal(got["y"], np.array([[1], [2]]))      # 1.7 truncated
    # float64 -> float32 rounding is not a loss the rules refuse
    exact = feed([(np.array([0.1, 0.2]), 3)])
    exact = exact[0] if isinstance(exact, list) else exact
    np.testing.assert_array_equal(exact["x"], np.array([[0.1, 0.2]], "float32"))


# ----------------------------------------------------------------------------- malformed samples
@pytest.mark.parametrize("feed", [loader_feeds, feeder_feed])
@pytest.mark.parametrize("bad, error, words", [
    ((np.ones(2),), ValueError, ["sample #1", "1 field", "2"]),           # short
    ("ab", TypeError, ["sample #1", "str", "'ab'"]),                       # a string
    (None, TypeError, ["sample #1", "None"]),
])
def test_malformed_samples_name_the_sample_and_what_was_expected(feed, bad, error, words):
    with pytest.raises(error) as e:
        feed([GOOD, bad])
    for w in words:
        assert w in str(e.value), str(e.value)
    assert "expected" in str(e.value) or "sample #0 has" in str(e.value)


def test_none_inside_a_field_names_the_sample_and_the_field():
    with pytest.raises(TypeError, match=r"sample #1 of the batch, field #1 is NoneType"):
        loader_feeds([GOOD, (np.ones(2), None)])
    with pytest.raises(ValueError, match=r"feed 'y'.*sample #1 holds NoneType None"):
        feeder_feed([GOOD, (np.ones(2), None)])


def test_a_dict_sample_without_a_fed_key_names_sample_and_key():
    with pytest.raises(ValueError, match=r"sample #0 is a dict without the key 'y'"):
        feeder_feed([{"x": np.ones(2)}])
    with pytest.raises(ValueError, match=r"without the fed variable 'y'"):
        loader_feeds([{"x": np.ones(2, "float32")}])
    with pytest.raises(ValueError, match=r"sample #1 of the batch has no key 'y'"):
        loader_feeds([{"x": np.ones(2, "float32"), "y": 1}, {"x": np.ones(2, "float32")}])
    got = feeder_feed([{"y": 4, "x": np.ones(2)}])          # dict samples are fine
    assert got["y"].tolist() == [[4]]


def test_a_dataset_without_len_is_a_type_error_at_construction():
    class NoLen(paddle.io.Dataset):
        def __getitem__(self, i):
            return GOOD

    class Plain:                       # not a Dataset at all
        def __getitem__(self, i):
            return GOOD
    for ds in (NoLen(), Plain()):
        with pytest.raises(TypeError, match="needs __len__.*IterableDataset"):
            paddle.io.DataLoader(ds, batch_size=2)


def test_an_int64_min_label_is_a_value_error_naming_it_not_memory_error():
    x = static.data("x", [None, 3], "float32")
    y = static.data("y", [None, 1], "int64")
    loss = paddle.nn.functional.softmax_with_cross_entropy(x, y)
    exe = static.Executor(paddle.CPUPlace())
    bad = np.array([[0], [np.iinfo(np.int64).min]])
    with pytest.raises(ValueError, match="label -9223372036854775808 .row 1. is outside"):
        exe.run(feed={"x": np.ones((2, 3), "float32"), "y": bad}, fetch_list=[loss])


# ----------------------------------------------------------------------------- arguments
def test_fc_num_flatten_dims_must_be_an_int():
    x = static.data("x", [None, 4], "float32")
    with pytest.raises(TypeError, match=r"num_flatten_dims must be an int.*got '1'.*"
                                        r"num_flatten_dims=int\('1'\)"):
        static.nn.fc(x, 2, num_flatten_dims="1")
    with pytest.raises(TypeError, match="num_flatten_dims must be an int"):
        fluid.layers.fc(x, 2, num_flatten_dims="1")
    assert static.nn.fc(x, 2, num_flatten_dims=np.int64(1)).shape == (-1, 2)


def test_param_attr_initializer_must_be_an_initializer_object():
    with pytest.raises(TypeError, match=r"got str 'xavier'.*XavierUniform\(\)"):
        paddle.ParamAttr(initializer="xavier")
    attr = paddle.ParamAttr(initializer=paddle.nn.initializer.XavierUniform())
    assert attr.initializer is not None


def test_piecewise_decay_checks_types_and_order():
    lr = paddle.optimizer.lr
    with pytest.raises(TypeError, match=r"boundaries must be numbers.*'100'"):
        lr.PiecewiseDecay(boundaries=["100", "200"], values=[0.1, 0.01, 0.001])
    with pytest.raises(TypeError, match=r"values must be numbers.*'0.1'"):
        lr.PiecewiseDecay(boundaries=[100], values=["0.1", 0.01])
    with pytest.raises(ValueError, match=r"increasing order.*\[200, 100\]"):
        lr.PiecewiseDecay(boundaries=[200, 100], values=[0.1, 0.01, 0.001])
    sched = lr.PiecewiseDecay(boundaries=[2, 4], values=[1.0, 0.5, 0.1])
    got = []
    for _ in range(6):
        got.append(sched())
        sched.step()
    assert got == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]


def test_a_save_path_whose_parent_is_a_file_says_so(tmp_path):
    x = static.data("x", [None, 2], "float32")
    static.nn.fc(x, 2)
    static.Executor(paddle.CPUPlace()).run(static.default_startup_program())
    (tmp_path / "afile").write_text("")
    with pytest.raises(NotADirectoryError, match=r"afile' is a file, not a directory"):
        static.save(static.default_main_program(), str(tmp_path / "afile" / "sub" / "m"))
    assert (tmp_path / "afile").read_text(encoding="utf-8") == ""


def test_fluid_piecewise_decay_has_the_same_checks():
    with pytest.raises(ValueError, match=r"piecewise_decay: boundaries must be in increasing"):
        fluid.layers.piecewise_decay(boundaries=[200, 100], values=[0.1, 0.01, 0.001])
    with pytest.raises(TypeError, match=r"piecewise_decay: values must be numbers"):
        fluid.layers.piecewise_decay(boundaries=[100], values=[0.1, "0.01"])


def test_from_generator_batches_follow_the_feed_rules_and_name_the_batch():
    x, y = feed_vars()
    batches = [[np.ones((2, 2)), np.array([[1], [2]])],
               [np.ones((2, 2)), np.array([[3], [1.7]])]]
    strict = paddle.io.DataLoader.from_generator(feed_list=[x, y], use_double_buffer=False)
    strict.set_batch_generator(lambda: iter(batches))
    with pytest.raises(ValueError, match=r"DataLoader batch #1: sample #1 of 'y' holds 1.7"):
        list(strict())
    lossy = paddle.io.DataLoader.from_generator(feed_list=[x, y], use_double_buffer=False,
                                                lossy_cast=True)
    lossy.set_batch_generator(lambda: iter(batches))
    assert [f["y"][:, 0].tolist() for f in lossy()] == [[1, 2], [3, 1]]


# ---------------------------------------------------------------- issue 30, item 8
def test_a_bad_sample_names_its_dataset_index_and_the_fed_variable():
    samples = [GOOD] * 5 + [(np.ones(3, "float32"), 1)]        # index 5: wrong shape
    loader = paddle.io.DataLoader(Samples(samples), feed_list=list(feed_vars()), batch_size=3,
                                  return_list=False, use_buffer_reader=False)
    with pytest.raises(ValueError, match=r"sample #2 of the batch, field #0 has shape "
                                         r"\(3,\).*dataset index 5; field #0 feeds 'x'"):
        list(loader())


@pytest.mark.parametrize("kw, words", [
    ({"shuffle": "no"}, ["shuffle", "bool", "'no'"]),
    ({"drop_last": 1}, ["drop_last", "bool", "1"]),
    ({"collate_fn": 5}, ["collate_fn", "callable", "int 5"]),
])
def test_dataloader_arguments_are_checked_at_construction(kw, words):
    with pytest.raises(TypeError) as e:
        paddle.io.DataLoader(Samples([GOOD] * 4), batch_size=2, **kw)
    for w in words:
        assert w in str(e.value), str(e.value)
