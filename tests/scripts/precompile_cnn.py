"""Two training steps of train_digits' CNN (seeded), logging at DEBUG (the compile helper
says how many cold kernels it compiled); prints each step's loss. Run twice, cold then warm,
by tests/executor/test_precompile.py."""
import argparse, logging, sys
import numpy as np
import numbaflow as paddle
from numbaflow import static
from numbaflow.examples import train_digits
logging.basicConfig(level=logging.DEBUG, format="%(message)s")
paddle.enable_static()
paddle.seed(0)
main, startup, _, loss, acc = train_digits.build_programs(argparse.Namespace(model="cnn", lr=5e-3))
rng = np.random.default_rng(0)
feed = {"x": rng.standard_normal((64, 64)).astype(np.float32),
        "y": rng.integers(0, 10, (64, 1)).astype(np.int64)}
exe = static.Executor(paddle.CPUPlace())
exe.run(startup)
for _ in range(2):
    print("loss", repr(float(exe.run(main, feed=feed, fetch_list=[loss])[0])))
