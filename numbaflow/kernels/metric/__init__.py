"""Metric ops (accuracy, auc)."""
