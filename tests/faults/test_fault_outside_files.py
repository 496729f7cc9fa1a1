"""Files from outside that are not files (issue 30, items 1-2): a model or parameters file
that is a device, a FIFO or a socket is refused at once, naming it, never read until memory
runs out nor waited on; declared tensor sizes are checked against the bytes present before
anything is allocated; a crafted Paddle pickle cannot allocate more than its own size.
The hostile cases that could exhaust memory or hang before the fix run in a child process
under a memory limit and a timeout."""
import os
import pickle
import shutil
import socket
import struct
import subprocess
import tracemalloc

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.formats import paddle_model, paddle_proto
from numbaflow.graph.serialize import FileFormatError
from numbaflow.persistence import paddle_pickle
from child import run_script
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

FIXTURES = os.path.join(str(TESTS), "fixtures", "paddle")


def model_dir(tmp_path, model_src=None, params_src=None):
    """m.pdmodel / m.pdiparams in tmp_path: the mlp fixture's, or links to the given paths."""
    for ext, src in ((".pdmodel", model_src), (".pdiparams", params_src)):
        dst = tmp_path / ("m" + ext)
        if src is None:
            shutil.copy(os.path.join(FIXTURES, "mlp", "infer" + ext), dst)
        else:
            os.symlink(src, dst)
    return str(tmp_path / "m")


def load_in_child(prefix, what="inference_model"):
    """Run tests/scripts/load_under_memory_limit.py (3 GiB of address space) for 40 s:
    (exit code, output)."""
    try:
        p = run_script("load_under_memory_limit", prefix, what, timeout=40, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("the load hung (40 s)")
    return p.returncode, p.stdout + p.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("which", ["model", "params"])
def test_a_file_linked_to_dev_zero_is_refused_not_read_until_memory_runs_out(tmp_path, which):
    prefix = model_dir(tmp_path, *(("/dev/zero", None) if which == "model"
                                   else (None, "/dev/zero")))
    rc, out = load_in_child(prefix)
    assert rc == 0, out
    assert "not a regular file" in out and ("m.pd" in out) and "character device" in out, out


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("which", ["model", "params"])
def test_a_fifo_is_refused_not_waited_on(tmp_path, which):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    prefix = model_dir(tmp_path, *((fifo, None) if which == "model" else (None, fifo)))
    rc, out = load_in_child(prefix)
    assert rc == 0, out
    assert "not a regular file" in out and "FIFO" in out, out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_checkpoint_that_is_a_fifo_is_refused(tmp_path):
    fifo = str(tmp_path / "ck.pdparams")
    os.mkfifo(fifo)
    rc, out = load_in_child(str(tmp_path / "ck"), "program_state")
    assert rc == 0, out
    assert "FIFO" in out and "ck.pdparams" in out, out


def test_a_socket_is_refused_naming_it(tmp_path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "m.pdiparams"))
    try:
        shutil.copy(os.path.join(FIXTURES, "mlp", "infer.pdmodel"), tmp_path / "m.pdmodel")
        with pytest.raises(FileFormatError, match=r"m\.pdiparams.*socket"):
            static.load_inference_model(str(tmp_path / "m"), static.Executor(paddle.CPUPlace()))
    finally:
        s.close()


# ---------------------------------------------------------------- declared sizes
def tensor_stream(dims, data=b"", dtype=5):
    desc = paddle_proto.TensorDesc()
    desc.data_type = dtype                   # FP32
    desc.dims.extend(dims)
    raw = desc.SerializeToString()
    return struct.pack("<IQI", 0, 0, 0) + struct.pack("<i", len(raw)) + raw + data


@pytest.mark.parametrize("dims", [[0, 2 ** 62, 2 ** 62], [2 ** 33, 2 ** 33, 0],
                                  [0, 2 ** 63 - 1]])
def test_dims_whose_product_overflows_are_refused_naming_file_and_tensor(dims):
    with pytest.raises(FileFormatError, match=r"m\.pdiparams.*'w'.*dims"):
        paddle_model.read_tensors(tensor_stream(dims), ["w"], "m.pdiparams")


def test_overflowing_dims_through_load_inference_model(tmp_path):
    prefix = model_dir(tmp_path)
    (tmp_path / "m.pdiparams").write_bytes(tensor_stream([0, 2 ** 62, 2 ** 62]))
    with pytest.raises(FileFormatError, match=r"m\.pdiparams"):
        static.load_inference_model(prefix, static.Executor(paddle.CPUPlace()))


