"""Integrations with agent frameworks, SDK hooks and gateways; each needs its own extra."""
