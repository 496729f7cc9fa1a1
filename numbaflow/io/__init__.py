"""numbaflow.io (paddle.io): datasets, samplers and the DataLoader.

The private modules `_atomic`, `_arrays` and `_pickle` hold the checkpoint file machinery
that `static.save/load` and `save_inference_model` use.
"""
