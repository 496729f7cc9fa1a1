"""numbaflow's version (pyproject.toml's), kept apart so that the modules below the package
face, such as the health check, can read it without importing `numbaflow` itself."""
__version__ = "0.2.0"
