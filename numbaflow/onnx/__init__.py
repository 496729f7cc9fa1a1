"""ONNX export: `numbaflow.onnx.export(program, feed_vars, fetch_vars, path)` writes the
forward ops computing `fetch_vars` from `feed_vars` as an ONNX model (opset 17) with the
parameters as initializers, checked by `onnx.checker`. Needs the `onnx` package (the
`onnx` extra: pip install 'numbaflow[onnx]', which also brings onnxruntime to run it).

Each op maps through one function of `_ops.py`; control flow (`cond` -> `If`, `while_loop`
-> `Loop`) and the renaming that keeps ONNX's one-write-per-name rule are in
`_control_flow.py`. An op without a mapping, or an attribute value ONNX cannot express,
raises `NotImplementedError` naming every such op before anything is written.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..executor.scope import global_scope as _global_scope
from ..persistence import checkpoint as _checkpoint
from ..persistence import inference_model as _inference
from ..utils.atomic_file import atomic_write as _atomic_write

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..graph.program import Program, Variable

OPSET = 17

__all__ = ["export", "OPSET"]


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("numbaflow.onnx.export needs the onnx package: pip install "
                          "'numbaflow[onnx]' (onnx, and onnxruntime to run the model)") from None
    return onnx


def export(program: Program, feed_vars: Sequence[Variable] | str,
           fetch_vars: Sequence[Variable] | None = None, path: str | None = None,
           opset_version: int = OPSET, input_spec: Sequence[Variable] | None = None,
           output_spec: Sequence[Variable] | None = None, scope: object = None,
           **configs: object) -> str:
    """Write the inference part of `program` as an ONNX model.

    Two spellings: `export(program, feed_vars, fetch_vars, "model.onnx")`, and Paddle's
    `paddle.onnx.export(program, "model", input_spec=feed_vars, output_spec=fetch_vars)`
    (a path without ".onnx" gets it appended, as Paddle does).

    Args:
        program (Program): the program the variables belong to (None: theirs).
        feed_vars (list of Variable): the model's inputs (their -1 dims become symbolic).
        fetch_vars (list of Variable): the model's outputs.
        path (str): the file to write.
        opset_version (int): 17 (the opset the mapping is written for; others refused).
        scope (Scope, optional): where the parameters are (default the global scope).
        **configs: accepted for Paddle compatibility (e.g. enable_onnx_checker) and ignored.

    Returns:
        str: the path written.

    Raises:
        NotImplementedError: ops without an ONNX mapping (all named), or attribute values
            ONNX cannot express.
        ImportError: the onnx package is not installed.

    Example:
        >>> import os, tempfile
        >>> x = static.data('x', [None, 3])
        >>> y = paddle.nn.functional.relu(static.nn.fc(x, size=2))
        >>> _ = static.Executor(paddle.CPUPlace()).run(static.default_startup_program())
        >>> path = os.path.join(tempfile.mkdtemp(), 'm.onnx')
        >>> paddle.onnx.export(None, [x], [y], path) == path
        True
    """
    if isinstance(feed_vars, (str, os.PathLike)):      # Paddle's spelling
        path, feed_vars, fetch_vars = os.fspath(feed_vars), input_spec, output_spec
        if fetch_vars is None:
            raise TypeError("export: with a path as the second argument (Paddle's "
                            "spelling), give input_spec= and output_spec= (the Variables)")
    if path is None or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"export: path must be a file path (str), got {path!r}")
    path = os.fspath(path)
    if not path.endswith(".onnx"):
        path += ".onnx"
    if opset_version != OPSET:
        raise ValueError(f"export: opset_version {opset_version} is not supported; numbaflow "
                         f"writes opset {OPSET}")
    feeds = _inference.checked_var_list([] if feed_vars is None else feed_vars, "feed_vars",
                                        allow_empty=True)
    fetches = _inference.checked_var_list(fetch_vars, "fetch_vars")
    program = _inference.program_of(feeds + fetches, program, "export")
    pruned = _inference.prune(program, [v.name for v in feeds], [v.name for v in fetches])
    params = _checkpoint.gather(_checkpoint.persistables(pruned),
                                _global_scope() if scope is None else scope, "export")
    onnx = _onnx()
    from . import _ops
    model = _ops.build_model(onnx, pruned, [v.name for v in feeds],
                             [v.name for v in fetches], params, OPSET)
    onnx.checker.check_model(model, full_check=True)
    # a temp file renamed over the old model: a failed re-export (full disk, kill) keeps it
    _atomic_write(path, model.SerializeToString())
    return path
