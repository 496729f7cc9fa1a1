"""The two training steps the model cases and the compile/* children share: Paddle's seed
model and the MLP, each a program builder `build(pd) -> (main, startup, loss)` that takes the
framework module, and the batch of one step."""
import numpy as np

from . import models
from .common import fresh_names


def seed_program(pd):
    """Paddle's quick-start model: X [N,1] -> fc 10 -> mean -> SGD 0.01."""
    main, startup = pd.static.Program(), pd.static.Program()
    with fresh_names(pd), pd.static.program_guard(main, startup):
        x = pd.static.data(name="X", shape=[None, 1], dtype="float32")
        hidden = pd.static.nn.fc(x, size=10)
        loss = pd.mean(hidden)
        pd.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


def mlp_program(pd):
    """models.mlp_program as (main, startup, loss), the form the model cases take."""
    built = models.mlp_program(pd)
    return built.main, built.startup, built.loss


def seed_batch(cfg):
    """The seed step's batch: (x, y, feed, learning rate, loss kind)."""
    x = np.random.default_rng(3).random((10, 1), dtype=np.float32)
    return x, None, {"X": x}, 0.01, "mean"


def mlp_batch(cfg):
    """The MLP step's batch: (x, y, feed, learning rate, loss kind)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((cfg.mlp_batch, 784), dtype=np.float32)
    y = rng.integers(0, 10, size=(cfg.mlp_batch, 1), dtype=np.int64)
    return x, y, {"x": x, "y": y}, 0.1, "ce"
