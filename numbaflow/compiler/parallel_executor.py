"""`fluid.ParallelExecutor` / `static.ParallelExecutor`: Paddle 1.x's data-parallel executor, a thin wrapper over
`CompiledProgram(main).with_data_parallel(...)` and an `Executor`.

>>> exe.run(startup)
>>> pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name)
>>> loss_vals, = pe.run(fetch_list=[loss.name], feed={'X': x})    # one value per device
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from ..graph.program import default_main_program
from .compiled_program import CompiledProgram
from ..executor.executor import Executor
from ..executor.place import CPUPlace, CUDAPlace, cpu_places, cuda_places
from ..executor.scope import global_scope
from .strategy import BuildStrategy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from ..graph.program import Program, Variable
    from ..executor.scope import Scope
    from .strategy import ExecutionStrategy


class ParallelExecutor:
    """Paddle 1.x's data-parallel executor: `CompiledProgram(main).with_data_parallel(...)`
    run by an `Executor`.

    Args:
        use_cuda (bool): run on every GPU (`cuda_places()`) instead of `cpu_places()`.
        loss_name (str, optional): the loss; required when the program trains.
        main_program (Program, optional): default the default main program.
        share_vars_from (ParallelExecutor, optional): a trainer whose parameter arrays this
            (test) executor reads, without a copy.
        exec_strategy (ExecutionStrategy, optional): threads, iterations per run.
        build_strategy (BuildStrategy, optional): passes, reduce strategy.
        num_trainers (int): accepted for Paddle compatibility (MPI decides).
        trainer_id (int): accepted for Paddle compatibility (MPI decides).
        scope (Scope, optional): default the global scope.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1, activation='relu'))
        >>> _ = paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name)
        >>> loss_vals, = pe.run(fetch_list=[loss.name], feed={'x': np.ones((4, 3), 'float32')})
        >>> loss_vals.size == pe.device_count         # one value per place (CPU_NUM)
        True
    """

    def __init__(self, use_cuda: bool, loss_name: str | None = None,
                 main_program: Program | None = None,
                 share_vars_from: ParallelExecutor | None = None,
                 exec_strategy: ExecutionStrategy | None = None,
                 build_strategy: BuildStrategy | None = None, num_trainers: int = 1,
                 trainer_id: int = 0, scope: Scope | None = None) -> None:
        if share_vars_from is not None and not isinstance(share_vars_from, ParallelExecutor):
            raise TypeError("The share_vars_from should be ParallelExecutor.")
        if num_trainers != 1 or trainer_id != 0:
            # as Paddle: they are set on (a copy of) the build strategy, whose compile
            # checks them against the MPI job
            build_strategy = copy.copy(build_strategy or BuildStrategy())
            build_strategy.num_trainers = num_trainers
            build_strategy.trainer_id = trainer_id
        places = cuda_places() if use_cuda else cpu_places()
        self._places = places
        self._scope = scope if scope is not None else global_scope()
        self._compiled = CompiledProgram(main_program or default_main_program()) \
            .with_data_parallel(loss_name=loss_name, build_strategy=build_strategy,
                                exec_strategy=exec_strategy, places=places,
                                share_vars_from=share_vars_from._compiled
                                if share_vars_from is not None else None)
        self._exe = Executor(CUDAPlace(places[0].device_id) if use_cuda else CPUPlace())

    @property
    def device_count(self) -> int:
        """The number of places."""
        return len(self._places)

    def run(self, fetch_list: Sequence[Variable | str],
            feed: dict[str, ArrayLike] | list[dict[str, ArrayLike]] | None = None,
            feed_dict: dict[str, ArrayLike] | None = None, return_numpy: bool = True) -> list:
        """Run one step; fetches are merged over the places (a scalar loss gives one value
        per place).

        Args:
            fetch_list (list of Variable or str): what to return.
            feed (dict or list of dict, optional): split along axis 0, or one dict per place.
            feed_dict (dict, optional): the deprecated name of `feed`.
            return_numpy (bool): numpy arrays (default) or Tensor objects.

        Returns:
            list: one array per fetch.
        """
        if feed is None and feed_dict is not None:
            feed = feed_dict
        return self._exe.run(self._compiled, feed=feed, fetch_list=fetch_list,
                             scope=self._scope, return_numpy=return_numpy)

    def drop_local_exe_scopes(self) -> None:
        """Release the places' pooled temporaries now (parameters are kept)."""
        self._compiled.drop_local_exe_scopes()
