"""Paddle's documented examples for with_data_parallel, BuildStrategy and
ExecutionStrategy / ParallelExecutor, run with CPU_NUM=2 and only the import changed
(use_cuda=False where the original chooses)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from locations import ROOT



def run_example(source):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CPU_NUM="2")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


WITH_DATA_PARALLEL = """
    import numpy
    import os
    import numbaflow as paddle
    import numbaflow.static as static

    paddle.enable_static()

    use_cuda = False
    place = paddle.CUDAPlace(0) if use_cuda else paddle.CPUPlace()
    parallel_places = [paddle.CUDAPlace(0), paddle.CUDAPlace(1)] if use_cuda else [paddle.CPUPlace()] * 2

    if not use_cuda:
        os.environ['CPU_NUM'] = str(2)

    exe = static.Executor(place)

    data = static.data(name='X', shape=[None, 1], dtype='float32')
    hidden = static.nn.fc(x=data, size=10)
    loss = paddle.mean(hidden)

    test_program = static.default_main_program().clone(for_test=True)
    paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)

    exe.run(static.default_startup_program())
    compiled_train_prog = static.CompiledProgram(
        static.default_main_program()).with_data_parallel(
                loss_name=loss.name, places=parallel_places)
    compiled_test_prog = static.CompiledProgram(
        test_program).with_data_parallel(
                share_vars_from=compiled_train_prog,
                places=parallel_places)

    train_data = numpy.random.random(size=(10, 1)).astype('float32')
    loss_data, = exe.run(compiled_train_prog,
                      feed={"X": train_data},
                      fetch_list=[loss.name])
    test_data = numpy.random.random(size=(10, 1)).astype('float32')
    loss_data, = exe.run(compiled_test_prog,
                      feed={"X": test_data},
                      fetch_list=[loss.name])
    print("OK", loss_data.shape)
"""

BUILD_STRATEGY = """
    import os
    import numpy
    import numbaflow as paddle
    import numbaflow.static as static

    paddle.enable_static()

    os.environ['CPU_NUM'] = str(2)
    places = static.cpu_places()

    data = static.data(name="x", shape=[None, 1], dtype="float32")
    hidden = static.nn.fc(x=data, size=10)
    loss = paddle.mean(hidden)
    paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)

    build_strategy = static.BuildStrategy()
    build_strategy.enable_inplace = True
    build_strategy.memory_optimize = True
    build_strategy.reduce_strategy = static.BuildStrategy.ReduceStrategy.Reduce
    program = static.CompiledProgram(static.default_main_program())
    program = program.with_data_parallel(loss_name=loss.name,
                                          build_strategy=build_strategy,
                                          places=places)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(static.default_startup_program())
    out, = exe.run(program, feed={"x": numpy.ones((4, 1), "float32")}, fetch_list=[loss])
    print("OK", out.shape)
"""

EXECUTION_STRATEGY = """
    import numpy
    import numbaflow as paddle
    import numbaflow.static as static
    import numbaflow.nn.functional as F

    paddle.enable_static()

    x = static.data(name='x', shape=[None, 13], dtype='float32')
    y = static.data(name='y', shape=[None, 1], dtype='float32')
    y_predict = static.nn.fc(x, size=1, activation=None)

    cost = F.square_error_cost(input=y_predict, label=y)
    avg_loss = paddle.mean(cost)

    sgd_optimizer = paddle.optimizer.SGD(learning_rate=0.001)
    sgd_optimizer.minimize(avg_loss)

    exec_strategy = static.ExecutionStrategy()
    exec_strategy.num_threads = 4

    static.Executor(paddle.CPUPlace()).run(static.default_startup_program())
    train_exe = static.ParallelExecutor(use_cuda=False,
                                        loss_name=avg_loss.name,
                                        exec_strategy=exec_strategy)
    feed = {"x": numpy.random.rand(8, 13).astype("float32"),
            "y": numpy.random.rand(8, 1).astype("float32")}
    out, = train_exe.run(fetch_list=[avg_loss.name], feed=feed)
    print("OK", train_exe.device_count, out.shape)
"""


@pytest.mark.parametrize("source,expected", [(WITH_DATA_PARALLEL, "OK (2,)"),
                                             (BUILD_STRATEGY, "OK (2,)"),
                                             (EXECUTION_STRATEGY, "OK 2 (2,)")],
                         ids=["with_data_parallel", "BuildStrategy", "ExecutionStrategy"])
@pytest.mark.slow
def test_paddle_example_runs_with_cpu_num_2(source, expected):
    assert expected in run_example(source)
