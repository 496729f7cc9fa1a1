"""numbaflow.static: programs, the executor and static-graph layers (paddle.static)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes
from ..metric import accuracy  # noqa: F401  (paddle.static.accuracy)
from ..executor import (CPUPlace, CUDAPlace,  # noqa: F401
                        Executor, Scope, cpu_places, cuda_places,
                        global_scope, scope_guard)
from ..graph import (Graph, Operator, Parameter, Program, Variable,  # noqa: F401
                     append_backward, default_main_program, default_startup_program,
                     gradients, program_guard)
from ..graph.program import default_main_program as _main
from ..tensor import create_parameter  # noqa: F401  (paddle.static.create_parameter)
from . import amp, decode, nn  # noqa: F401
from .ema import ExponentialMovingAverage, InputSpec  # noqa: F401
from ..compiler import (BuildStrategy, CompiledProgram, ExecutionStrategy,  # noqa: F401,E402
                        ParallelExecutor)

__all__ = [
    # programs and variables
    "Program", "Variable", "Parameter", "Operator", "Graph", "data", "program_guard",
    "default_main_program", "default_startup_program", "append_backward", "gradients",
    "create_parameter", "InputSpec", "ExponentialMovingAverage",
    # running
    "Executor", "CompiledProgram", "ParallelExecutor", "BuildStrategy", "ExecutionStrategy",
    "CPUPlace", "CUDAPlace", "cpu_places", "cuda_places", "Scope", "global_scope",
    "scope_guard",
    # persistence
    "save", "load", "save_inference_model", "load_inference_model", "load_program_state",
    "set_program_state",
    # metrics
    "accuracy", "auc",
    # pictures
    "draw",
    # submodules
    "amp", "nn",
]

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import DTypeLike


def data(name: str, shape: Sequence[int | None], dtype: DTypeLike = "float32",
         lod_level: int = 0) -> Variable:
    """Declare a fed input of the default main program; None / -1 dims take any size.

    Args:
        name (str): the feed name (the key in `Executor.run(feed=...)`).
        shape (list of int or None): the shape; None or -1 for a dim of any size.
        dtype (str or numpy dtype): default 'float32'.
        lod_level (int): accepted for Paddle compatibility; ignored.

    Returns:
        Variable: the input (stop_gradient=True).

    Raises:
        TypeError: name is not a non-empty str.
        ValueError: a dim below -1, or `name` is taken by another variable (declaring
            the same input again returns it).

    Example:
        >>> x = static.data(name='x', shape=[None, 784], dtype='float32')
        >>> x.shape, x.dtype
        ((-1, 784), dtype('float32'))
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"data: name must be a non-empty str, got {name!r}")
    shape = [-1 if d is None else int(d) for d in shape]
    if any(d < -1 for d in shape):
        raise ValueError(f"data {name!r}: dims must be >= 0, or None/-1 for any size; got {shape}")
    block = _main().global_block()
    dt = dtypes.convert_dtype(dtype)
    old = block.vars.get(name)
    if old is not None and old.is_data and old.shape == tuple(shape) and old.dtype == dt:
        return old      # declared again (Paddle returns the existing input)
    if old is not None:
        raise ValueError(f"data {name!r}: the program already has a variable of that name "
                         f"({old.shape}, {old.dtype}); declaring it again needs the same "
                         f"shape and dtype, got {tuple(shape)} {dt}")
    return block.create_var(name, shape, dt, stop_gradient=True, is_data=True)


from .io import load, load_inference_model, save, save_inference_model  # noqa: F401,E402
from .draw import draw  # noqa: F401,E402
from .program_state import load_program_state, set_program_state  # noqa: F401,E402


def auc(input: Variable, label: Variable, curve: str = "ROC", num_thresholds: int = 2 ** 12 - 1,
        topk: int = 1, slide_steps: int = 1) -> tuple:
    """ROC AUC of a binary classifier, over every run so far and over the current batch.

    Args:
        input (Variable): (N, 2) class probabilities; column 1 is the positive class.
        label (Variable): (N, 1) int labels, non-zero = positive.
        curve (str): only "ROC".
        num_thresholds (int): buckets of the score.
        topk (int): accepted for Paddle compatibility.
        slide_steps (int): only 1 (the batch AUC is the current batch's).

    Returns:
        tuple: (auc, batch_auc, [batch_stat_pos, batch_stat_neg, stat_pos, stat_neg]);
        the AUCs are 0-D float64, the stats int64 bucket counts (stat_* persist).

    Example:
        >>> probs = static.data('probs', [None, 2])
        >>> label = static.data('label', [None, 1], 'int64')
        >>> auc_out, batch_auc, _ = static.auc(probs, label)
        >>> auc_out.shape, str(auc_out.dtype)
        ((), 'float64')
    """
    from ..layer_helper import LayerHelper
    from ..tensor.creation import create_global_var
    from ..utils import unique_name
    for arg, v in (("input", input), ("label", label)):
        if not isinstance(v, Variable):
            raise TypeError(f"auc: {arg} must be a Variable, got {type(v).__name__}")
    if curve != "ROC":
        raise ValueError(f"auc: curve {curve!r} is not supported; only 'ROC'")
    if slide_steps != 1:
        raise ValueError(f"auc: slide_steps={slide_steps} is not supported; the batch AUC "
                         f"is over the current batch (slide_steps=1)")
    nt = int(num_thresholds)
    if nt < 1:
        raise ValueError(f"auc: num_thresholds must be >= 1, got {num_thresholds}")
    helper = LayerHelper("auc")
    stats = [create_global_var([nt + 1], 0, "int64", persistable=True,
                               name=unique_name.generate(f"auc.{s}")) for s in ("pos", "neg")]
    batch = []
    for s in ("pos", "neg"):
        v = helper.create_tmp("int64", stop_gradient=True)
        helper.append_op("fill_constant", outputs={"Out": v},
                         attrs={"shape": [nt + 1], "value": 0.0, "dtype": "int64"})
        batch.append(v)
    outs = []
    for pos, neg in (stats, batch):
        a = helper.create_tmp("float64", stop_gradient=True)
        helper.append_op("auc", {"Predict": input, "Label": label, "StatPos": pos,
                                 "StatNeg": neg},
                         {"AUC": a, "StatPosOut": pos, "StatNegOut": neg},
                         {"curve": curve, "num_thresholds": nt, "slide_steps": 1})
        outs.append(a)
    return outs[0], outs[1], [batch[0], batch[1], stats[0], stats[1]]
