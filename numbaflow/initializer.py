"""`numbaflow.initializer`: the fluid-era path of `numbaflow.nn.initializer`."""
from .nn.initializer import *  # noqa: F401,F403
from .nn.initializer import (Constant, ConstantInitializer, KaimingNormal,  # noqa: F401
                             KaimingUniform, MSRAInitializer, Normal, NormalInitializer,
                             TruncatedNormal, Uniform, UniformInitializer, XavierInitializer,
                             XavierNormal, XavierUniform)
