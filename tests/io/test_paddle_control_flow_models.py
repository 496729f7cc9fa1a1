"""Paddle's ProgramDesc with several blocks, both ways (issue 29 item 1), against real Paddle
2.6.2 (tests/fixtures/make_paddle_control_flow.py writes the fixtures in three steps):
Paddle-saved inference models with an LSTM (`rnn` op) and a `cond` (conditional_block +
select_input), with a `while_loop` collecting its steps in a tensor array (`while`,
write_to_array, read_from_array, lod_array_length), and with a `while_loop` updating a
cond's result in place with a nested `cond` in its body, load and give Paddle's outputs;
numbaflow's format="paddle" exports of them, and of a program built with numbaflow's own
cond / while_loop / tensor array, are the ones real Paddle ran, with Paddle's outputs equal
to the reference ones."""
import sys

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.formats import paddle_proto
from numbaflow.graph.serialize import FileFormatError
from numbaflow.utils import unique_name
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

HERE = TESTS / "fixtures" / "paddle_control_flow"
sys.path.insert(0, str(HERE.parent))
from make_paddle_control_flow import (MODELS, NATIVE_FEEDS, export, save_native,  # noqa: E402
                                      unstack_feeds)


def run_all(exe, program, feed_sets, fetches):
    return {f"out{k}_{j}": np.asarray(a) for k, feed in enumerate(feed_sets)
            for j, a in enumerate(exe.run(program, feed=feed, fetch_list=fetches))}


def assert_same(got, want):
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", MODELS)
def test_paddle_saved_control_flow_model_gives_paddles_outputs(name):
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(str(HERE / name), exe)
    types = {op.type for b in program.blocks for op in b.ops}
    assert program.num_blocks == {"lstm_cond": 3, "while_array": 2, "cond_while": 6}[name]
    assert all(0 <= program.block(i).parent_idx < i for i in range(1, program.num_blocks))
    assert types >= {"lstm_cond": {"rnn", "conditional_block", "select_input", "logical_not"},
                     "while_array": {"while", "write_to_array", "read_from_array",
                                     "lod_array_length"},
                     "cond_while": {"while", "conditional_block", "select_input"}}[name]
    data = np.load(HERE / f"{name}.npz")
    want = {k: data[k] for k in data.files if k.startswith("out")}
    assert_same(run_all(exe, program, unstack_feeds(data), fetches), want)


@pytest.mark.parametrize("name", MODELS)
def test_paddle_reads_numbaflows_export_of_its_model_with_equal_outputs(name, tmp_path):
    export(str(HERE / name), str(tmp_path / "m"), paddle, static)
    # the export Paddle ran (its outputs recorded by Paddle) is today's export
    assert (tmp_path / "m.pdmodel").read_bytes() == \
        (HERE / f"numbaflow_{name}.pdmodel").read_bytes()
    assert (tmp_path / "m.pdiparams").read_bytes() == (HERE / f"{name}.pdiparams").read_bytes()
    data = np.load(HERE / f"{name}.npz")
    assert_same(dict(np.load(HERE / f"paddle_reads_{name}.npz")),
                {k: data[k] for k in data.files if k.startswith("out")})


def test_paddle_runs_numbaflows_own_cond_while_and_array_lowering(tmp_path):
    with unique_name.guard():
        got = save_native(str(tmp_path / "m"), paddle, static)
    desc = paddle_proto.ProgramDesc()
    desc.ParseFromString((tmp_path / "m.pdmodel").read_bytes())
    assert [b.parent_idx for b in desc.blocks] == [-1, 0, 0, 0]
    ops = {op.type: op for b in desc.blocks for op in b.ops}
    assert {v.parameter for v in ops["while"].outputs} == {"Out", "StepScopes"}
    assert {v.parameter for v in ops["conditional_block"].outputs} == {"Out", "Scope"}
    block_attr = next(a for a in ops["while"].attrs if a.name == "sub_block")
    assert block_attr.type == paddle_proto.ATTR_TYPES["BLOCK"] and block_attr.block_idx == 3
    assert any(v.type.type == paddle_proto.VAR_TYPES["LOD_TENSOR_ARRAY"]
               for v in desc.blocks[0].vars)
    for suffix in (".pdmodel", ".pdiparams"):
        assert (tmp_path / f"m{suffix}").read_bytes() == \
            (HERE / f"numbaflow_native{suffix}").read_bytes()
    # numbaflow's outputs against numpy, and Paddle's on the file numbaflow wrote
    w = static.global_scope().get("create_parameter_0.w_0")
    for k, feed in enumerate(NATIVE_FEEDS):
        x = feed["x"]
        y = x @ w if x.mean() > 0 else x * -2.0
        steps = [y]
        for _ in range(4):
            steps.append(np.tanh(steps[-1] @ w + 0.25))
        np.testing.assert_allclose(got[f"out{k}_0"], y, rtol=1e-5)
        np.testing.assert_allclose(got[f"out{k}_1"], steps[-1] + steps[3], rtol=1e-5)
        assert got[f"out{k}_2"].tolist() == [4]
    assert_same(dict(np.load(HERE / "paddle_reads_native.npz")), got)


def sub_block_attr(desc):
    op = next(op for op in desc.blocks[0].ops if op.type == "while")
    return next(a for a in op.attrs if a.name == "sub_block")


@pytest.mark.parametrize("edit, message", [
    (lambda d: setattr(sub_block_attr(d), "block_idx", 7), "not a block enclosed by block 0"),
    (lambda d: setattr(sub_block_attr(d), "block_idx", 0), "not a block enclosed by block 0"),
    (lambda d: setattr(d.blocks[1], "parent_idx", 1), "parent_idx 1"),
    (lambda d: d.blocks[1].ops.add().CopyFrom(next(
        op for op in d.blocks[0].ops if op.type == "fetch")), "must be in the global block"),
])
def test_damaged_block_structure_is_refused_naming_it(edit, message, tmp_path):
    desc = paddle_proto.ProgramDesc()
    desc.ParseFromString((HERE / "while_array.pdmodel").read_bytes())
    edit(desc)
    (tmp_path / "m.pdmodel").write_bytes(desc.SerializeToString())
    (tmp_path / "m.pdiparams").write_bytes((HERE / "while_array.pdiparams").read_bytes())
    with pytest.raises(FileFormatError, match=message):
        static.load_inference_model(str(tmp_path / "m"), static.Executor(paddle.CPUPlace()))


def test_tensor_array_of_a_batch_sized_loop_reads_back_after_the_loop():
    """A loop over a [-1, 3] state writing a tensor array that is read after the loop (the
    array enters the loop empty, declared with the batch dim -1): the read takes the
    body's run-time shape (it allocated (0, 3) before)."""
    x = static.data("x", [None, 3], "float32")
    arr = paddle.tensor.create_array("float32")

    def body(i, h):
        h = h * 2.0
        paddle.tensor.array_write(h, i, arr)
        return [i + 1, h]
    static.nn.while_loop(lambda i, h: i < 3, body, [paddle.full([1], 0, "int64"), x])
    r = paddle.tensor.array_read(arr, paddle.full([1], 1, "int64"))
    xin = np.arange(6, dtype="float32").reshape(2, 3)
    got, = static.Executor(paddle.CPUPlace()).run(feed={"x": xin}, fetch_list=[r])
    np.testing.assert_array_equal(got, xin * 4.0)

