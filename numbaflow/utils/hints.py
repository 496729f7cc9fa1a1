"""The messages for the mistakes a newcomer from Paddle 2.x (or PyTorch) makes first.

Each says what was given, what was expected and the fix; the lines that raise them (in
the executor, the layers and the package's ``__getattr__``) stay one line each. This is a
base-layer module: it only looks at the objects it is handed (a block's ``vars``, a
variable's ``shape``), it imports nothing above it.
"""
from __future__ import annotations

import difflib
import functools

STATIC_ONLY = ("numbaflow is static-graph only (Paddle's paddle.static API: the layers "
               "build a Program, and exe.run executes it; there is no dygraph / eager mode)")

# Paddle's dygraph (eager) names -> what to write in a static program instead
DYGRAPH = {
    "to_tensor": "declare the input with x = static.data(name='x', shape=[None, ...], "
                 "dtype='float32') and feed a numpy array at run time: exe.run(main, "
                 "feed={'x': array}, fetch_list=[...]); for a constant in the program use "
                 "paddle.assign(array) or paddle.full(shape, value)",
    "no_grad": "build a separate program for evaluation: test_prog = main.clone(for_test=True)"
               " before optimizer.minimize(loss)",
    "backward": "call optimizer.minimize(loss) once while building the program (or "
                "static.append_backward(loss) for the gradients alone); then every "
                "exe.run(main, feed=..., fetch_list=[loss]) computes the gradients and "
                "updates the parameters",
    "numpy": "a Variable has no value until the program runs: fetch it, "
             "(value,) = exe.run(main, feed=..., fetch_list=[var]), a numpy array",
    "item": "fetch the Variable, (value,) = exe.run(main, feed=..., fetch_list=[var]), then "
            "float(value)",
}


class StaticGraphOnlyError(AttributeError):
    """A dygraph (eager) name was used: numbaflow builds static programs only. An
    AttributeError, so `hasattr(paddle, 'to_tensor')` stays False."""


def dygraph_attribute(owner, name):
    """The error for ``owner.name`` (owner: 'numbaflow', 'numbaflow.nn', 'Variable'): a
    StaticGraphOnlyError when `name` is a dygraph name, else a plain AttributeError.

    >>> str(dygraph_attribute("numbaflow", "to_tensor")).split(":")[0]
    'numbaflow.to_tensor does not exist'
    """
    fix = DYGRAPH.get(name)
    if fix is None:
        return AttributeError(f"module {owner!r} has no attribute {name!r}")
    return StaticGraphOnlyError(f"{owner}.{name} does not exist: {STATIC_ONLY}. Instead, "
                                f"{fix}.")


def close_names(name, candidates, n=3):
    """Up to `n` of `candidates` that look like `name` (case-insensitively)."""
    lower = {c.lower(): c for c in candidates}
    return [lower[m] for m in difflib.get_close_matches(name.lower(), list(lower), n=n,
                                                        cutoff=0.5)]


def _scalars(block):
    """Names of the block's non-persistable one-value variables (losses, metrics)."""
    return [n for n, v in block.vars.items()
            if not v.persistable and "@" not in n and tuple(v.shape) in ((), (1,))]


def unknown_fetch(name, block):
    """The message for fetching `name`, which `block` does not have: most often the Python
    name of a Variable (``fetch_list=["loss"]``) instead of the Variable or its name."""
    close = close_names(name, list(block.vars))
    scalars = _scalars(block)[:5]
    return (f"fetch_list: the program has no variable named {name!r}. fetch_list takes the "
            f"Variables the layers returned (fetch_list=[loss]) or their names in the program "
            f"(loss.name), not the name of a Python variable"
            + (f"; did you mean {', '.join(map(repr, close))}?" if close else ".")
            + (f" This program's one-value variables: {', '.join(map(repr, scalars))}."
               if scalars else ""))


