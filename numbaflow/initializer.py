"""`numbaflow.initializer`: the fluid-era path (Paddle 1.8's `paddle.fluid.initializer`
classes and signatures), plus the 2.x names of `numbaflow.nn.initializer`."""
from .fluid.initializer import *  # noqa: F401,F403
from .fluid.initializer import (MSRA, Constant, ConstantInitializer,  # noqa: F401
                                MSRAInitializer, Normal, NormalInitializer,
                                NumpyArrayInitializer, TruncatedNormal, Uniform,
                                UniformInitializer, Xavier, XavierInitializer)
from .nn.initializer import (Assign, KaimingNormal, KaimingUniform, XavierNormal,  # noqa: F401
                             XavierUniform)
