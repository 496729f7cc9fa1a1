"""Run under `mpiexec -n 2 python tests/mpi/rank_log.py`: each rank logs one warning through
numbaflow's logger, which tags the line with the rank. Run by tests/training/test_health.py."""
import logging

import numbaflow  # noqa: F401  (installs the rank-tagged handler)

logging.getLogger("numbaflow.x").warning("hello")
