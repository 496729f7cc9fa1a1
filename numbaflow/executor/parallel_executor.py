"""`fluid.ParallelExecutor` / `static.ParallelExecutor`: Paddle 1.x's data-parallel executor, a thin wrapper over
`CompiledProgram(main).with_data_parallel(...)` and an `Executor`.

>>> exe.run(startup)
>>> pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name)
>>> loss_vals, = pe.run(fetch_list=[loss.name], feed={'X': x})    # one value per device
"""
import warnings

from ..graph.program import default_main_program
from .compiled_program import CompiledProgram
from .executor import Executor
from .place import CPUPlace, CUDAPlace, cpu_places, cuda_places
from .scope import global_scope


class ParallelExecutor:
    def __init__(self, use_cuda, loss_name=None, main_program=None, share_vars_from=None,
                 exec_strategy=None, build_strategy=None, num_trainers=1, trainer_id=0,
                 scope=None):
        if share_vars_from is not None and not isinstance(share_vars_from, ParallelExecutor):
            raise TypeError("The share_vars_from should be ParallelExecutor.")
        if build_strategy is not None and (num_trainers != 1 or trainer_id != 0):
            warnings.warn("ParallelExecutor: num_trainers/trainer_id override the build "
                          "strategy's", UserWarning, stacklevel=2)
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
    def device_count(self):
        return len(self._places)

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """Run one step; fetches are merged over the devices (a scalar loss gives one
        value per device). `feed_dict` is the deprecated name of `feed`."""
        if feed is None and feed_dict is not None:
            feed = feed_dict
        return self._exe.run(self._compiled, feed=feed, fetch_list=fetch_list,
                             scope=self._scope, return_numpy=return_numpy)

    def drop_local_exe_scopes(self):
        """Release the devices' pooled temporaries now (parameters are kept)."""
        self._compiled.drop_local_exe_scopes()
