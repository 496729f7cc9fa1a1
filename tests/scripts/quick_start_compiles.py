"""The README's Quick start, counting numba's real compiles (a cache load is not one);
prints `compiles N`. Run by tests/executor/test_warmup.py after a warm-up and cold."""
import numpy, numbaflow as paddle, numbaflow.static as static
from numba.core import event

compiles = []
class Count(event.Listener):
    def on_start(self, ev): compiles.append(ev.data["dispatcher"])
    def on_end(self, ev): pass
event.register("numba:compile", Count())
paddle.enable_static()
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    x = static.data(name="X", shape=[None, 1], dtype="float32")
    loss = paddle.mean(static.nn.fc(x, size=10))
    paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
exe = static.Executor(paddle.CPUPlace())
exe.run(startup)
exe.run(main, feed={"X": numpy.ones((10, 1), "float32")}, fetch_list=[loss])
print("compiles", len(compiles))
