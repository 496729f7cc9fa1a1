from .place import CPUPlace, CUDAPlace, cpu_places, cuda_places  # noqa: F401
from .scope import Scope, global_scope, scope_guard  # noqa: F401
from .executor import Executor  # noqa: F401
from . import control_flow  # noqa: F401,E402  (installs the sub-block runner)
