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
    "tanh": "math.tanh({0})", "sin": "math.sin({0})", "cos": "math.cos({0})", "erf": "_erf({0})", "abs": "abs({0})",
    "max": "max({0}, {1})", "min": "min({0}, {1})",
    "where": "({1} if {0} else {2})", "mod": "_fmod({0}, {1})",
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


# Integer arithmetic stays integer (Paddle's integer kernels; numpy's for + - * and
# max/min): a float constant meeting an integer operand is rendered as an integer
# literal when it is integral (`x * 1.0 + 1.0` on int64 must not pass through float64,
# which holds only 53 bits), and `/` and `mod` of two integers are `_idiv` / `_imod`:
# truncation toward zero (C, Paddle) and the divisor's sign (Python, Paddle), each with a
# typed error on a zero divisor instead of numpy's silent 0 / INT_MIN.
_INT_KINDS = "iub"
_FLOAT_FUNCS = ("exp", "log", "sqrt", "tanh", "erf", "sin", "cos")
_BOOL_OPS = ("gt", "ge", "lt", "le", "eq", "ne")
_DIVISIONS = ("div", "mod")

# The bodies of the division helpers; each template adds its decorator and the statement
# that flags a zero integer divisor (the CPU sets err[0], a GPU kernel its error record).
_IDIV_BODY = """
def _idiv(a, b, err):
    # integer a / b truncated toward zero (C, Paddle)
    if b == 0:
        {flag}
        return a - a
    if b == -1:
        return -a          # wraps at INT_MIN as numpy does (a // -1 would give 0)
    q = a // b
    if q * b != a and (a < 0) != (b < 0):
        q += 1
    return q
"""
_IMOD_BODY = """
def _imod(a, b, err):
    # integer a mod b with the divisor's sign (numba's % is Python's)
    if b == 0:
        {flag}
        return a - a
    if b == -1:
        return a - a       # INT_MIN % -1 would trap in the hardware division
    return a % b
"""
_FMOD_BODY = """
def _fmod(a, b):
    # float a mod b with the divisor's sign (numba's % is numpy's remainder); NaN for a
    # zero divisor, as numpy, whatever the target's error model
    if b == 0:
        return _F(np.nan)
    return a % b
"""


def division_helpers(lines, decorator, div_flag, mod_flag):
    """Source of the division helpers that rendered `lines` call, each under `decorator`;
    a zero integer divisor runs the statement `div_flag` (in `_idiv`) or `mod_flag`."""
    src = []
    for name, body, flag in (("_idiv(", _IDIV_BODY, div_flag), ("_imod(", _IMOD_BODY, mod_flag),
                             ("_fmod(", _FMOD_BODY, "")):
        if any(name in line for line in lines):
            src.append(decorator + body.format(flag=flag))
    return "\n".join(src)


ZERO_DIVISION_MESSAGE = ("integer division by zero: the divisor holds a 0 (Paddle raises here "
                         "too); replace zeros first, e.g. where(y == 0, 1, y), or divide floats")
ZERO_MODULO_MESSAGE = ("integer modulo by zero: the divisor holds a 0 (Paddle raises here too); "
                       "replace zeros first, e.g. where(y == 0, 1, y)")


def _kind(dt):
    """'i' (integer or bool), 'f' (float) or None (a Python constant: it takes the kind of
    what it meets, as numpy's weak scalars do)."""
    if dt is None:
        return None
    return "i" if np.dtype(dt).kind in _INT_KINDS else "f"


def _join(*kinds):
    known = [k for k in kinds if k is not None]
    if not known:
        return None
    return "f" if "f" in known else "i"


def _integral(value):
    if isinstance(value, (bool, np.bool_)):
        return False
    try:
        return float(value).is_integer()
    except (TypeError, OverflowError):
        return False


def _whole_power(exponent):
    """A constant exponent that keeps an integer power integer (whole and >= 0), or a
    traced one (its kind decides)."""
    if exponent.op != "const":
        return True
    return _integral(exponent.value) and float(exponent.value) >= 0


def render(outputs, input_exprs, prefix="t", in_dtypes=None):
    """Return (lines, output_exprs) computing `outputs` (Syms) from `input_exprs`.

    `input_exprs[i]` is the source expression that loads input i (e.g. ``in0[b0 + j]``);
    only inputs the body uses are loaded. With `in_dtypes` (one per input), integer
    operands keep integer arithmetic (see above); a body that divides integers then
    calls `_idiv(a, b, err)` / `_imod(a, b, err)`, and the template must define them
    (`division_helpers`) and an int64 array `err`; a float mod calls `_fmod(a, b)`.
    """
    lines, names, kinds = [], {}, {}
    typed = in_dtypes is not None

    def kind_of(sym):
        k = id(sym)
        if k not in kinds:
            if sym.op == "in":
                kinds[k] = _kind(in_dtypes[sym.value]) if typed else "f"
            elif sym.op == "const":
                kinds[k] = None
            elif sym.op == "cast":
                kinds[k] = _kind(sym.value)
            elif sym.op in _BOOL_OPS:
                kinds[k] = "i"
            elif sym.op in _FLOAT_FUNCS:
                kinds[k] = "f"
            elif sym.op == "where":
                kinds[k] = _join(kind_of(sym.args[1]), kind_of(sym.args[2]))
            elif sym.op == "pow" and not _whole_power(sym.args[1]):
                kinds[k] = "f"
            elif sym.op in _DIVISIONS:
                a, b = (kind_of(x) for x in sym.args)
                ints = _join(a, b) == "i" and all(
                    kind_of(x) == "i" or _integral(x.value) for x in sym.args)
                kinds[k] = "i" if ints else "f"
            else:
                kinds[k] = _join(*(kind_of(a) for a in sym.args))
        return kinds[k]

    def operand(sym, context):
        """A constant rendered for the kind of what it meets."""
        if sym.op == "const" and typed and context == "i" and _integral(sym.value):
            return repr(int(sym.value))
        return emit(sym)

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
            context = kind_of(sym) if sym.op not in _BOOL_OPS else _join(
                *(kind_of(a) for a in sym.args))
            if sym.op == "where":
                args = [emit(sym.args[0])] + [operand(a, context) for a in sym.args[1:]]
            elif sym.op == "pow":      # an integer power only for a whole exponent >= 0
                e = sym.args[1]
                args = [emit(sym.args[0]), operand(e, context if _whole_power(e) else "f")]
            else:
                args = [operand(a, context) for a in sym.args]
            if sym.op in _DIVISIONS and typed and context == "i":
                expr = f"_i{sym.op}({args[0]}, {args[1]}, err)"
            else:
                expr = _FORMATS[sym.op].format(*args)
        name = f"{prefix}{len(lines)}"
        lines.append(f"{name} = {expr}")
        names[key] = name
        return name

    out_exprs = [emit(o) for o in outputs]
    return lines, out_exprs


def uses_idiv(lines):
    """True when rendered `lines` divide integers (`_idiv` or `_imod`: the kernel then
    takes an int64 array `err` for a zero divisor)."""
    return any("_idiv(" in line or "_imod(" in line for line in lines)


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
