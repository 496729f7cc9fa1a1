"""Where a script runs under mpiexec: its rank, the world's size, a barrier, and
broadcast_parameters (public as numbaflow.distributed.*)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .mpi import world

if TYPE_CHECKING:
    from ..executor.scope import Scope
    from ..graph.program import Program


def get_rank() -> int:
    """This process's rank in the current communicator (0 without mpiexec).

    Returns:
        int: the rank.

    Example:
        >>> if dist.get_rank() == 0:
        ...     print("only rank 0 logs")
        only rank 0 logs
    """
    w = world()
    return 0 if w is None else w.rank


def get_world_size() -> int:
    """The number of processes in the current communicator (1 without mpiexec).

    Returns:
        int: the size.

    Example:
        >>> global_batch = 64
        >>> per_rank_batch = global_batch // dist.get_world_size()
        >>> per_rank_batch
        64
    """
    w = world()
    return 1 if w is None else w.size


def barrier() -> None:
    """Wait until every rank has reached this call (returns at once in one process).

    Example:
        >>> dist.barrier()
    """
    w = world()
    if w is not None:
        w.barrier()


def broadcast_parameters(program: Program | Any,      # Any: a CompiledProgram
                         scope: Scope | None = None) -> list[str]:
    """Copy every persistable variable of `program` (parameters, optimizer state,
    learning rate) from rank 0's scope to every rank's, in place.

    A variable rank 0 holds and another rank does not is created there. Before any
    data moves, the ranks compare what they hold; a different program (other
    persistable names), a shape or dtype mismatch, or a value another rank holds but
    rank 0 does not raises ValueError on every rank (no rank is left waiting).

    Args:
        program (Program or CompiledProgram): whose persistables to copy.
        scope (Scope, optional): default the global scope.

    Returns:
        list of str: the names copied, sorted (the order they are sent in).

    Raises:
        ValueError: the ranks hold different variables.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())   # each rank initialises its own copy
        >>> dist.broadcast_parameters(static.default_main_program())   # now all hold rank 0's
        ['fc_0.b_0', 'fc_0.w_0']
    """
    from ..executor.scope import global_scope
    program = _as_program(program)
    scope = global_scope() if scope is None else scope
    names = sorted(v.name for v in program.list_vars()
                   if v.persistable and not getattr(v, "is_data", False))
    held = {}
    for n in names:
        spec = scope.spec(n)
        if spec is not None:
            held[n] = (tuple(spec[0]), spec[1].name)
    w = world()
    if w is None:
        return sorted(held)
    everyone = w.allgather_obj((names, held))
    problems = _mismatches(everyone)
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise ValueError("broadcast_parameters: the ranks do not hold the same variables: "
                         + "; ".join(problems[:10]) + more + ". Every rank must build the same "
                         "program and run its startup program first.")
    root = everyone[0][1]
    for n in sorted(root):
        if n in held:
            a = scope.array(n)     # a newer device copy is synced first
            w.bcast_(a)
            if w.rank != 0:
                scope.wrote_on_host([n])   # refresh the device copy, if any
        else:
            shape, dtype = root[n]
            scope.set(n, w.bcast_(np.empty(shape, np.dtype(dtype))), create=True)
    return sorted(root)


def _mismatches(everyone):
    """Human-readable differences between rank 0's (names, held) and each other rank's.
    Every rank computes the same list from the same gathered data."""
    names0, root = everyone[0]
    out = []
    for r, (names, held) in enumerate(everyone[1:], start=1):
        if names != names0:
            lacks = sorted(set(names0) - set(names))
            extra = sorted(set(names) - set(names0))
            diff = ([f"lacks {_names(lacks)}"] if lacks else []) + \
                ([f"has extra {_names(extra)}"] if extra else [])
            out.append(f"rank {r}'s program differs from rank 0's: its persistable "
                       f"variables {' and '.join(diff or ['are in another order'])}")
            continue
        for n, info in held.items():
            if n not in root:
                out.append(f"rank {r} holds {n!r} but rank 0 does not")
            elif info != root[n]:
                out.append(f"{n!r} is {_fmt(root[n])} on rank 0 but {_fmt(info)} on rank {r}")
    return out


def _names(names, limit=5):
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(repr(n) for n in names[:limit]) + more


def _fmt(info):
    shape, dtype = info
    return f"{dtype}{list(shape)}"


def _as_program(program):
    from ..graph.program import Program
    inner = getattr(program, "_program", None)      # a CompiledProgram
    if isinstance(inner, Program):
        return inner
    if not isinstance(program, Program):
        raise TypeError(f"broadcast_parameters: program must be a Program or CompiledProgram, "
                        f"got {type(program).__name__}")
    return program
