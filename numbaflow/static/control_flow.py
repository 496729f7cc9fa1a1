"""Control flow in a static program, spelled and lowered as in Paddle 2.6
(`paddle.static.nn.cond`, `while_loop`, `case`, `switch_case`).

`cond` builds each branch into a sub-block; a `conditional_block` op runs the true
branch's block when `pred` holds, another the false branch's when it does not, and a
`select_input` op per output picks the value of the branch that ran. `while_loop` builds
the body (and the condition recomputed after it) into a sub-block run by a `while` op
while the condition holds. `case` and `switch_case` are nested conds.

Where the branches of a cond give an output different shapes or dtypes (Paddle's
select_input takes any), that output is a run-time value (`Variable.runtime_shape`): it
can be fetched (or returned from an enclosing cond, as `case` and `switch_case` do) but
no other op can read it (plans are static-shape). A loop variable keeps its shape and
dtype. Both are differentiable (graph/backward.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..graph.program import Variable, default_main_program
from ..layer_helper import LayerHelper
from ..utils import unique_name

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["cond", "while_loop", "case", "switch_case"]


def _outer_reads(block):
    """The enclosing blocks' variables the ops of `block` read, in first-use order (a
    nested control-flow op lists its own reads as its inputs)."""
    reads = {}
    for op in block.ops:
        for v in op.input_vars():
            if block.vars.get(v.name) is not v:
                reads[v] = None
    return list(reads)


def flatten_nest(value, where):
    """(leaves, rebuild): the Variables of a nest of lists/tuples (namedtuples too) and a
    function putting new leaves back in that structure (`where` names the nest in errors).

    Example:
        >>> x = paddle.zeros([1])
        >>> leaves, rebuild = static.control_flow.flatten_nest([x, (x, x)], 'value')
        >>> len(leaves), type(rebuild(leaves)[1]).__name__
        (3, 'tuple')
    """
    if value is None:
        return [], lambda leaves: None
    if isinstance(value, Variable):
        return [value], lambda leaves: leaves[0]
    if isinstance(value, (list, tuple)):
        parts = [flatten_nest(v, where) for v in value]
        sizes = [len(p[0]) for p in parts]

        def rebuild(leaves):
            out, k = [], 0
            for (_, rb), n in zip(parts, sizes):
                out.append(rb(leaves[k:k + n]))
                k += n
            # a namedtuple (a decoder's states) takes its fields as arguments
            return type(value)(*out) if hasattr(value, "_fields") else type(value)(out)
        return [x for p in parts for x in p[0]], rebuild
    raise TypeError(f"{where} must return Variables (or a list/tuple of them, or None); "
                    f"got {type(value).__name__}")


def _structure(value):
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_structure(v) for v in value))
    return None if value is None else "Variable"


def _check_pred(pred, what):
    if not isinstance(pred, Variable):
        raise TypeError(f"{what}: pred must be a bool Variable holding one element, got "
                        f"{type(pred).__name__}")
    if pred.dtype.kind != "b" or any(d not in (1, -1) for d in pred.shape):
        raise TypeError(f"{what}: pred must be a bool Variable holding one element (shape "
                        f"[1] or []), got {pred.name!r} of shape {pred.shape} {pred.dtype}")


def _build_branch(program, fn, where):
    """Build `fn()` into a new sub-block whose results it copies into new variables of the
    enclosing block: (sub-block, result as returned, those variables)."""
    from ..tensor import full
    parent = program.current_block()
    with program.sub_block_guard() as block:
        value = fn() if fn is not None else None
        leaves, _ = flatten_nest(value, where)
        outer = []
        for v in leaves:
            o = parent.create_var(unique_name.generate("cond.tmp"), v.shape, v.dtype)
            if v.runtime_shape:     # a nested cond's run-time value leaves as it is
                o.runtime_shape = True
                block.append_op("select_input", {"X": [v], "Mask": full([1], 0, "int32")},
                                {"Out": o})
            else:
                block.append_op("assign", {"X": v}, {"Out": o})
            outer.append(o)
    return block, value, outer


def cond(pred: Variable, true_fn: Callable | None = None, false_fn: Callable | None = None,
         name: str | None = None, return_names: Sequence[str] | None = None) -> object:
    """`true_fn()` if `pred` is true, else `false_fn()`, decided when the program runs
    (Paddle's `static.nn.cond`): each branch's ops go into a sub-block and only the
    taken branch runs. Gradients flow into the taken branch only.

    Args:
        pred (Variable): a bool Variable of one element (shape [1] or []).
        true_fn (callable, optional): builds the true branch; returns a Variable, a nest
            of lists/tuples of them, or None.
        false_fn (callable, optional): the same for the false branch.
        name (str, optional): accepted for Paddle compatibility.
        return_names (list, optional): accepted for Paddle compatibility.

    Returns:
        what the branches return (the same structure), or None.

    An output the branches give with different shapes or dtypes (allowed, as in Paddle)
    has Paddle's declared dtype and shape (the true branch's dtype, -1 where the dims
    differ) and its real ones at run time: it can be fetched, or returned from an
    enclosing cond, but other ops cannot read it (ValueError when the program runs).

    Raises:
        TypeError: pred is not a one-element bool Variable.
        ValueError: the branches return different structures (both are named).

    Example:
        >>> x = static.data('x', [1], 'float32')
        >>> y = static.nn.cond(x < 1.0, lambda: x * 2.0, lambda: x - 1.0)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> [float(exe.run(feed={'x': np.array([v], 'float32')}, fetch_list=[y])[0][0])
        ...  for v in (0.5, 3.0)]
        [1.0, 2.0]
    """
    _check_pred(pred, "cond")
    program = default_main_program()
    t_block, t_value, t_outs = _build_branch(program, true_fn, "cond's true_fn")
    f_block, f_value, f_outs = _build_branch(program, false_fn, "cond's false_fn")
    if _structure(t_value) != _structure(f_value):
        raise ValueError(f"cond: true_fn and false_fn must return the same structure; "
                         f"true_fn returned {_structure(t_value)}, false_fn "
                         f"{_structure(f_value)}")
    _, rebuild = flatten_nest(t_value, "")
    helper = LayerHelper("cond", name)
    mask = helper.simple("cast", {"X": pred}, {"in_dtype": pred.dtype, "out_dtype": "int32"},
                         dtype="int32")
    zero = helper.simple("fill_any_like", {"X": mask}, {"value": 0.0}, dtype="int32")
    not_pred = helper.simple("equal", {"X": mask, "Y": zero}, dtype="bool")
    for block, p, outs in ((t_block, pred, t_outs), (f_block, not_pred, f_outs)):
        helper.append_op("conditional_block", {"Cond": p, "Input": _outer_reads(block)},
                         {"Out": outs}, {"sub_block": block, "is_scalar_condition": True})
    results = []
    for t, f in zip(t_outs, f_outs):
        out = helper.create_tmp(t.dtype)
        # a -1 dim (the batch) may differ from a fixed one: equal at run time
        out.runtime_shape = t.runtime_shape or f.runtime_shape or t.dtype != f.dtype or \
            len(t.shape) != len(f.shape) or any(a != b and -1 not in (a, b)
                                                for a, b in zip(t.shape, f.shape))
        helper.append_op("select_input", {"X": [f, t], "Mask": mask}, {"Out": out})
        out.stop_gradient = t.stop_gradient and f.stop_gradient
        results.append(out)
    return rebuild(results) if t_value is not None else None


def case(pred_fn_pairs: Sequence, default: Callable | None = None,
         name: str | None = None) -> object:
    """The function of the first `(pred, fn)` pair whose pred is true, else `default()`
    (Paddle's `static.nn.case`): nested conds. Without `default`, the last pair's fn is
    the default.

    Args:
        pred_fn_pairs (list or tuple): (bool Variable, callable) pairs.
        default (callable, optional): called when no pred holds.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        what the chosen function returns.

    Example:
        >>> x = static.data('x', [1], 'float32')
        >>> y = static.nn.case([(x < 0.0, lambda: x * 0.0 - 1.0), (x < 1.0, lambda: x * 10.0)],
        ...                    default=lambda: x + 100.0)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> [float(exe.run(feed={'x': np.array([v], 'float32')}, fetch_list=[y])[0][0])
        ...  for v in (-1.0, 0.5, 2.0)]
        [-1.0, 5.0, 102.0]
    """
    if not isinstance(pred_fn_pairs, (list, tuple)) or not pred_fn_pairs:
        raise TypeError(f"case: pred_fn_pairs must be a non-empty list of (pred, fn) pairs, "
                        f"got {pred_fn_pairs!r}")
    for pair in pred_fn_pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not callable(pair[1]):
            raise TypeError(f"case: each element of pred_fn_pairs must be a (pred, callable) "
                            f"pair, got {pair!r}")
        _check_pred(pair[0], "case")
    pairs = list(pred_fn_pairs)
    if default is None:
        default = pairs.pop()[1]
    elif not callable(default):
        raise TypeError(f"case: default must be callable, got {type(default).__name__}")
    fn = default
    for pred, true_fn in reversed(pairs):
        fn = (lambda p, t, f: lambda: cond(p, t, f))(pred, true_fn, fn)
    return fn()


def switch_case(branch_index: Variable, branch_fns: dict | Sequence,
                default: Callable | None = None, name: str | None = None) -> object:
    """The function of `branch_fns` whose index equals `branch_index`, else `default()`
    (Paddle's `static.nn.switch_case`). Without `default`, the function of the largest
    index is the default.

    Args:
        branch_index (Variable): an int32/int64 Variable of one element.
        branch_fns (dict, list or tuple): {index: fn}, [(index, fn), ...] or [fn, ...]
            (indexes 0, 1, ...).
        default (callable, optional): called when no index matches.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        what the chosen function returns.

    Example:
        >>> i = static.data('i', [1], 'int64')
        >>> y = static.nn.switch_case(i, {1: lambda: paddle.full([2], 1.0),
        ...                               3: lambda: paddle.full([2], 3.0)},
        ...                           default=lambda: paddle.full([2], -1.0))
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> [exe.run(feed={'i': np.array([v])}, fetch_list=[y])[0].tolist() for v in (1, 2, 3)]
        [[1.0, 1.0], [-1.0, -1.0], [3.0, 3.0]]
    """
    from ..tensor import equal, full
    if not isinstance(branch_index, Variable) or branch_index.dtype.kind not in "iu":
        raise TypeError(f"switch_case: branch_index must be an int32/int64 Variable, got "
                        f"{branch_index!r}")
    if isinstance(branch_fns, dict):
        pairs = list(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)) and all(callable(f) for f in branch_fns):
        pairs = list(enumerate(branch_fns))
    elif isinstance(branch_fns, (list, tuple)):
        pairs = [tuple(p) for p in branch_fns]
    else:
        raise TypeError(f"switch_case: branch_fns must be a dict, a list of (index, fn) "
                        f"pairs or a list of fns, got {type(branch_fns).__name__}")
    for k, fn in pairs:
        if isinstance(k, bool) or not isinstance(k, int) or not callable(fn):
            raise TypeError(f"switch_case: each branch must be (int index, callable), got "
                            f"{(k, fn)!r}")
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"switch_case: the branch indexes must be unique, got {keys}")
    pairs.sort(key=lambda p: p[0])
    if default is None:
        default = pairs.pop()[1]
    preds = [(equal(branch_index, full(branch_index.shape if -1 not in branch_index.shape
                                       else [1], k, branch_index.dtype)), fn)
             for k, fn in pairs]
    if not preds:
        return default()
    return case(preds, default)


def while_loop(cond: Callable, body: Callable, loop_vars: Sequence[Variable],
               is_test: bool = False, name: str | None = None) -> list:
    """Run `body` while `cond` holds (Paddle's `static.nn.while_loop`): `cond(*loop_vars)`
    gives a one-element bool Variable, `body(*loop_vars)` the loop variables' next
    values (same number, shapes and dtypes). The body is built once into a sub-block that
    the `while` op runs (as one cached plan) each iteration.

    Args:
        cond (callable): the condition.
        body (callable): the step.
        loop_vars (list or tuple of Variable): the loop variables.
        is_test (bool): accepted for Paddle compatibility.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        list of Variable: the loop variables' values after the loop (new Variables: the
        given ones keep their values, where Paddle updates them in place).

    Raises:
        TypeError / ValueError: a bad condition, or a body that changes the number,
            shape or dtype of the loop variables (named).

    Example:
        >>> i = paddle.full([1], 0, 'int64')
        >>> ten = paddle.full([1], 10, 'int64')
        >>> i, ten = static.nn.while_loop(lambda i, ten: i < ten,
        ...                               lambda i, ten: [i + 1, ten], [i, ten])
        >>> static.Executor(paddle.CPUPlace()).run(fetch_list=[i])[0]
        array([10])
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    if isinstance(loop_vars, Variable) or not isinstance(loop_vars, (list, tuple)) or \
            not loop_vars:
        raise TypeError(f"while_loop: loop_vars must be a non-empty list or tuple of "
                        f"Variables, got {type(loop_vars).__name__}")
    loop_vars = list(loop_vars)
    for v in loop_vars:
        if not isinstance(v, Variable):
            raise TypeError(f"while_loop: every loop variable must be a Variable, got "
                            f"{type(v).__name__}")
    program = default_main_program()
    parent = program.current_block()
    # the loop works on copies: the given Variables keep their values for the other ops
    # that read them (and for the backward), where Paddle updates them in place
    helper = LayerHelper("while_loop", name)
    copies = []
    for v in loop_vars:
        if v.is_tensor_array:     # an array is updated in place, as in Paddle
            copies.append(v)
            continue
        c = helper.create_tmp(v.dtype, stop_gradient=v.stop_gradient)
        helper.append_op("assign", {"X": v}, {"Out": c})
        copies.append(c)
    loop_vars = copies
    pre_cond = cond(*loop_vars)
    _check_pred(pre_cond, "while_loop's cond")
    with program.sub_block_guard() as block:
        new = body(*loop_vars)
        new = [new] if isinstance(new, Variable) else list(new) if \
            isinstance(new, (list, tuple)) else new
        if not isinstance(new, list) or len(new) != len(loop_vars):
            raise ValueError(f"while_loop: body must return {len(loop_vars)} loop "
                             f"variable(s) (one per loop_vars), got {new!r}")
        for k, (n, o) in enumerate(zip(new, loop_vars)):
            if not isinstance(n, Variable):
                raise TypeError(f"while_loop: body's output {k} must be a Variable, got "
                                f"{type(n).__name__}")
            if n.dtype != o.dtype or len(n.shape) != len(o.shape) or any(
                    a != b and -1 not in (a, b) for a, b in zip(n.shape, o.shape)):
                raise ValueError(f"while_loop: body changes loop variable {k} ({o.name!r}) "
                                 f"from {o.shape} {o.dtype} to {n.shape} {n.dtype}; a loop "
                                 f"variable must keep its shape and dtype")
        # a body returning loop variables swapped: copy before any is overwritten
        new = [block.append_op("assign", {"X": n}, {"Out": block.create_var(
            f"{o.name}@NEXT", o.shape, o.dtype)}).outputs["Out"][0]
            if any(n is lv for lv in loop_vars) and n is not o else n
            for n, o in zip(new, loop_vars)]
        for n, o in zip(new, loop_vars):
            if n is not o:
                block.append_op("assign", {"X": n}, {"Out": o})
            # a loop variable that starts as a constant (a zero state) but whose next
            # value depends on a parameter carries a gradient (o is the loop's own copy)
            o.stop_gradient = o.stop_gradient and n.stop_gradient
        now = cond(*loop_vars)
        _check_pred(now, "while_loop's cond")
        block.append_op("assign", {"X": now}, {"Out": pre_cond})
    # the enclosing tensor arrays the body writes are read and written by the loop (it
    # runs on their lists)
    arrays = [v for op in block.ops for v in op.output_vars()
              if v.is_tensor_array and block.vars.get(v.name) is not v]
    reads = list(dict.fromkeys(loop_vars + [v for v in _outer_reads(block)
                                            if v is not pre_cond] + arrays))
    # a loop variable no op of the body reads or writes (returned as it came) keeps its
    # value and is not an output: the body's plan has nothing that holds it
    used = {v.name for op in block.ops for v in op.input_vars() + op.output_vars()}
    changed = [v for v in loop_vars if v.name in used]
    parent.append_op("while", {"X": reads, "Condition": pre_cond},
                     {"Out": list(dict.fromkeys(changed + arrays + [pre_cond]))},
                     {"sub_block": block, "is_test": is_test})
    return loop_vars
