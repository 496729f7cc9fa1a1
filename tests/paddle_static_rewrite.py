"""The static rewrite of Paddle 2.6.2's eager docstring examples (issue 28's first Done-when):
the same rewritten source runs in real Paddle (tests/fixtures/make_paddle_layer_examples.py)
and in numbaflow (tests/nn/test_paddle_layer_examples.py), both in static mode.

Paddle's Layer examples are dygraph: `paddle.to_tensor`, eager calls, `set_value` on a live
parameter, `loss.backward()`. numbaflow is static-only (SPEC), so `rewrite` turns each eager
idiom into its static spelling and keeps every other call as written:

- imports: `import paddle.nn as nn` -> `nn = paddle.nn` (the framework module given);
  an import the rewritten code no longer uses is dropped;
- "to_tensor": `paddle.to_tensor(data)` / `to_variable(data)` -> a `static.data` fed that value;
- "random": `paddle.rand/randn/uniform/randint(...)` -> a `static.data` fed one seeded numpy
  draw, so both frameworks see the same numbers and values can be compared (numpy's global
  generator, which some examples draw from, is seeded too);
- "set_value": `param.set_value(v)` -> set in the scope after the startup program ran;
- "train_step": `loss.backward()` / `opt.step()` / `opt.clear_grad()` -> `opt.minimize(loss)`
  (of `paddle.sum(loss)` for a non-scalar loss: dygraph seeds its gradient with ones);
- "dygraph_only": `paddle.disable_static()` dropped, `with base.dygraph.guard():` unwrapped;
- "build_time_shape": `paddle.prod(paddle.to_tensor(shape))`, a length computed from a
  tensor, -> the int itself: a static graph's shapes are fixed when it is built (numbaflow's
  plans are static-shape; Paddle gives the same result either way).

After the startup program, every parameter a random initializer drew is overwritten with a
seeded numpy draw (both frameworks alike), so values are comparable there too.
`run(pd, source)` -> {"rewrites": [...], "vars": {name: ndarray}} or {"raises": "..."}.
"""
import ast
import contextlib
import io

import numpy as np

from paddle_examples_runner import _programs

RANDOM = ("rand", "randn", "uniform", "randint")
TRAIN = ("backward", "step", "clear_grad")
RANDOM_INIT = ("uniform_random", "gaussian_random", "truncated_gaussian_random")


