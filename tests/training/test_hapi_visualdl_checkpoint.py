"""paddle.callbacks.VisualDL and ModelCheckpoint in a Model.fit (issue 32 item 2): the event
files hold, per batch, the very losses the callbacks were handed (read back the way
TensorBoard reads them), and the checkpoint files appear every save_freq epochs and at
the end."""
import os

import pytest
from test_hapi_model import Data, _model

event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator")

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def test_visualdl_writes_each_batch_loss_and_checkpoints_follow_save_freq(tmp_path):
    import numbaflow as paddle

    class Losses(paddle.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seen = []

        def on_train_batch_end(self, step, logs=None):
            self.seen.append(float(logs["loss"][0]))

    seen, logdir, ckpt = Losses(), tmp_path / "vdl", tmp_path / "ckpt"
    model = _model()
    model.fit(Data(32, 3), batch_size=16, epochs=3, verbose=0,
              callbacks=[seen, paddle.callbacks.VisualDL(str(logdir)),
                         paddle.callbacks.ModelCheckpoint(save_freq=2, save_dir=str(ckpt))])
    acc = event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    written = [(e.step, e.value) for e in acc.Scalars("train/loss")]
    assert [s for s, _ in written] == list(range(1, 7))         # 2 batches x 3 epochs
    assert [v for _, v in written] == pytest.approx(seen.seen, rel=1e-6)
    saved = sorted(os.listdir(ckpt))
    assert saved == ["1.pdopt", "1.pdparams", "final.pdopt", "final.pdparams"], saved
