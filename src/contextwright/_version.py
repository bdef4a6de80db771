"""The package version, in one place that imports nothing."""

__version__ = "0.1.0"
