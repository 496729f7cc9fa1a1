"""Tensor ops: creation, shape, indexing, tensor arrays and control flow."""
