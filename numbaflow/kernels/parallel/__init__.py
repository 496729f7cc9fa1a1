"""Ops across the devices of a data-parallel run: collectives and sync batch norm."""
