"""Telemetry derived from the log (never a second source of truth)."""
