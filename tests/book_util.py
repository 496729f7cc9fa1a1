"""Shared driver of the book-chapter tests (tests/test_book_*.py): train a fluid 1.x
program fed by `paddle.batch` + `fluid.DataFeeder`, then check that a saved inference
model reloads and infers what the trained test program infers."""
import numpy as np

import numbaflow.fluid as fluid


def train(main, startup, feed_list, reader, batch_size, fetch, steps, scope):
    """Run `steps` minibatches of `reader` (cycled) through `main`; return the fetched
    losses (each a shape-(1,) array, Paddle 1.x's loss shape) and the executor."""
    import numbaflow as paddle
    exe = fluid.Executor(fluid.CPUPlace())
    feeder = fluid.DataFeeder(feed_list=feed_list, place=fluid.CPUPlace(), program=main)
    batched = paddle.batch(reader, batch_size=batch_size, drop_last=True)
    losses = []
    with fluid.scope_guard(scope):
        exe.run(startup)
        while len(losses) < steps:
            for data in batched():
                (loss,) = exe.run(main, feed=feeder.feed(data), fetch_list=[fetch])
                assert loss.shape == (1,)
                losses.append(float(loss[0]))
                if len(losses) == steps:
                    break
    return losses, exe


def falls(losses, window=5, factor=0.9):
    """The mean of the last `window` losses is below `factor` x that of the first."""
    head, tail = np.mean(losses[:window]), np.mean(losses[-window:])
    return tail < factor * head, (head, tail)


def check_inference_roundtrip(tmp_path, exe, scope, test_program, feed, predict):
    """save_inference_model -> load_inference_model (fresh scope) reproduces the trained
    test program's `predict` on `feed`."""
    with fluid.scope_guard(scope):
        (want,) = exe.run(test_program, feed=feed, fetch_list=[predict])
        fluid.io.save_inference_model(str(tmp_path / "model"), list(feed), [predict], exe,
                                      main_program=test_program)
    with fluid.scope_guard(fluid.Scope()):
        infer_exe = fluid.Executor(fluid.CPUPlace())
        program, feed_names, fetch_targets = fluid.io.load_inference_model(
            str(tmp_path / "model"), infer_exe)
        assert sorted(feed_names) == sorted(feed)
        (got,) = infer_exe.run(program, feed=feed, fetch_list=fetch_targets)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return got
