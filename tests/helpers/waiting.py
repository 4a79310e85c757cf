"""Waiting on conditions, never on fixed sleeps."""

from __future__ import annotations

import asyncio
import time


async def wait_for(condition, timeout: float = 60.0, what: str = "condition"):
    """Poll an async or plain condition until it is truthy; return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
