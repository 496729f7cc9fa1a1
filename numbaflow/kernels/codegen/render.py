"""Render a traced scalar DAG (`scalar.Sym`) as straight-line Python/numba source.

Shared by every template: the CPU loop template now, the CUDA grid-stride template and
the fusion pass later. Each DAG node becomes one SSA line, so a value used twice is
computed once.
"""
import numpy as np

_FORMATS = {
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
    "pow": "({0} ** {1})", "neg": "(-{0})",
    "gt": "({0} > {1})", "ge": "({0} >= {1})", "lt": "({0} < {1})", "le": "({0} <= {1})",
    "eq": "({0} == {1})", "ne": "({0} != {1})",
    "exp": "_exp({0})", "log": "math.log({0})", "sqrt": "math.sqrt({0})",
    "tanh": "math.tanh({0})", "erf": "_erf({0})", "abs": "abs({0})",
    "max": "max({0}, {1})", "min": "min({0}, {1})",
    "where": "({1} if {0} else {2})",
    "sign": "(_F(1.0) if {0} > _F(0.0) else (_F(-1.0) if {0} < _F(0.0) else _F(0.0)))",
}


def render_const(value):
    """Floats become `_F(v)` (the kernel's float type) so float32 math stays float32."""
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    v = float(value)
    if v != v:
        return "_F(np.nan)"
    if v in (float("inf"), float("-inf")):
        return "_F(np.inf)" if v > 0 else "_F(-np.inf)"
    return f"_F({v!r})"


def render_cast(expr, dtype):
    if dtype == np.bool_:
        return f"({expr} != 0)"
    return f"np.{np.dtype(dtype).name}({expr})"


def render(outputs, input_exprs, prefix="t"):
    """Return (lines, output_exprs) computing `outputs` (Syms) from `input_exprs`.

    `input_exprs[i]` is the source expression that loads input i (e.g. ``in0[b0 + j]``);
    only inputs the body uses are loaded.
    """
    lines, names = [], {}

    def emit(sym):
        key = id(sym)
        if key in names:
            return names[key]
        if sym.op == "in":
            expr = input_exprs[sym.value]
        elif sym.op == "const":
            names[key] = render_const(sym.value)
            return names[key]
        elif sym.op == "cast":
            expr = render_cast(emit(sym.args[0]), sym.value)
        else:
            expr = _FORMATS[sym.op].format(*[emit(a) for a in sym.args])
        name = f"{prefix}{len(lines)}"
        lines.append(f"{name} = {expr}")
        names[key] = name
        return name

    out_exprs = [emit(o) for o in outputs]
    return lines, out_exprs


def inputs_used(outputs):
    """Indices of the inputs a traced body reads."""
    seen, used, stack = set(), set(), list(outputs)
    while stack:
        sym = stack.pop()
        if id(sym) in seen:
            continue
        seen.add(id(sym))
        if sym.op == "in":
            used.add(sym.value)
        stack.extend(sym.args)
    return used
