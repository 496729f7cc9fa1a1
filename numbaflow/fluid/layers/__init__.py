"""fluid.layers: the Paddle 1.x layer functions, as thin wrappers over numbaflow's ops.

Paddle 1.x argument names and defaults are kept (`input=`, `act=`, `dim=`, `keep_dim=`,
argmax's `axis=0`); each appends the same ops as the 2.x function it delegates to. As in
Paddle 1.8, a full reduction (`mean`, `reduce_*` over every dim, `accuracy`) has shape
(1,), not 0-D, so 1.x programs that index a fetched loss as `loss[0]` run unchanged.
"""
from ...nn.functional_conv import fluid_conv2d as conv2d  # noqa: F401
from ...nn.functional_nn import fluid_batch_norm as batch_norm  # noqa: F401
from ...nn.functional_nn import fluid_dropout as dropout  # noqa: F401
from ...nn.functional_pool import fluid_pool2d as pool2d  # noqa: F401
from . import (basic, control_flow, device, elementwise, learning_rate_scheduler,  # noqa: F401
               metric_op, nn, rnn, tensor)
from .basic import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .nn import scalar_1d  # noqa: F401
from .tensor import *  # noqa: F401,F403
from .learning_rate_scheduler import *  # noqa: F401,F403
from .metric_op import auc  # noqa: F401
from .control_flow import *  # noqa: F401,F403
from .rnn import lstm  # noqa: F401

__all__ = (basic.__all__ + ["batch_norm", "dropout", "pool2d", "conv2d", "auc", "device"]
           + elementwise.__all__ + nn.__all__ + tensor.__all__ + learning_rate_scheduler.__all__
           + control_flow.__all__ + ["lstm"])


def __getattr__(name):
    """A clear error for the LoD sequence layers numbaflow does not have (rnn.py)."""
    raise AttributeError(rnn.not_provided(name) or
                         f"module 'numbaflow.fluid.layers' has no attribute {name!r}")
