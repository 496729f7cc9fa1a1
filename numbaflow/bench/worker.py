"""One framework's training step of a `models/` case, in its own process.

    PYTHON numbaflow/bench/worker.py FRAMEWORK     (FRAMEWORK: numbaflow, paddle, torch,
                                                    torch.compile, jax or onnxruntime)

Started by numbaflow/bench/model_rows.py with the interpreter the user named for that
framework (`--peer-python jax=/path/to/python`), so every framework keeps its own venv
(Paddle's numpy 1 never meets numbaflow's numpy 2). It is a plain script: it imports only
the sibling files models.py and peer_models.py, and the framework itself.

The parent sets the thread environment before the start (OMP/MKL/OpenBLAS/numba threads,
passive OpenMP waiting, a short OpenBLAS spin), and sends one JSON command per line on
stdin; each answer is one line `@@ {json}` on stdout (frameworks may print other lines):

    {"cmd": "setup", "model": "cnn", "dir": D,  build; the reference (numbaflow at the
     "reference": true, "batch": 16}             budget) writes its initial weights and
                                                 the batch (of the model's size, or of
                                                 `batch` samples) to D, the others read them
    {"cmd": "losses", "steps": 3}                the losses of the next steps (of an
                                                 inference model: its outputs, flat)
    {"cmd": "warmup", "steps": 10}               run steps, wait for background compiles
    {"cmd": "time", "steps": 5, "settle": 1}     seconds of the next `steps` steps (and
                                                 the median step's), after `settle`
                                                 untimed ones
    {"cmd": "quit"}

Arrays travel as raw little-endian files plus an index (D/index.json), so a torch venv
without numpy can read them too.
"""
import json
import os
import resource
import sys
import time

MARK = "@@ "
ONNX_FILE = "model.onnx"    # an inference model's export, beside the arrays


# ------------------------------------------------------------------ array files
def write_arrays(d, arrays):
    """Write {name: numpy array} as D/<i>.bin plus D/index.json (dtype, shape per name)."""
    import numpy as np
    index = {}
    for i, (name, a) in enumerate(arrays.items()):
        a = np.ascontiguousarray(a)
        a.tofile(os.path.join(d, f"{i}.bin"))
        index[name] = {"file": f"{i}.bin", "dtype": a.dtype.name, "shape": list(a.shape)}
    with open(os.path.join(d, "index.json"), "w", encoding="utf-8") as f:
        json.dump(index, f)


def read_index(d):
    with open(os.path.join(d, "index.json"), encoding="utf-8") as f:
        return json.load(f)


def read_numpy(d):
    import numpy as np
    return {name: np.fromfile(os.path.join(d, e["file"]), dtype=e["dtype"]).reshape(e["shape"])
            for name, e in read_index(d).items()}


# ------------------------------------------------------------------ static graph frameworks
class StaticStep:
    """numbaflow or paddle: the program of models.py, run by an Executor."""

    def __init__(self, framework, model, d, reference, batch=None):
        import numpy as np
        try:
            from . import models
        except ImportError:     # run as a script (see the end of this file)
            import models
        if framework == "numbaflow":
            import numbaflow as pd
        else:
            os.environ.setdefault("FLAGS_enable_pir_api", "0")   # Paddle 3: the old Program API
            import paddle as pd
        pd.enable_static()
        self.framework, self.np = framework, np
        self.built = models.PROGRAMS[model](pd)
        self.infer = model in models.INFER      # run `test`, fetch the output, no update
        self.program, self.fetch = ((self.built.test, self.built.output) if self.infer else
                                    (self.built.main, self.built.loss))
        self.place = pd.CPUPlace()
        self.exe, self.scope = pd.static.Executor(self.place), pd.static.Scope()
        self.exe.run(self.built.startup, scope=self.scope)
        names = models.parameters(self.built)
        if reference:       # numbaflow's weights and batch: what every other worker starts from
            self.feed = models.batch(model, batch_size=batch)
            params = {n: np.array(self.scope.find_var(n).get_tensor()) for n in names}
            write_arrays(d, {**{"param:" + k: v for k, v in params.items()},
                             **{"feed:" + k: v for k, v in self.feed.items()}})
            if self.infer:  # what onnxruntime runs: numbaflow's own export of `test`
                block = self.program.global_block()
                pd.onnx.export(self.program, [block.var(k) for k in self.feed], [self.fetch],
                               os.path.join(d, ONNX_FILE), scope=self.scope)
        else:
            arrays = read_numpy(d)
            self.feed = {k[5:]: v for k, v in arrays.items() if k.startswith("feed:")}
            for n in names:
                # a parameter numbaflow does not have keeps its own init: Paddle's nn.LSTM
                # adds a coalesced copy of its weights for cuDNN (lstm_0.w_0) that the CPU
                # rnn kernel does not read; the losses' agreement checks the rest
                if "param:" + n in arrays:
                    self.scope.find_var(n).get_tensor().set(arrays["param:" + n], self.place)

    def step(self):
        """One training step's loss (a float), or an inference model's output (an array)."""
        out, = self.exe.run(self.program, feed=self.feed, fetch_list=[self.fetch],
                            scope=self.scope)
        if self.infer:
            return out
        if self.built.scheduler is not None:
            self.built.scheduler.step()
        return float(self.np.asarray(out).ravel()[0])

    def settle(self):
        """numbaflow compiles segments in the background: time the steady state."""
        if self.framework == "numbaflow":
            from numbaflow.executor.segments import wait_for_compiles
            wait_for_compiles()


