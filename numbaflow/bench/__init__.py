"""`numbaflow-bench` (also `python -m numbaflow.bench`): numbaflow vs numpy, numba and peers.

`cases` holds the workloads, `baselines` the hand-written numpy / numba versions,
`peers` torch / jax / paddle when installed, and `harness` the timing and the table.
"""
