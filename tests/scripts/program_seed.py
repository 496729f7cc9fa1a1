"""Two fc layers (Normal initializer) and dropout, built and run once with the seeds that
argv[1] names (`paddle.seed=N`, `program=N`, joined by `+`); prints their parameters and
output as one JSON line. Run by tests/graph/test_program_seed.py in two processes."""
import json, sys
import numpy as np
import numbaflow as paddle, numbaflow.static as static
modes = dict(m.split("=") for m in sys.argv[1].split("+") if "=" in m)
if "paddle.seed" in modes:
    paddle.seed(int(modes["paddle.seed"]))
main, startup = static.Program(), static.Program()
if "program" in modes:
    main.random_seed = startup.random_seed = int(modes["program"])
with static.program_guard(main, startup):
    x = static.data("x", [None, 8], "float32")
    h = static.nn.fc(x, 8, weight_attr=paddle.ParamAttr(
        initializer=paddle.nn.initializer.Normal()))
    out = paddle.nn.functional.dropout(static.nn.fc(h, 4), p=0.5)
exe = static.Executor(paddle.CPUPlace())
exe.run(startup)
got, = exe.run(main, feed={"x": np.ones((4, 8), "float32")}, fetch_list=[out])
scope = static.global_scope()
print(json.dumps({"params": {p.name: np.asarray(scope.get(p.name)).tolist()
                             for p in main.all_parameters()},
                  "out": np.asarray(got).tolist()}))
