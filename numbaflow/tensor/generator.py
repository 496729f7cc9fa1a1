"""Layer functions built from a table, as Paddle's layer_function_generator: where a wrapper
only checks x, turns its float arguments into op attributes and appends one registered op,
a row (the function, the op, its formula, the arguments) gives the function, with a real
signature, and its docstring, with an example that runs. A row for an op the registry lacks
fails at import."""
from __future__ import annotations

from ..graph.program import Variable  # noqa: F401  (the generated annotations name it)
from ..kernels.registry import get_op_def
from ..layer_helper import LayerHelper
from ._helpers import check_variable

# (module, function) -> (op, [(argument, default, op attribute, (rule, check) or None)], fixed)
_ROWS = {}

_TEMPLATE = """
def {fn}(x: Variable{sig}, name: str | None = None) -> Variable:
    return _apply(({module!r}, {fn!r}), x, name, {values})
"""


def _apply(key, x, name, values):
    op, args, fixed = _ROWS[key]
    check_variable(x, key[1])
    attrs = dict(fixed)
    for (arg, _, attr, check), v in zip(args, values):
        v = float(v)
        if check and not check[1](v):
            raise ValueError(f"{key[1]}: {arg} must satisfy {check[0].replace('x', arg)}, "
                             f"got {v}")
        attrs[attr] = v
    return LayerHelper(op, name).simple(op, {"X": x}, attrs or None)


def shared_doc(**pieces):
    """Decorator: fill each `{name}` of a function's or class's docstring with pieces[name],
    an argument list or a Returns line that several wrappers share, written once (indent a
    piece's later lines as the docstring's Args lines are)."""
    def fill(obj):
        doc = obj.__doc__
        for key, text in pieces.items():
            doc = doc.replace("{" + key + "}", text)
        obj.__doc__ = doc
        return obj
    return fill


def named(fn, name, module, doc):
    """`fn` as the public function `name` of `module`, documented by `doc`."""
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    fn.__doc__ = doc
    return fn


def elementwise(fn: str, op: str, formula: str, module: str, spelling: str,
                args: tuple = (), fixed: dict | None = None):
    """The function `fn`(x, <args: floats>, name=None) of `module`, appending op `op` with
    the args as attributes (checked by their rule) plus the `fixed` ones, documented by
    `formula` with an example calling `spelling` (e.g. 'F.elu')."""
    get_op_def(op)
    _ROWS[(module, fn)] = (op, list(args), dict(fixed or {}))
    src = _TEMPLATE.format(fn=fn, module=module,
                           sig="".join(f", {a}: float = {d!r}" for a, d, _, _ in args),
                           values="(" + "".join(f"{a}, " for a, _, _, _ in args) + ")")
    ns = {}
    exec(compile(src, f"<{spelling}>", "exec", dont_inherit=False), globals(), ns)  # noqa: S102
    arg_doc = "".join(f"        {a} (float): default {d!r} (op attribute `{at}`).\n"
                      for a, d, at, _ in args)
    return named(ns[fn], fn, module, f"{formula}, elementwise (op `{op}`).\n\n    Args:\n"
                 f"        x (Variable): the input.\n{arg_doc}"
                 f"        name (str, optional): a prefix for the output's name.\n\n"
                 f"    Returns:\n        Variable: x's shape and dtype.\n\n"
                 f"    Example:\n        >>> x = static.data('x', [None, 3])\n"
                 f"        >>> {spelling}(x).shape\n        (-1, 3)\n    ")
