"""Fused ops: made only by graph passes, each replacing a group of ops a program wrote."""
