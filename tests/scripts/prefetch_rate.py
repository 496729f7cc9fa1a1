"""A ~2-3 ms/step MLP fed pre-loaded batches, then batches from a DataLoader whose one worker
takes 2 ms each (tests/io/test_dataloader.py's SpinBatches; argv[1:3] are the folders to
import it from); prints the step time in ms and the loader's step rate over the
pre-loaded one. Run by tests/io/test_dataloader.py."""
import sys, time
sys.path[:0] = sys.argv[1:3]
import numbaflow as paddle, numbaflow.static as static
from numbaflow.io import DataLoader
from test_dataloader import SpinBatches
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    x = static.data("x", [None, 64], "float32")
    y = static.data("y", [None, 1], "int64")
    h = static.nn.fc(static.nn.fc(x, 768, activation="relu"), 768, activation="relu")
    loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 10), y)
    paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
exe = static.Executor()
exe.run(startup)
n = 300
pre = [dict(zip(("x", "y"), SpinBatches(n, 0)[i])) for i in range(n)]
def steps_per_s(feeds):
    t, k = time.perf_counter(), 0
    for f in feeds:
        exe.run(main, feed=f, fetch_list=[loss])
        k += 1
    assert k == n
    return n / (time.perf_counter() - t)
steps_per_s(pre[:10] * (n // 10))                                   # warm up
from numbaflow.executor.segments import wait_for_compiles
wait_for_compiles()                     # the steady state: segments compiled
base = steps_per_s(pre)
loader = DataLoader(SpinBatches(n, 2.0), feed_list=[x, y], batch_size=None, num_workers=1,
                    return_list=False)
print(1e3 / base, steps_per_s(loader) / base)
