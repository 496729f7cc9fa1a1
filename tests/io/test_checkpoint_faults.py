"""Checkpoint fault suite: kill -9 during saves, damaged files, modes, old files.

Guarantees under test (docs/failure-behaviour.md): a save is visible whole or not at
all; the next save removes what an interrupted one left; every damaged file raises a
ValueError naming it; files get the umask's mode; version 1 files still load.
"""
import io
import json
import os
import random
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.persistence import checkpoint
from numbaflow.graph.serialize import FORMAT_KEY, program_to_dict
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
DRIVER = os.path.join(str(TESTS), "checkpoint_fault_driver.py")


def run_driver(tmp_path, *args):
    root = os.path.dirname(os.path.dirname(os.path.abspath(paddle.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, DRIVER, args[0], str(tmp_path / "d"), *args[1:]],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_kill9_before_and_after_every_fsync_rename_and_unlink_of_a_save(tmp_path):
    stats = run_driver(tmp_path, "points")
    # 2 kinds x 3 ops x 9 call numbers x before/after: every call of a save is hit
    assert stats["kills"] + stats["ran_through"] == 108
    assert stats["kills"] >= 40 and stats["new"] > 0 and stats["kills_with_leftovers"] > 0


@pytest.mark.slow
def test_kill9_at_random_moments_of_repeated_saves(tmp_path):
    stats = run_driver(tmp_path, "random", "40", "2024")
    assert stats["kills"] == 40
    assert stats["kills_with_leftovers"] > 0       # some kills did land inside a save


# ----------------------------------------------------------------------------- helpers
def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        pred = static.nn.fc(static.nn.fc(x, 5, activation="tanh"), 2)
        loss = paddle.mean(paddle.square(pred))
        paddle.optimizer.Adam(0.01).minimize(loss)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[loss])
    return main, exe, x, pred


def state(main):
    scope = static.global_scope()
    return {v.name: np.array(scope.get(v.name)) for v in main.list_vars() if v.persistable}


def load_checkpoint(main, prefix):
    with static.scope_guard(static.Scope()):
        static.load(main, prefix)
        return state(main)


def load_inference(prefix, exe):
    with static.scope_guard(static.Scope()):
        program, _, _ = static.load_inference_model(prefix, exe)
        return state(program)


def expect_named_error_or_same(load, original, fname):
    """A damaged file either loads exactly what was saved (the damage hit bytes no reader
    uses) or raises ValueError naming it; never another exception, never other data."""
    try:
        got = load()
    except ValueError as e:
        assert fname in str(e), str(e)
        return "error"
    assert sorted(got) == sorted(original)
    for k in original:
        np.testing.assert_array_equal(got[k], original[k], err_msg=k)
    return "same"


def damage_cases(data, rng, flips):
    yield "empty", b""
    for n in sorted(set([1, 2, 4, 30, len(data) // 2, len(data) - 1] +
                        rng.sample(range(1, len(data)), 30))):
        yield f"truncated to {n}", data[:n]
    for pos in rng.sample(range(len(data)), flips):
        bad = bytearray(data)
        bad[pos] ^= 1 << rng.randrange(8)
        yield f"bit flip at {pos}", bytes(bad)


# ----------------------------------------------------------------------------- damaged files
@pytest.mark.parametrize("fname", ["m.pdparams", "m.pdopt"])
def test_damaged_checkpoint_files(tmp_path, fname):
    main, exe, *_ = build()
    static.save(main, str(tmp_path / "m"))
    original = state(main)
    path = tmp_path / fname
    data = path.read_bytes()
    rng = random.Random(fname)
    outcomes = {"error": 0, "same": 0}
    for what, bad in damage_cases(data, rng, flips=150):
        path.write_bytes(bad)
        outcomes[expect_named_error_or_same(
            lambda: load_checkpoint(main, str(tmp_path / "m")), original, fname)] += 1
    path.write_bytes(data)
    assert outcomes["error"] > 150                  # nearly every damage is caught
    np.testing.assert_array_equal(load_checkpoint(main, str(tmp_path / "m"))["fc_0.w_0"],
                                  original["fc_0.w_0"])


@pytest.mark.parametrize("fname", ["m.nfmodel", "m.nfparams"])
def test_damaged_inference_model_files(tmp_path, fname):
    main, exe, x, pred = build()
    static.save_inference_model(str(tmp_path / "m"), [x], [pred], exe, program=main)
    original = load_inference(str(tmp_path / "m"), exe)
    path = tmp_path / fname
    data = path.read_bytes()
    rng = random.Random(fname)
    outcomes = {"error": 0, "same": 0}
    for what, bad in damage_cases(data, rng, flips=100):
        path.write_bytes(bad)
        outcomes[expect_named_error_or_same(
            lambda: load_inference(str(tmp_path / "m"), exe), original, fname)] += 1
    path.write_bytes(data)
    # nearly every damage is caught (at writing: all 137 of the .nfmodel's, 117 of 137 of
    # the .nfparams', whose other flips hit bytes no reader uses)
    assert outcomes["error"] > 0.8 * sum(outcomes.values()), outcomes
    np.testing.assert_array_equal(load_inference(str(tmp_path / "m"), exe)["fc_0.w_0"],
                                  original["fc_0.w_0"])


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_damaged_paddle_pickle_raises_value_error_naming_it(tmp_path, protocol):
    # a pickle has no checksum: a flip may change a value, but it never escapes as another
    # exception type, never allocates more than the file's size, never runs anything
    import pickle
    obj = {"fc_0.w_0": np.arange(12, dtype="float32").reshape(3, 4), "b": np.zeros(4),
           "lr": np.float32(0.5)}
    data = pickle.dumps(obj, protocol=protocol)
    path = tmp_path / "p.pdparams"
    for what, bad in damage_cases(data, random.Random(protocol), flips=300):
        path.write_bytes(bad)
        try:
            paddle.load(str(path))
        except ValueError as e:
            assert "p.pdparams" in str(e), (what, str(e))


def test_wrong_format_versions(tmp_path, monkeypatch):
    main, exe, x, pred = build()
    for version in (0, 3, 99, -1):
        monkeypatch.setattr(checkpoint, "FORMAT_VERSION", version)
        static.save(main, str(tmp_path / f"v{version}"))
        monkeypatch.undo()
        with pytest.raises(ValueError, match=f"v{version}.pdparams.*format version {version}"):
            load_checkpoint(main, str(tmp_path / f"v{version}"))


def test_torn_checkpoint_from_two_saves_is_refused(tmp_path):
    main, exe, x, pred = build()
    static.save(main, str(tmp_path / "a"))
    exe.run(main, feed={"x": np.ones((2, 3), "float32")})
    static.save(main, str(tmp_path / "b"))
    os.replace(tmp_path / "b.pdopt", tmp_path / "a.pdopt")      # a's params, b's optimizer
    with pytest.raises(ValueError, match="different saves"):
        load_checkpoint(main, str(tmp_path / "a"))
    static.save_inference_model(str(tmp_path / "i"), [x], [pred], exe, program=main)
    static.save_inference_model(str(tmp_path / "j"), [x], [pred], exe, program=main)
    os.replace(tmp_path / "j.nfmodel", tmp_path / "i.nfmodel")
    with pytest.raises(ValueError, match="i.nfmodel"):
        load_inference(str(tmp_path / "i"), exe)


def test_damaged_journal_is_named(tmp_path):
    main, exe, *_ = build()
    static.save(main, str(tmp_path / "m"))
    (tmp_path / ".m.pdparams.commit").write_bytes(b"\x00garbage")
    with pytest.raises(ValueError, match=r"\.m\.pdparams\.commit"):
        load_checkpoint(main, str(tmp_path / "m"))
    static.save(main, str(tmp_path / "m"))                      # the next save clears it
    assert sorted(os.listdir(tmp_path)) == ["m.pdopt", "m.pdparams"]


# ----------------------------------------------------------------------------- commit protocol
def test_failure_after_the_commit_point_leaves_the_new_save_visible(tmp_path, monkeypatch):
    main, exe, *_ = build()
    static.save(main, str(tmp_path / "m"))
    exe.run(main, feed={"x": np.ones((2, 3), "float32")})
    new = state(main)
    real_replace, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:           # 1: the journal (commit); 2: the first file
            raise OSError(5, "I/O error")
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError):
        static.save(main, str(tmp_path / "m"))
    monkeypatch.undo()
    assert ".m.pdparams.commit" in os.listdir(tmp_path)
    got = load_checkpoint(main, str(tmp_path / "m"))            # read through the journal
    for k in new:
        np.testing.assert_array_equal(got[k], new[k], err_msg=k)
    static.save(main, str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path)) == ["m.pdopt", "m.pdparams"]


