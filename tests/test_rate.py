"""The ETA follows the speed a run has now (issue 32: ETA 2:31, the run took 4:54): a fake clock, no sleeping."""

from services.indexing.rate import RateMeter, eta


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_run_that_slows_down_gets_the_eta_of_its_current_speed():
    clock = Clock()
    meter = RateMeter(window=30, clock=clock)
    meter.add(0)
    clock.now = 5
    meter.add(1000)  # the first thousand from the vector cache, in 5 s
    for second in range(6, 96):  # then 10 chunks a second
        clock.now = second
        done = 1000 + 10 * (second - 5)
        left = eta(meter.add(done), done, 3000)
    assert left == (3000 - done) / 10  # 110 s left at 10/s; the run's average (21/s) would say 52 s


def test_no_rate_no_eta_and_a_new_stage_starts_afresh():
    clock = Clock()
    meter = RateMeter(window=30, clock=clock)
    assert eta(meter.add(0), 0, 100) is None  # one mark: no speed yet
    clock.now = 10
    assert eta(meter.add(50), 50, 100) == 10.0
    clock.now = 11
    assert eta(meter.add(0), 0, 40) is None  # the count went back: another stage, measured from its own start
    clock.now = 15
    assert eta(meter.add(20), 20, 40) == 4.0