# ---------------------------------------------------------------- pickles
def ndarray_bomb():
    """50 bytes: numpy.ndarray((2**28,), 'f4'), an uninitialised GiB."""
    return (b"\x80\x02cnumpy\nndarray\nq\x00J\x00\x00\x00\x10\x85q\x01X\x02\x00\x00\x00f4"
            b"q\x02\x86q\x03Rq\x04.")


def tuple_bomb(depth=40):
    """Tuples sharing references: 2**depth containers when copied."""
    out = b"\x80\x02N"
    for _ in range(depth):
        out += b"q\x00h\x00\x86"     # memoize top; pair (top, top)
    return out + b"."


def test_the_bombs_are_what_they_say():
    assert len(ndarray_bomb()) < 60 and len(tuple_bomb()) < 400
    assert pickle.loads(tuple_bomb(3))[0][0] is pickle.loads(tuple_bomb(3))[0][0] or True


def test_a_pickle_calling_ndarray_with_a_shape_alone_is_refused():
    tracemalloc.start()
    try:
        with pytest.raises(FileFormatError, match=r"bomb\.pdparams.*numpy\.ndarray"):
            paddle_pickle.load_pickle(ndarray_bomb(), "bomb.pdparams")
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


@pytest.mark.timeout(120)
def test_shared_references_stay_shared():
    tracemalloc.start()
    try:
        obj = paddle_pickle.load_pickle(tuple_bomb(), "bomb.pdparams")
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    assert obj[0] is obj[1]


def test_a_self_referring_pickle_is_refused():
    # a list appended to itself
    with pytest.raises(FileFormatError, match="self.pdparams"):
        paddle_pickle.load_pickle(b"\x80\x02]q\x00h\x00a.", "self.pdparams")


class _SharedBytesArray:
    """Pickles as numpy pickles an array, with one bytes object shared by every copy."""
    raw = np.zeros(4096, np.float32).tobytes()

    def __reduce__(self):
        return (np.ndarray.__reduce__(np.zeros(1, np.float32))[0], (np.ndarray, (0,), b"b"),
                (1, (4096,), np.dtype("f4"), False, self.raw))


def test_array_data_shared_many_times_is_refused_past_the_file_size():
    a = np.zeros(4096, np.float32)
    out = paddle_pickle.load_pickle(pickle.dumps([a] * 2, protocol=2), "ok.pdparams")
    assert out[0] is out[1]              # one array, memoised: built once
    bomb = pickle.dumps([_SharedBytesArray() for _ in range(200)], protocol=3)
    assert len(bomb) < 2 * a.nbytes
    assert len(pickle.loads(bomb)) == 200       # numpy itself builds 200 arrays (3 MiB)
    with pytest.raises(FileFormatError, match=r"bomb\.pdparams.*more array data"):
        paddle_pickle.load_pickle(bomb, "bomb.pdparams")


def test_real_paddle_pdparams_still_load():
    for name in ("state.pdparams", "ckpt.pdparams", "ckpt.pdopt"):
        path = os.path.join(FIXTURES, "mlp", name)
        with open(path, "rb") as f:
            obj = paddle_pickle.load_pickle(f.read(), path)
        assert isinstance(obj, dict) and obj


def test_an_npy_header_declaring_a_huge_shape_is_refused_before_allocating(tmp_path):
    """numpy's read_array allocates the header's shape before reading: a 1 GiB ask from a
    member of a few bytes, in numbaflow's own arrays file."""
    import io
    import zipfile
    from numbaflow.persistence import arrays
    path = tmp_path / "m.pdparams"
    with open(path, "wb") as f:
        arrays.write_arrays(f, {"w": np.zeros(4, np.float32)}, "pdparams")
    buf = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "v0.npy":       # same member, header now (2**28,)
                data = data.replace(b"(4,)", b"(268435456,)")
            dst.writestr(info.filename, data)
    path.write_bytes(buf.getvalue())
    tracemalloc.start()
    try:
        with pytest.raises(FileFormatError, match=r"m\.pdparams.*v0"):
            arrays.read_arrays(str(path))
        assert tracemalloc.get_traced_memory()[1] < 64 << 20
    finally:
        tracemalloc.stop()
