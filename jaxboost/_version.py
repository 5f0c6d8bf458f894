"""The package version (read by the model format and the build)."""

__version__ = "0.1.0"
