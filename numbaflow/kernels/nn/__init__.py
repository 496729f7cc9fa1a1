"""The ops of neural-network layers: convolution, pooling, normalisation, recurrence, losses."""
