"""Runnable training scripts; `python -m numbaflow.examples.train_digits` is the main job."""
