"""Driver for tests/training/test_hapi_resume.py (run as a script): paddle.Model.fit with
save_dir, killed between epochs and resumed, or run through once.

    python hapi_resume_driver.py full   DIR   # 3 epochs; DIR/full.npz: losses, weights
    python hapi_resume_driver.py killed DIR   # 3 epochs with save_dir=DIR/ckpt; at the start
                                              # of epoch 2 writes DIR/ready, then waits for
                                              # the kill; losses go to DIR/killed.txt as run
    python hapi_resume_driver.py resume DIR   # the recipe: load the newest DIR/ckpt/<epoch>,
                                              # fit the remaining epochs; DIR/resume.npz
"""
import os
import sys
import time

import numpy as np

import numbaflow as paddle
from numbaflow import static

EPOCHS = 3


class Data(paddle.io.Dataset):
    def __init__(self):
        rng = np.random.default_rng(7)
        self.x = rng.normal(size=(24, 4)).astype("float32")
        self.y = (self.x[:, :1] * self.x[:, 3:] > 0).astype("int64")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Log(paddle.callbacks.Callback):
    """Every step's loss, appended to a file as it happens (what a killed run leaves)."""

    def __init__(self, path, ready=None):
        super().__init__()
        self.path, self.ready, self.losses = path, ready, []

    def on_train_batch_end(self, step, logs=None):
        self.losses.append(logs["loss"][0])
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(f"{logs['loss'][0]!r}\n")

    def on_epoch_begin(self, epoch, logs=None):
        if self.ready and epoch == 1:           # epoch 0's checkpoint is on disk
            with open(self.ready, "w", encoding="utf-8") as f:
                f.write("ready\n")
            time.sleep(600)                     # until the kill -9


def build():
    net = paddle.nn.Sequential(paddle.nn.Linear(4, 6), paddle.nn.Tanh(), paddle.nn.Linear(6, 2))
    model = paddle.Model(net, static.InputSpec([None, 4], "float32", "x"),
                         static.InputSpec([None, 1], "int64", "y"))
    model.prepare(paddle.optimizer.Adam(0.05, parameters=model.parameters()),
                  paddle.nn.CrossEntropyLoss(), paddle.metric.Accuracy())
    rng = np.random.default_rng(3)
    for p in model.parameters():
        static.global_scope().set(p.name, rng.normal(scale=0.5, size=p.shape).astype("float32"))
    return model


def weights(model):
    return {p.name: np.array(static.global_scope().get(p.name)) for p in model.parameters()}


def main(mode, folder):
    model = build()
    ckpt = os.path.join(folder, "ckpt")
    if mode == "full":
        log = Log(os.path.join(folder, "full.txt"))
        model.fit(Data(), batch_size=8, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[log])
        np.savez(os.path.join(folder, "full.npz"), losses=log.losses, **weights(model))
    elif mode == "killed":
        log = Log(os.path.join(folder, "killed.txt"), ready=os.path.join(folder, "ready"))
        model.fit(Data(), batch_size=8, epochs=EPOCHS, shuffle=False, verbose=0,
                  save_dir=ckpt, save_freq=1, callbacks=[log])
    else:   # resume: the newest epoch checkpoint, then the epochs left
        done = max(int(n.split(".")[0]) for n in os.listdir(ckpt) if n.split(".")[0].isdigit())
        model.load(os.path.join(ckpt, str(done)))
        log = Log(os.path.join(folder, "resume.txt"))
        model.fit(Data(), batch_size=8, epochs=EPOCHS - done - 1, shuffle=False, verbose=0,
                  save_dir=os.path.join(folder, "ckpt_resumed"), callbacks=[log])
        np.savez(os.path.join(folder, "resume.npz"), losses=log.losses, done=done,
                 **weights(model))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