def foreign_fetch(var, block):
    """The message for fetching Variable `var` that belongs to another program than the
    one run (and that program has no variable of its name)."""
    n = len(block.ops)
    return (f"fetch_list: Variable {var.name!r} belongs to another program (one of "
            f"{len(var.block.ops)} ops) than the program being run ({n} ops), which has no "
            f"variable of that name. Run the program that computes it "
            f"(exe.run(that_program, ...)), or fetch a Variable built in this program "
            f"(inside its `with static.program_guard(...)`).")


def default_program_feed(program, feed):
    """Raise when exe.run was given no program (so the default main program runs) and the
    feed names variables that program does not have: the layers were built in another
    program (``with static.program_guard(main, startup):``) that was not passed."""
    if not isinstance(feed, dict):
        return
    block = program.global_block()
    missing = [k for k in feed if isinstance(k, str) and k not in block.vars]
    if missing:
        raise ValueError(
            f"exe.run() was given feed={{{', '.join(map(repr, missing))}: ...}} but no "
            f"program, so it ran the default main program (static.default_main_program(), "
            f"{len(block.ops)} ops), which has no variable {missing[0]!r}. Pass the program "
            f"the layers were built in: exe.run(main, feed=..., fetch_list=[...]) (the `main` "
            f"of `with static.program_guard(main, startup):`).")


def one_place_feed(feed):
    """The feed dict of a run on one place. Paddle's Executor also takes a list holding one
    feed dict (a DataLoader with one place yields that); a longer list is one dict per
    place, which only a data-parallel CompiledProgram takes.

    >>> one_place_feed([{'x': 1}])
    {'x': 1}
    """
    if isinstance(feed, dict):
        return feed
    if isinstance(feed, (list, tuple)) and all(isinstance(f, dict) for f in feed):
        if len(feed) == 1:
            return feed[0]
        raise TypeError(
            f"feed is a list of {len(feed)} dicts, one per place (as a DataLoader with "
            f"places of {len(feed)} devices yields), but the program is a plain Program, "
            f"which runs on one place and takes one dict {{name: array}}. Either give the "
            f"DataLoader one place (places=paddle.CPUPlace()), or run a data-parallel "
            f"program: static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, "
            f"places=static.cpu_places({len(feed)})).")
    if isinstance(feed, (list, tuple)) and feed and all(hasattr(f, "shape") for f in feed):
        raise TypeError(
            f"feed is a {type(feed).__name__} of {len(feed)} arrays (as a DataLoader with "
            f"return_list=True yields), but exe.run takes a dict {{name: array}}. Build the "
            f"DataLoader with feed_list=[x, y] and return_list=False to get feed dicts, or "
            f"write feed={{'x': batch[0], 'y': batch[1]}}.")
    raise TypeError(f"feed must be a dict {{name: array}} (or a list holding one such dict), "
                    f"got {type(feed).__name__}; e.g. exe.run(main, feed={{'x': x_array}}, "
                    f"fetch_list=[loss])")


def renamed_arguments(where, note="", **renames):
    """Decorate a layer function so that an argument named as in another API (`old=`) gets
    a TypeError naming this API's argument (`renames = {old: new}`), e.g. fc's act=;
    `note` is added to the message.

    >>> @renamed_arguments("f", act="activation")
    ... def f(x, activation=None):
    ...     return activation
    >>> f(1, act="relu")
    Traceback (most recent call last):
    ...
    TypeError: f() got act='relu', but this function names it activation: write f(..., activation='relu')
    """
    def wrap(func):
        @functools.wraps(func)
        def checked(*args, **kwargs):
            for old, new in renames.items():
                if old in kwargs and new not in kwargs:
                    raise TypeError(f"{where}() got {old}={kwargs[old]!r}, but this function "
                                    f"names it {new}: write {where}(..., "
                                    f"{new}={kwargs[old]!r})" + (f" ({note})" if note else ""))
            return func(*args, **kwargs)
        return checked
    return wrap
