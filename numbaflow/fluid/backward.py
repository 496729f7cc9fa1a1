"""fluid.backward: append_backward and gradients."""
from ..graph.backward import append_backward, gradients  # noqa: F401

__all__ = ["append_backward", "gradients"]
