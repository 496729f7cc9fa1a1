"""Load a hostile model or checkpoint under 3 GiB of address space: prints REFUSED and the
error and exits 0 when numbaflow refuses it with FileFormatError, exits 3 when it loads.
Usage: load_under_memory_limit.py PREFIX {inference_model,program_state}.
Run by tests/faults/test_fault_outside_files.py (devices, FIFOs) under a timeout."""
import resource
import sys

resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

import numbaflow as paddle  # noqa: E402  (imported under the limit)
import numbaflow.static as static  # noqa: E402
from numbaflow.graph.serialize import FileFormatError  # noqa: E402

prefix, what = sys.argv[1], sys.argv[2]
try:
    if what == "inference_model":
        static.load_inference_model(prefix, static.Executor(paddle.CPUPlace()))
    else:
        static.load_program_state(prefix)
except FileFormatError as e:
    print("REFUSED", e)
    sys.exit(0)
print("LOADED")
sys.exit(3)
