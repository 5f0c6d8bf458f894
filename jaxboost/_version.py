"""The package version: its one source (pyproject.toml reads it for the build; the
model format writes it into every file)."""

__version__ = "0.1.0"
