"""The top layer of the run path: `CompiledProgram` (a program plus its BuildStrategy /
ExecutionStrategy, compiled by the graph passes), `with_data_parallel` and
`ParallelExecutor`. It builds on `executor` (one program on one place) and
`distributed` (every data-parallel part) and nothing imports it but the public API."""
from .strategy import BuildStrategy, ExecutionStrategy  # noqa: F401
from .compiled_program import CompiledProgram  # noqa: F401
from .parallel_executor import ParallelExecutor  # noqa: F401
