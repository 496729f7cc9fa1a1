"""Every op numbaflow knows, registered on import (one OpDef per op)."""
from . import registry  # noqa: F401
from . import elementwise, activation, linalg, reduction, creation, optim  # noqa: F401
from .registry import get_op_def, all_op_types, run_op  # noqa: F401
from . import shape, loss, metric_ops  # noqa: F401
from . import pool, nn_ops  # noqa: F401
from . import conv, depthwise, conv_fused, conv_transpose, adaptive_pool, interp  # noqa: F401
from . import group_norm, pad3d, pool_index, unfold, nll_loss  # noqa: F401,E402
from . import fused_elementwise  # noqa: F401
from . import fused_optim  # noqa: F401
from . import fused_add_act  # noqa: F401
from . import collective  # noqa: F401,E402
from . import sync_bn  # noqa: F401,E402
from . import gemm_sgd  # noqa: F401,E402
from . import indexing, layer_norm, logistic_loss, elementwise_loss  # noqa: F401,E402
from . import optim_extra  # noqa: F401,E402
from . import lamb  # noqa: F401,E402
from . import auc  # noqa: F401,E402
from . import tensor_ops, gather_ops, sampling, norm_ops  # noqa: F401,E402
from . import attention  # noqa: F401,E402
from . import rnn  # noqa: F401,E402
from . import control_flow  # noqa: F401,E402
from . import tensor_array  # noqa: F401,E402


def _tolerate_cache_errors():
    """A full disk under numba's cache must not fail a run: see codegen.cache."""
    import sys
    from .codegen import cache
    for name, module in list(sys.modules.items()):
        if name.startswith(__name__ + ".") and module is not None:
            cache.tolerate_cache_errors(vars(module))


_tolerate_cache_errors()