def test_next_save_removes_leftovers_of_interrupted_saves(tmp_path):
    main, exe, x, pred = build()
    for name in (".m.pdparams.0123abcd.tmp", ".m.pdopt.deadbeef.tmp", ".m.pdparams.x1y2.tmp",
                 ".m.pdparams.commit.abcd.tmp"):
        (tmp_path / name).write_bytes(b"partial")
    (tmp_path / "other.txt").write_text("not ours")
    static.save(main, str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path)) == ["m.pdopt", "m.pdparams", "other.txt"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_files_get_the_umask_mode(tmp_path, umask):
    main, exe, x, pred = build()
    old = os.umask(umask)
    try:
        static.save(main, str(tmp_path / "m"))
        static.save_inference_model(str(tmp_path / "i"), [x], [pred], exe, program=main)
        paddle.save({"w": np.zeros(2)}, str(tmp_path / "s.pdparams"))
    finally:
        os.umask(old)
    for f in ("m.pdparams", "m.pdopt", "i.nfmodel", "i.nfparams", "s.pdparams"):
        assert os.stat(tmp_path / f).st_mode & 0o777 == 0o666 & ~umask, f


# ----------------------------------------------------------------------------- old files
def write_v1_arrays(path, arrays, kind):
    """Exactly what numbaflow's format-1 writer produced (no save id, no checksums)."""
    index, payload = [], {}
    for i, (name, a) in enumerate(arrays.items()):
        index.append({"name": name, "shape": list(a.shape), "dtype": str(a.dtype),
                      "key": f"v{i}"})
        payload[f"v{i}"] = np.ascontiguousarray(a)
    meta = json.dumps({"kind": kind, "vars": index}).encode()
    buf = io.BytesIO()
    np.savez(buf, **{FORMAT_KEY: np.array(1, np.int64),
                     "__numbaflow_vars__": np.frombuffer(meta, np.uint8)}, **payload)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def test_version_1_files_still_load(tmp_path):
    main, exe, x, pred = build()
    saved = state(main)
    params = {p.name: saved[p.name] for p in main.all_parameters()}
    write_v1_arrays(tmp_path / "old.pdparams", params, "pdparams")
    write_v1_arrays(tmp_path / "old.pdopt",
                    {k: a for k, a in saved.items() if k not in params}, "pdopt")
    got = load_checkpoint(main, str(tmp_path / "old"))
    for k in saved:
        np.testing.assert_array_equal(got[k], saved[k], err_msg=k)
    # a version-1 inference model: the description without save id, parameters unhashed
    static.save_inference_model(str(tmp_path / "new"), [x], [pred], exe, program=main)
    expected = load_inference(str(tmp_path / "new"), exe)
    desc = json.loads((tmp_path / "new.nfmodel").read_text(encoding="utf-8"))
    desc.pop("save_id")
    desc[FORMAT_KEY] = 1
    (tmp_path / "old.pdmodel").write_text(json.dumps(desc), encoding="utf-8")  # 0.1.0's names
    write_v1_arrays(tmp_path / "old.pdiparams", expected, "pdiparams")
    with pytest.warns(UserWarning, match="own format under Paddle's file names"):
        got = load_inference(str(tmp_path / "old"), exe)
    for k in expected:
        np.testing.assert_array_equal(got[k], expected[k], err_msg=k)
    assert program_to_dict(main)[FORMAT_KEY] == 2


@pytest.mark.slow
def test_cleanup_spares_a_live_process_save_but_not_a_dead_one(tmp_path):
    # where flock does not serialise saves (some network file systems), a save must not
    # delete the temp files another live process on this host is writing
    main, exe, x, pred = build()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        host = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32]
        live_tmp = f".m.pdparams.00ff-{live.pid}-{host}.tmp"
        dead_tmp = f".m.pdopt.00ff-{dead.pid}-{host}.tmp"
        for name in (live_tmp, dead_tmp):
            (tmp_path / name).write_bytes(b"partial")
        static.save(main, str(tmp_path / "m"))
        assert sorted(os.listdir(tmp_path)) == sorted(["m.pdopt", "m.pdparams", live_tmp])
    finally:
        live.kill()
        live.wait()


