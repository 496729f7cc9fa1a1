"""`numbaflow-bench` (also `python -m numbaflow.bench`): numbaflow vs numpy, numba and peers.

`cases` holds the micro and model-step workloads, `baselines` the hand-written numpy / numba
versions, `models` the CNN, GPT and MLP in Paddle 2.6 spelling (importable on their own:
`from numbaflow.bench.models import cnn_program`), `model_rows` their runs against JAX,
PyTorch and Paddle in worker processes (`worker`, `peer_models`), `harness` the timing and
statistics, and `report` the header, tables, JSON record and comparison.
"""
