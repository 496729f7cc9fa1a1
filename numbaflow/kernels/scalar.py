"""The scalar vocabulary that elementwise bodies are written in.

A body is a plain Python function of scalars, e.g. ``lambda a, x, y: maximum(x + y, 0.0)``
(``a`` is the op's attribute dict). The same body is interpreted two ways:

* called with numpy arrays it *is* the numpy reference (the op-test oracle);
* called with `Sym` placeholders it records a DAG that `codegen.render` turns into
  straight-line source for the CPU (and later CUDA) loop templates.

Every vocabulary function dispatches on whether any argument is a `Sym`.
"""
import math

import numpy as np


class Sym:
    """A node of a traced scalar body: `op` over `args` (Syms), `value` for leaves."""
    __slots__ = ("op", "args", "value")

    def __init__(self, op, args=(), value=None):
        self.op, self.args, self.value = op, tuple(args), value

    def __add__(self, o): return _node("add", self, o)
    def __radd__(self, o): return _node("add", o, self)
    def __sub__(self, o): return _node("sub", self, o)
    def __rsub__(self, o): return _node("sub", o, self)
    def __mul__(self, o): return _node("mul", self, o)
    def __rmul__(self, o): return _node("mul", o, self)
    def __truediv__(self, o): return _node("div", self, o)
    def __rtruediv__(self, o): return _node("div", o, self)
    def __pow__(self, o): return _node("pow", self, o)
    def __rpow__(self, o): return _node("pow", o, self)
    def __neg__(self): return _node("neg", self)
    def __gt__(self, o): return _node("gt", self, o)
    def __ge__(self, o): return _node("ge", self, o)
    def __lt__(self, o): return _node("lt", self, o)
    def __le__(self, o): return _node("le", self, o)
    # eq/ne are spelled equal()/not_equal(): overloading == would break hashing.
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("a traced scalar has no truth value: use where(cond, a, b) in a body")


def _lift(v):
    return v if isinstance(v, Sym) else Sym("const", value=v)


def _node(op, *args):
    return Sym(op, [_lift(a) for a in args])


def _traced(*args):
    return any(isinstance(a, Sym) for a in args)


def _erf_np(x):
    from scipy.special import erf  # scipy is a hard dependency (numba's BLAS)
    return erf(x)


def exp(x): return _node("exp", x) if _traced(x) else np.exp(x)
def log(x): return _node("log", x) if _traced(x) else np.log(x)
def sqrt(x): return _node("sqrt", x) if _traced(x) else np.sqrt(x)
def tanh(x): return _node("tanh", x) if _traced(x) else np.tanh(x)
def sin(x): return _node("sin", x) if _traced(x) else np.sin(x)
def cos(x): return _node("cos", x) if _traced(x) else np.cos(x)
def erf(x): return _node("erf", x) if _traced(x) else _erf_np(x)
def abs_(x): return _node("abs", x) if _traced(x) else np.abs(x)
def sign(x): return _node("sign", x) if _traced(x) else np.sign(x)
def maximum(x, y): return _node("max", x, y) if _traced(x, y) else np.maximum(x, y)
def minimum(x, y): return _node("min", x, y) if _traced(x, y) else np.minimum(x, y)
def equal(x, y): return _node("eq", x, y) if _traced(x, y) else np.equal(x, y)
def not_equal(x, y): return _node("ne", x, y) if _traced(x, y) else np.not_equal(x, y)


def mod(x, y):
    """x mod y with the divisor's sign (Python's %, numpy's remainder, Paddle's mod)."""
    return _node("mod", x, y) if _traced(x, y) else np.remainder(x, y)


def where(c, a, b):
    """`a` where `c` else `b` (both evaluated, as in numpy)."""
    return _node("where", c, a, b) if _traced(c, a, b) else np.where(c, a, b)


def cast(x, dtype):
    """Convert to `dtype` (a numpy dtype or name)."""
    dtype = np.dtype(dtype)
    if _traced(x):
        return Sym("cast", [_lift(x)], value=dtype)
    return np.asarray(x).astype(dtype)


SQRT_2 = math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def trace(body, attrs, n_inputs):
    """Trace `body(attrs, *inputs)` into a tuple of output Syms.

    Input i is the leaf ``Sym('in', value=i)``; constants stay Python numbers until rendered.
    """
    ins = [Sym("in", value=i) for i in range(n_inputs)]
    outs = body(attrs, *ins)
    if not isinstance(outs, tuple):
        outs = (outs,)
    return tuple(_lift(o) for o in outs)


def evaluate(body, attrs, *arrays):
    """Evaluate a body with numpy (the reference); always returns a tuple of arrays."""
    outs = body(attrs, *arrays)
    return outs if isinstance(outs, tuple) else (outs,)
