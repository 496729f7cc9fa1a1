"""Elementwise arithmetic, activations, reductions and matrix products."""
