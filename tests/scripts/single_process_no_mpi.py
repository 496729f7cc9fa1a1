"""numbaflow.distributed in one process without a launcher: importing it, the collectives,
broadcast_parameters and init() work and never import mpi4py; prints OK. Run by
tests/distributed/test_distributed.py."""
import sys
import numpy as np
import numbaflow
assert 'mpi4py' not in sys.modules, 'import numbaflow imported mpi4py'
import numbaflow.distributed as dist
import numbaflow.static as static
assert 'mpi4py' not in sys.modules, 'import numbaflow.distributed imported mpi4py'
assert dist.world() is None and (dist.get_rank(), dist.get_world_size()) == (0, 1)
assert not dist.is_initialized()
dist.barrier()
assert sys.excepthook is sys.__excepthook__
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    static.nn.fc(static.data('x', [None, 2], 'float32'), 3)
scope = static.Scope()
static.Executor(numbaflow.CPUPlace()).run(startup, scope=scope)
w = scope.get('fc_0.w_0')
assert dist.broadcast_parameters(main, scope) == ['fc_0.b_0', 'fc_0.w_0']
np.testing.assert_array_equal(scope.get('fc_0.w_0'), w)
assert 'mpi4py' not in sys.modules, 'single-process use imported mpi4py'
assert dist.init() is None and dist.is_initialized() and dist.get_world_size() == 1
print('OK')
