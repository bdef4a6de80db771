"""A seeded, scripted coding-agent session for the demo and the tests (no network, no model)."""

from contextwright.demo.script import DemoStep, demo_script

__all__ = ["DemoStep", "demo_script"]