def make_step(framework, model, d, reference=False, batch=None):
    if framework in ("numbaflow", "paddle"):
        return StaticStep(framework, model, d, reference, batch)
    if reference:
        raise ValueError(f"the reference worker is numbaflow's, not {framework}'s")
    try:
        from . import peer_models
    except ImportError:     # run as a script
        import peer_models
    if framework in ("torch", "torch.compile"):
        return peer_models.TorchStep(model, read_index(d), d, compile=framework != "torch")
    if framework == "jax":
        return peer_models.JaxStep(model, read_index(d), d)
    if framework == "onnxruntime":
        return peer_models.OnnxStep(os.path.join(d, ONNX_FILE), read_numpy(d))
    raise ValueError(f"unknown framework {framework!r}; expected numbaflow, paddle, torch, "
                     f"torch.compile, jax or onnxruntime")


def values(v):
    """A training step's loss as it is, an inference output as a flat list of floats."""
    return v if isinstance(v, float) else [float(x) for x in v.ravel()]


def peak_rss_mb():
    """Peak resident memory of this process (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def serve(framework, stdin=sys.stdin, stdout=sys.stdout):
    """Answer the parent's commands until `quit` (or end of input)."""
    step = None
    for line in stdin:
        msg = json.loads(line)
        cmd = msg["cmd"]
        try:
            if cmd == "setup":
                t0 = time.perf_counter()
                step = make_step(framework, msg["model"], msg["dir"],
                                 msg.get("reference", False), msg.get("batch"))
                out = {"setup_s": time.perf_counter() - t0}
            elif cmd == "losses":
                out = {"losses": [values(step.step()) for _ in range(msg["steps"])]}
            elif cmd == "warmup":
                t0 = time.perf_counter()
                last = [step.step() for _ in range(msg["steps"])][-1]
                step.settle()
                out = {"seconds": time.perf_counter() - t0, "loss": values(last)}
            elif cmd == "time":
                for _ in range(msg.get("settle", 0)):
                    step.step()
                each = []
                t0 = time.perf_counter()
                for _ in range(msg["steps"]):
                    t = time.perf_counter()
                    last = step.step()
                    each.append(time.perf_counter() - t)
                out = {"seconds": time.perf_counter() - t0, "loss": values(last),
                       "median_step": sorted(each)[len(each) // 2]}
            elif cmd == "quit":
                return
            else:
                raise ValueError(f"unknown command {cmd!r}")
            out["rss_mb"] = peak_rss_mb()
        except Exception as e:  # the parent reports it as the row's error
            out = {"error": f"{type(e).__name__}: {e}"}
        stdout.write(MARK + json.dumps(out) + "\n")
        stdout.flush()


if __name__ == "__main__":
    # run as a script: this file's directory is sys.path[0], so `import models` finds the
    # sibling file without importing the numbaflow package (absent from the peers' venvs)
    serve(sys.argv[1])
