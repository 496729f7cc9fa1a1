"""Files named for what they hold (issue 32 item 5): an inference model's .pdmodel /
.pdiparams pair is Paddle's format, numbaflow's own is .nfmodel / .nfparams; a file of
the wrong kind says what it is and how to load it; numbaflow 0.1.0's own files under
Paddle's names still load, with a warning."""
import os
import warnings

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.formats import paddle_proto
from numbaflow.graph.serialize import FileFormatError

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def _model():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        out = static.nn.fc(x, 2, activation="relu")
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return exe, main, x, out


def _run(exe, prefix, x):
    with static.scope_guard(static.Scope()):
        program, feeds, fetches = static.load_inference_model(prefix, exe)
        return exe.run(program, feed={feeds[0]: x}, fetch_list=fetches)[0]


def test_each_format_under_its_own_names(tmp_path):
    exe, main, x, out = _model()
    data = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    want, = exe.run(main.clone(for_test=True), feed={"x": data}, fetch_list=[out])
    static.save_inference_model(str(tmp_path / "own"), [x], [out], exe)
    static.save_inference_model(str(tmp_path / "pd"), [x], [out], exe, format="paddle")
    assert sorted(os.listdir(tmp_path)) == ["own.nfmodel", "own.nfparams", "pd.pdiparams",
                                            "pd.pdmodel"]
    paddle_proto.ProgramDesc().ParseFromString((tmp_path / "pd.pdmodel").read_bytes())
    assert (tmp_path / "own.nfmodel").read_bytes()[:1] == b"{"
    for prefix in ("own", "pd"):
        np.testing.assert_allclose(_run(exe, str(tmp_path / prefix), data), want, rtol=1e-6)
        with static.scope_guard(static.Scope()):      # Paddle's directory + file names
            program, feeds, fetches = static.load_inference_model(
                str(tmp_path), exe, model_filename=prefix, params_filename=prefix)
            got, = exe.run(program, feed={feeds[0]: data}, fetch_list=fetches)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # both pairs at one prefix: numbaflow's is read
    static.save_inference_model(str(tmp_path / "pd"), [x], [out], exe)
    os.remove(tmp_path / "pd.pdiparams")       # (Paddle's pair broken: not read)
    np.testing.assert_allclose(_run(exe, str(tmp_path / "pd"), data), want, rtol=1e-6)


def test_older_own_format_under_paddle_names_loads_with_a_note(tmp_path):
    exe, main, x, out = _model()
    data = np.ones((2, 3), "float32")
    want, = exe.run(main.clone(for_test=True), feed={"x": data}, fetch_list=[out])
    static.save_inference_model(str(tmp_path / "m"), [x], [out], exe)
    os.replace(tmp_path / "m.nfmodel", tmp_path / "old.pdmodel")      # as 0.1.0 named them
    os.replace(tmp_path / "m.nfparams", tmp_path / "old.pdiparams")
    with pytest.warns(UserWarning, match=r"numbaflow's own format under Paddle's file names"
                                         r".*old\.nfmodel.*format='paddle'"):
        got = _run(exe, str(tmp_path / "old"), data)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_the_wrong_kind_says_what_it_is_and_how_to_load_it(tmp_path):
    exe, main, x, out = _model()
    static.save_inference_model(str(tmp_path / "own"), [x], [out], exe)
    static.save_inference_model(str(tmp_path / "pd"), [x], [out], exe, format="paddle")
    static.save(main, str(tmp_path / "ckpt"))
    with pytest.raises(FileFormatError, match=r"numbaflow's inference program.*"
                                              r"load_inference_model\('.*own'"):
        paddle.load(str(tmp_path / "own.nfmodel"))
    for name in ("pd.pdmodel", "pd.pdiparams"):
        with pytest.raises(FileFormatError, match=r"Paddle's inference model.*"
                                                  r"load_inference_model\('.*pd'"):
            paddle.load(str(tmp_path / name))
    with pytest.raises(FileNotFoundError, match=r"training checkpoint.*static\.load"):
        static.load_inference_model(str(tmp_path / "ckpt"), exe)
    with pytest.raises(FileNotFoundError, match=r"own\.nfmodel' is an inference model.*"
                                                r"load_inference_model"):
        static.load(main, str(tmp_path / "own"), exe)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                      # a .nfparams is an arrays file
        assert sorted(paddle.load(str(tmp_path / "own.nfparams"))) == sorted(
            p.name for p in main.all_parameters())
