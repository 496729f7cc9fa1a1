"""Rows of the op table (tests/kernels/test_op_table.py), one module per op family.

A row is an `OpCase`: the op, input makers, attributes and an independent numpy
reference. Adding an op means adding a row in its family's module (or a new module
here: every module of this package is loaded); `test_every_op_has_a_row` fails until
one exists. References are written independently of the kernels' scalar bodies, in
float64, and cast to the dtype the op must produce.
"""
import importlib
import pkgutil

import numpy as np

from numbaflow.testing.op_test import OpCase

F = np.float64
ROWS = []


def row(op, inputs, ref, id=None, **kw):
    ROWS.append(OpCase(op, inputs, ref, id=id or op, **kw))


def f64(a):
    return np.asarray(a, dtype=F)


def softmax_np(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def prob_rows(shape):
    """Positive rows summing to one along the last axis (probabilities, soft labels)."""
    return lambda rng: softmax_np(rng.uniform(-1.0, 1.0, shape), -1)


def load_all():
    """Import every row module of this package (each appends to ROWS); return ROWS."""
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        importlib.import_module(f"{__name__}.{mod}")
    return ROWS
