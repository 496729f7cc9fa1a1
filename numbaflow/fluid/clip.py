"""fluid.clip: gradient clipping with Paddle 1.x's names."""
from ..nn.clip import ClipGradByGlobalNorm

GradientClipByGlobalNorm = ClipGradByGlobalNorm

__all__ = ["ClipGradByGlobalNorm", "GradientClipByGlobalNorm"]
