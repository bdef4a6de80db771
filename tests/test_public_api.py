"""The public surface is small, sorted and deliberate: changing it must change this test."""

import contextwright

EXPECTED = [
    "AgentSpec",
    "BudgetConfig",
    "BuiltRequest",
    "Clock",
    "ContextwrightError",
    "Engine",
    "Event",
    "EventLog",
    "FixedClock",
    "InMemoryMemory",
    "MemoryPort",
    "NewEvent",
    "RecallPort",
    "RoundPolicy",
    "Session",
    "SystemClock",
    "Tool",
    "ToolOutputPolicy",
    "__version__",
    "errors",
    "models",
    "open_log",
]


def test_exported_names_are_pinned_and_sorted():
    assert contextwright.__all__ == EXPECTED
    assert contextwright.__all__ == sorted(contextwright.__all__)


def test_every_exported_name_exists_and_is_documented():
    for name in contextwright.__all__:
        value = getattr(contextwright, name)
        if name != "__version__":
            assert getattr(value, "__doc__", None), name
