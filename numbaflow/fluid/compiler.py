"""fluid.compiler: `CompiledProgram`, `BuildStrategy`, `ExecutionStrategy` (Paddle 1.x's
module path; the same classes as `static.*`)."""
from ..compiler import BuildStrategy, CompiledProgram, ExecutionStrategy  # noqa: F401

__all__ = ["CompiledProgram", "BuildStrategy", "ExecutionStrategy"]
