"""fluid.initializer: Paddle 1.8's initializer classes (their home is numbaflow.initializer).

>>> w = fluid.ParamAttr(initializer=fluid.initializer.Xavier(uniform=False))
"""
from ..initializer import *  # noqa: F401,F403
from ..initializer import __all__  # noqa: F401
