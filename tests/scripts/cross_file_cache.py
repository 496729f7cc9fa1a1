"""Child of test_kernel_cache: call pkg.a.f (a cache=True kernel whose callee lives in
pkg/b.py) from the package under argv[1] and print its result; with argv[2] == "wrap",
numbaflow's cache wrapping (keyed by the package's sources) is applied first."""
import sys

sys.path.insert(0, sys.argv[1])
import pkg.a  # noqa: E402

if sys.argv[2] == "wrap":
    from numbaflow.kernels.codegen.cache import tolerate_cache_errors
    tolerate_cache_errors(vars(pkg.a), root=pkg.__path__[0])
print(pkg.a.f())
