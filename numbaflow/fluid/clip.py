"""fluid.clip: gradient clipping with Paddle 1.x's names."""
from ..nn.clip import ClipGradByGlobalNorm, ClipGradByNorm

GradientClipByGlobalNorm = ClipGradByGlobalNorm
GradientClipByNorm = ClipGradByNorm

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "GradientClipByGlobalNorm",
           "GradientClipByNorm"]
