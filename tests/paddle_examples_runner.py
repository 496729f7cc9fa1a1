"""Run one of Paddle 2.6.2's documented examples (tests/fixtures/paddle_examples/*.py, taken
from Paddle's docstrings by tests/fixtures/make_paddle_examples.py) in static mode with a
given framework module as `paddle`: real Paddle (the fixture script) or numbaflow (the test,
tests/graph/test_paddle_examples.py). Only the import changes.

`run(pd, source)` -> {name: {"shape", "dtype", "value"}} for every Variable the example
binds, fetched after running the startup program and the program holding it; or
{"raises": "<ExceptionType>: message"} when building or running raises."""
import numpy as np


def _programs(pd, main, startup, var):
    for prog in (main, startup):
        if var.name in prog.global_block().vars:
            return prog
    return None


def run(pd, source):
    pd.enable_static()
    main, startup = pd.static.Program(), pd.static.Program()
    scope = pd.static.Scope()
    namespace = {"__name__": "example"}
    code = source.replace("import paddle\n", "", 1)
    try:
        with pd.static.program_guard(main, startup), pd.static.scope_guard(scope):
            namespace["paddle"] = pd
            exec(compile(code, "example", "exec"), namespace)     # noqa: S102
            found = {k: v for k, v in namespace.items()
                     if isinstance(v, pd.static.Variable) and not k.startswith("_")}
            exe = pd.static.Executor(pd.CPUPlace())
            exe.run(startup)
            out = {}
            for prog in (main, startup):
                names = [k for k, v in found.items() if _programs(pd, main, startup, v) is prog]
                if not names:
                    continue
                values = exe.run(prog, fetch_list=[found[k] for k in names])
                for k, v in zip(names, values):
                    v = np.asarray(v)
                    out[k] = {"shape": list(v.shape), "dtype": str(v.dtype),
                              "value": v.tolist() if v.size <= 64 else None}
    except Exception as e:      # the example's outcome is what is compared
        return {"raises": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    return out
