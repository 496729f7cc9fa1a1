"""Every op numbaflow knows, registered on import (one OpDef per op).

The floors: `registry` (OpDef), `scalar` (the vocabulary of elementwise bodies), `workshare`
(parallel CPU workers) and `codegen/` (generated kernels) are how ops are declared and run;
the op families are `math/`, `tensor/`, `nn/`, `optim/` and `metric/`; `fused/` holds the ops
only graph passes create; `parallel/` the ops across data-parallel devices; `gpu/` what the
hand-written CUDA kernels share.
"""
from . import registry  # noqa: F401
from .registry import get_op_def, all_op_types, run_op  # noqa: F401
from .math import elementwise, activation, linalg, reduction  # noqa: F401
from .tensor import (creation, shape, indexing, gather_ops, tensor_ops, sampling,  # noqa: F401
                     control_flow, tensor_array)
from .nn import (loss, logistic_loss, pool, pool_index, adaptive_pool, batch_norm,  # noqa: F401
                 dropout, embedding, conv, depthwise, conv_transpose, interp, group_norm,
                 layer_norm, pad3d, rnn, unfold, nll_loss, elementwise_loss, rrelu, conv3d, pool3d,
                 pool3d_index)
from .optim import optim, optim_extra, lamb, squared_l2_norm  # noqa: F401
from .metric import accuracy, auc  # noqa: F401
from .fused import (conv_fused, fused_elementwise, fused_optim, fused_add_act, gemm_sgd,  # noqa: F401
                    gemm_epilogue, softmax_mask, flash_attention, conv_blocked)
from .parallel import collective, sync_bn  # noqa: F401


def _tolerate_cache_errors():
    """A full disk under numba's cache must not fail a run: see codegen.cache."""
    import sys
    from .codegen import cache
    for name, module in list(sys.modules.items()):
        if name.startswith(__name__ + ".") and module is not None:
            cache.tolerate_cache_errors(vars(module))


_tolerate_cache_errors()
