"""Optimizer updates and the norms gradient clipping reads."""