def _dotted(node):
    """'a.b.c' for a Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return head and f"{head}.{node.attr}"
    return None


def _session_call(attr, args, keywords):
    return ast.Call(ast.Attribute(ast.Name("_static", ast.Load()), attr, ast.Load()),
                    args, keywords)


class _Rewrite(ast.NodeTransformer):
    def __init__(self, random):
        self.kinds, self.random = set(), random

    def visit_Import(self, node):
        out = []
        for a in node.names:
            if a.name.split(".")[0] != "paddle":
                out.append(ast.Import([a]))
            elif a.asname:          # `import paddle` / `import paddle.nn`: paddle is bound
                out.append(ast.Assign([ast.Name(a.asname, ast.Store())],
                                      ast.parse(a.name, mode="eval").body))
        return out

    def visit_ImportFrom(self, node):
        if not (node.module or "").startswith("paddle"):
            return node
        out = []
        for a in node.names:
            value = (ast.Attribute(ast.Name("_static", ast.Load()), "to_tensor", ast.Load())
                     if a.name == "to_variable"
                     else ast.parse(f"{node.module}.{a.name}", mode="eval").body)
            out.append(ast.Assign([ast.Name(a.asname or a.name, ast.Store())], value))
        return out

    def visit_With(self, node):
        self.generic_visit(node)
        if any((_dotted(i.context_expr.func) or "").endswith("dygraph.guard")
               for i in node.items if isinstance(i.context_expr, ast.Call)):
            self.kinds.add("dygraph_only")
            return node.body
        return node

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Call) and _dotted(node.value.func) == "paddle.disable_static":
            self.kinds.add("dygraph_only")
            return None
        return self.generic_visit(node)

    def visit_Call(self, node):
        name = _dotted(node.func) or ""
        if name == "paddle.prod" and node.args and isinstance(node.args[0], ast.Call) \
                and _dotted(node.args[0].func) == "paddle.to_tensor":
            self.kinds.add("build_time_shape")
            return _session_call("numel", node.args[0].args[:1], [])
        self.generic_visit(node)
        if name in ("paddle.to_tensor", "to_variable"):
            self.kinds.add("to_tensor")
            return _session_call("to_tensor", node.args, node.keywords)
        if self.random and name.startswith("paddle.") and name[7:] in RANDOM:
            self.kinds.add("random")
            return _session_call(name[7:], node.args, node.keywords)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("set_value",) + TRAIN:
            self.kinds.add("set_value" if node.func.attr == "set_value" else "train_step")
            return _session_call(node.func.attr, [node.func.value, *node.args], node.keywords)
        return node


def rewrite(source, random=True):
    """(rewritten source, sorted rewrite kinds) of one example (see the module docstring);
    random=False keeps the random draws as written."""
    tree = _Rewrite(random)
    module = ast.fix_missing_locations(tree.visit(ast.parse(source)))
    used = {n.id for n in ast.walk(module) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}
    # an import whose name the rewritten code never reads (base after dygraph.guard went)
    module.body = [s for s in module.body if not (
        isinstance(s, ast.Assign) and isinstance(s.value, ast.Attribute)
        and _dotted(s.value) and _dotted(s.value).startswith("paddle.")
        and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id not in used)]
    return ast.unparse(module) + "\n", sorted(tree.kinds)


def _dtype_name(dtype):
    return None if dtype is None else str(dtype).replace("paddle.", "").replace("VarType.", "").lower()


class StaticSession:
    """What the rewritten calls go to: feeds, deferred parameter values, the train step."""

    def __init__(self, pd, seed=2024):
        self.pd, self.rng = pd, np.random.default_rng(seed)
        self.feed, self.values, self.loss = {}, [], None

    def _data(self, value):
        name = f"fed_{len(self.feed)}"
        self.feed[name] = value
        return self.pd.static.data(name, list(value.shape), str(value.dtype))

    def to_tensor(self, data, dtype=None, place=None, stop_gradient=True):
        if not isinstance(data, np.ndarray):
            data = np.array(data)
            if data.dtype == np.float64:      # Python floats: Paddle's default float32
                data = data.astype("float32")
        value = data if dtype is None else data.astype(_dtype_name(dtype))
        var = self._data(value)
        var.stop_gradient = stop_gradient
        return var

    def rand(self, shape, dtype=None, name=None):
        return self._data(self.rng.random(tuple(shape)).astype(_dtype_name(dtype) or "float32"))

    def randn(self, shape, dtype=None, name=None):
        return self._data(self.rng.standard_normal(tuple(shape)).astype(
            _dtype_name(dtype) or "float32"))

    def uniform(self, shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):
        return self._data(self.rng.uniform(min, max, tuple(shape)).astype(
            _dtype_name(dtype) or "float32"))

    def randint(self, low=0, high=None, shape=(1,), dtype=None, name=None):
        low, high = (0, low) if high is None else (low, high)
        return self._data(self.rng.integers(low, high, tuple(shape)).astype(
            _dtype_name(dtype) or "int64"))

    @staticmethod
    def numel(shape):
        return int(np.prod(shape))

    def set_value(self, param, value):
        self.values.append((param, self.feed[value.name] if hasattr(value, "name")
                            and value.name in self.feed else np.asarray(value)))

    def backward(self, loss):
        # dygraph seeds a non-scalar loss's gradient with ones: the gradient of its sum
        self.loss = loss if int(np.prod(loss.shape)) == 1 else self.pd.sum(loss)

    def step(self, optimizer):
        optimizer.minimize(self.loss)

    def clear_grad(self, optimizer):
        pass

    def after_startup(self, startup, scope, place):
        """Seeded values for randomly initialized parameters, then the examples' own."""
        draws = np.random.default_rng(7)
        for op in startup.global_block().ops:
            if op.type in RANDOM_INIT:
                for name in op.output_arg_names:
                    shape = np.asarray(scope.find_var(name).get_tensor()).shape
                    fan_in = int(np.prod(shape[1:])) if len(shape) > 2 else shape[0]
                    bound = 1.0 / np.sqrt(max(fan_in, 1))
                    self._set(scope, name, draws.uniform(-bound, bound, shape), place)
        for param, value in self.values:
            self._set(scope, param.name, value, place)

    @staticmethod
    def _set(scope, name, value, place):
        tensor = scope.find_var(name).get_tensor()
        tensor.set(np.asarray(value).astype(np.asarray(tensor).dtype), place)


def run(pd, source, random=True):
    """Rewrite `source`, run it in static mode with `pd` as paddle (see the module docstring);
    random=False keeps the example's random draws (its values are then its own)."""
    code, kinds = rewrite(source, random)
    pd.enable_static()
    main, startup = pd.static.Program(), pd.static.Program()
    scope, place = pd.static.Scope(), pd.CPUPlace()
    session = StaticSession(pd)
    np.random.seed(2024)        # an example's own np.random draws (BatchNorm's) alike too
    namespace = {"__name__": "example", "paddle": pd, "_static": session}
    try:
        with pd.static.program_guard(main, startup), pd.static.scope_guard(scope), \
                contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, "example", "exec"), namespace)     # noqa: S102
            found = {k: v for k, v in namespace.items()
                     if isinstance(v, pd.static.Variable) and not k.startswith("_")}
            exe = pd.static.Executor(place)
            exe.run(startup)
            session.after_startup(startup, scope, place)
            out = {}
            for prog in (main, startup):
                names = [k for k, v in found.items() if _programs(pd, main, startup, v) is prog]
                if names:
                    values = exe.run(prog, feed=session.feed if prog is main else None,
                                     fetch_list=[found[k] for k in names])
                    out.update(zip(names, (np.asarray(v) for v in values)))
    except Exception as e:      # the example's outcome is what is compared
        return {"rewrites": kinds,
                "raises": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    return {"rewrites": kinds, "vars": out}
