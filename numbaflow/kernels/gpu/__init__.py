"""What the hand-written CUDA kernels share: launch helpers, bad-data reporting, host staging."""
