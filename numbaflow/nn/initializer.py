"""paddle.nn.initializer: parameter initializers (their home is numbaflow.param_init, below
the API faces, so that ParamAttr and LayerHelper use them without importing nn).

>>> w = paddle.ParamAttr(initializer=paddle.nn.initializer.Normal(0.0, 0.02))
"""
from ..param_init import *  # noqa: F401,F403
from ..param_init import __all__  # noqa: F401
