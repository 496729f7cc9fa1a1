"""fluid.executor: `Executor`, `global_scope`, `scope_guard` (Paddle 1.x's module path;
the same objects as `static.*`)."""
from ..executor import Executor, Scope, global_scope, scope_guard  # noqa: F401

__all__ = ["Executor", "Scope", "global_scope", "scope_guard"]
