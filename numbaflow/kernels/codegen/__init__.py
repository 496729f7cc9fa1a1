"""Scalar body -> source -> compiled kernel (CPU loop template; CUDA comes later)."""
