"""A sync call run in a worker thread, for the async twins of the log, the session and streams."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def to_thread(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """:func:`asyncio.to_thread`, with asyncio imported on first use: sync callers never load it."""
    import asyncio

    return await asyncio.to_thread(func, *args, **kwargs)
