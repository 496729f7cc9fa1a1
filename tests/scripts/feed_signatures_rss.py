"""A small MLP run with 2000 batch sizes through the path argv[1] names (`plain`, `compiled`,
`dp`: data parallel over one replica); prints how much the RSS grew over the last 1920.
Run by tests/faults/test_fault_run.py with NUMBAFLOW_MAX_PLANS=16."""
import resource, sys
import numpy as np
import numbaflow as paddle, numbaflow.static as static
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    x = static.data("x", [None, 64], "float32")
    loss = paddle.mean(static.nn.fc(static.nn.fc(x, 64, activation="relu"), 8))
    paddle.optimizer.SGD(0.01).minimize(loss)
exe = static.Executor(); exe.run(startup)
kind = sys.argv[1]
prog = {"plain": main, "compiled": static.CompiledProgram(main),
        "dp": static.CompiledProgram(main).with_data_parallel(
            loss_name=loss.name, places=[paddle.CPUPlace()])}[kind]
def rss():
    return int(open("/proc/self/statm", encoding="utf-8").read().split()[1]) * 4096
def run(n):
    exe.run(prog, feed={"x": np.ones((n, 64), np.float32)}, fetch_list=[loss])
for n in range(2, 80):
    run(n)
base = rss()
for n in range(80, 2000):
    run(n)
print(rss() - base)
