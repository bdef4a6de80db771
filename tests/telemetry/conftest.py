"""Fixtures of the telemetry and report tests: sessions driven once per test run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from telemetry_sessions import Driven, drive_session


@pytest.fixture(scope="session")
def driven() -> Iterator[Driven]:
    """The driven session with provider usage and an epoch rotation."""
    yield drive_session()


@pytest.fixture(scope="session")
def driven_without_usage() -> Iterator[Driven]:
    """The same script with no provider answers and no rotation."""
    yield drive_session("no-usage", responses=False, rotate=False)
