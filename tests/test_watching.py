"""Watching's debounce on its own: a burst of changes is reported as one batch, and no change waits past the
longest delay, on a fake clock (no thread, no sleeping)."""

from __future__ import annotations

import pytest

from services.engine.watching import Debounce


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_of_changes_is_reported_in_one_batch_once_it_is_quiet():
    clock = FakeClock()
    debounce = Debounce(clock, quiet=3.0, longest=10.0)
    assert debounce.wait() is None and debounce.take() == set()  # nothing gathered
    for number in range(20):  # a checkout-like burst: a write every 50 ms for a second
        debounce.add([f"file{number}.py"])
        clock.now += 0.05
        assert debounce.take() == set()
    assert debounce.wait() == pytest.approx(2.95)
    clock.now += 2.95 + 1e-9
    assert debounce.take() == {f"file{n}.py" for n in range(20)}
    assert debounce.wait() is None and debounce.take() == set()  # taken once


def test_a_change_is_reported_at_the_latest_after_the_longest_delay_even_mid_burst():
    clock = FakeClock()
    debounce = Debounce(clock, quiet=1.0, longest=10.0)
    for second in range(10):  # a change every half second: never quiet for a whole second
        debounce.add([f"early{second}.py"])
        clock.now += 0.5
        debounce.add([f"late{second}.py"])
        clock.now += 0.5
        assert len(debounce.take()) == (20 if second == 9 else 0)  # 10 s after the first change
    debounce.add(["next.py"])  # the next batch starts its own delay
    assert debounce.wait() == 1.0
