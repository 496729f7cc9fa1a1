"""fluid.initializer: the Paddle 1.x initializer names (and the 2.x ones)."""
from ..nn.initializer import (Constant, ConstantInitializer, KaimingNormal,  # noqa: F401
                              KaimingUniform, MSRAInitializer, Normal, NormalInitializer,
                              TruncatedNormal, Uniform, UniformInitializer, XavierInitializer,
                              XavierNormal, XavierUniform)

__all__ = ["Constant", "Uniform", "Normal", "TruncatedNormal", "XavierUniform", "XavierNormal",
           "KaimingNormal", "KaimingUniform", "ConstantInitializer", "UniformInitializer",
           "NormalInitializer", "XavierInitializer", "MSRAInitializer"]