def test_paddle_load_of_one_file_reads_a_committed_save_through_its_journal(tmp_path,
                                                                             monkeypatch):
    main, exe, *_ = build()
    static.save(main, str(tmp_path / "m"))
    exe.run(main, feed={"x": np.ones((2, 3), "float32")})
    new = state(main)
    real_replace, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:           # committed; neither file renamed yet
            raise OSError(5, "I/O error")
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError):
        static.save(main, str(tmp_path / "m"))
    monkeypatch.undo()
    opt = paddle.load(str(tmp_path / "m.pdopt"))
    moment = next(k for k in opt if "moment1" in k)
    np.testing.assert_array_equal(opt[moment], new[moment])


def test_failure_right_after_the_commit_keeps_the_new_save(tmp_path, monkeypatch):
    """The directory fsync after the journal's rename fails: the save is committed, so its
    files must stay (readers find them through the journal)."""
    main, exe, *_ = build()
    static.save(main, str(tmp_path / "m"))
    exe.run(main, feed={"x": np.ones((2, 3), "float32")})
    new = state(main)
    real_replace, real_fsync, committed = os.replace, os.fsync, []

    def replace(src, dst):
        out = real_replace(src, dst)
        if str(dst).endswith(".commit"):
            committed.append(dst)
        return out

    def fsync(fd):
        if committed:
            raise OSError(5, "I/O error")
        return real_fsync(fd)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError):
        static.save(main, str(tmp_path / "m"))
    monkeypatch.undo()
    got = load_checkpoint(main, str(tmp_path / "m"))
    for k in new:
        np.testing.assert_array_equal(got[k], new[k], err_msg=k)
