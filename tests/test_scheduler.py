"""The index-run scheduler on its own: when automatic runs start, what they cover, pausing, and the
reference recount's delay, on a fake clock (no thread, no sleeping)."""

from __future__ import annotations

from pathlib import Path

from services.engine.scheduler import NOTHING, RUN, STALE, IndexScheduler

ROOT = Path("/work/space")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def watched(auto_reindex: bool = True) -> IndexScheduler:
    scheduler = IndexScheduler(clock=FakeClock(), reference_delay=3.0)
    scheduler.watch(ROOT, auto_reindex)
    assert scheduler.start_auto(ROOT) == (True, None)  # the catch-up run looks at everything
    scheduler.finish_auto(ROOT, complete=True)
    return scheduler


def test_changes_are_gathered_for_one_run_and_taken_once():
    scheduler = watched()
    assert scheduler.changed(ROOT, {"a.py"}) == RUN and scheduler.changed(ROOT, {"b.py"}) == RUN
    assert scheduler.start_auto(ROOT) == (True, {"a.py", "b.py"}) and scheduler.running(ROOT)
    assert scheduler.start_auto(ROOT) == (False, None)  # the second submission finds nothing left
    scheduler.finish_auto(ROOT, complete=True)
    assert not scheduler.running(ROOT) and scheduler.pending(ROOT) == set()


def test_anything_changed_makes_the_next_run_look_at_everything():
    scheduler = watched()
    scheduler.changed(ROOT, {"a.py"})
    scheduler.changed(ROOT, None)
    scheduler.changed(ROOT, {"b.py"})
    assert scheduler.start_auto(ROOT) == (True, None)


def test_a_cancelled_or_failed_run_leaves_everything_for_the_next_and_failed_files_are_retried():
    scheduler = watched()
    scheduler.changed(ROOT, {"a.py"})
    scheduler.start_auto(ROOT)
    scheduler.finish_auto(ROOT, complete=False)
    assert scheduler.pending(ROOT) is None
    scheduler.start_auto(ROOT)
    scheduler.finish_auto(ROOT, complete=True, retry={"broken.py"})
    assert scheduler.pending(ROOT) == {"broken.py"}


def test_with_auto_reindex_off_changes_are_reported_as_stale_and_not_gathered():
    scheduler = IndexScheduler(clock=FakeClock())
    scheduler.watch(ROOT, auto_reindex=False)
    assert scheduler.changed(ROOT, {"a.py"}) == STALE
    assert scheduler.start_auto(ROOT) == (False, None)
    assert scheduler.changed(Path("/elsewhere"), {"a.py"}) == NOTHING  # not watched


def test_an_automatic_run_stands_back_for_a_users_run_and_looks_again_after_it():
    scheduler = watched()
    assert not scheduler.begin_user(ROOT)  # no automatic run to stop
    scheduler.changed(ROOT, {"a.py"})
    assert scheduler.start_auto(ROOT) == (False, None)  # the user's run holds the workspace
    assert scheduler.pending(ROOT) == {"a.py"}  # kept
    assert scheduler.end_user(ROOT, complete=True)  # it may have scanned before the change: look again
    assert scheduler.start_auto(ROOT) == (True, {"a.py"})


def test_a_cancelled_users_run_leaves_the_changes_for_the_next_change():
    scheduler = watched()
    scheduler.begin_user(ROOT)
    scheduler.changed(ROOT, {"a.py"})
    scheduler.start_auto(ROOT)
    assert not scheduler.end_user(ROOT, complete=False)
    assert scheduler.pending(ROOT) == {"a.py"}


def test_a_users_run_stops_the_automatic_run_under_way():
    scheduler = watched()
    scheduler.changed(ROOT, {"a.py"})
    scheduler.start_auto(ROOT)
    assert scheduler.begin_user(ROOT)


def test_cancelling_an_automatic_run_pauses_until_a_users_run_finishes():
    scheduler = watched()
    scheduler.changed(ROOT, {"a.py"})
    scheduler.start_auto(ROOT)
    assert scheduler.pause(ROOT)  # a run was under way: the engine stops it
    scheduler.finish_auto(ROOT, complete=False)
    for _ in range(4):  # a burst goes on: every change is listed as stale, none starts a run
        assert scheduler.changed(ROOT, {"b.py"}) == STALE
        assert scheduler.start_auto(ROOT) == (False, None) and not scheduler.running(ROOT)
    assert scheduler.pending(ROOT) is None  # never lost: the next run looks at everything
    scheduler.watch(ROOT, auto_reindex=True)  # watched again (the workspace reopened): still paused
    assert scheduler.paused(ROOT) and scheduler.start_auto(ROOT) == (False, None)
    scheduler.begin_user(ROOT)
    scheduler.end_user(ROOT, complete=False)  # a cancelled F5 resumes nothing
    assert scheduler.paused(ROOT)
    scheduler.begin_user(ROOT)
    scheduler.end_user(ROOT, complete=True)  # F5 (or Resume) finished
    assert not scheduler.paused(ROOT)
    assert scheduler.changed(ROOT, {"c.py"}) == RUN and scheduler.start_auto(ROOT)[0]


def test_no_run_while_the_folder_is_missing():
    scheduler = watched()
    scheduler.set_missing(ROOT, True)
    scheduler.changed(ROOT, None)
    assert scheduler.start_auto(ROOT) == (False, None)
    scheduler.set_missing(ROOT, False)
    assert scheduler.start_auto(ROOT) == (True, None)


def test_references_are_recounted_once_runs_pause_for_the_delay():
    clock = FakeClock()
    scheduler = IndexScheduler(clock=clock, reference_delay=3.0)
    scheduler.watch(ROOT, True)
    scheduler.start_auto(ROOT)
    scheduler.finish_auto(ROOT, complete=True, recount_references=True)
    assert scheduler.next_deadline() == 103.0
    clock.now = 102.0
    scheduler.changed(ROOT, {"a.py"})  # another run within the delay pushes the recount back
    scheduler.start_auto(ROOT)
    scheduler.finish_auto(ROOT, complete=True, recount_references=True)
    clock.now = 104.0
    assert scheduler.references_due() == []
    clock.now = 105.0
    assert scheduler.references_due() == [ROOT]
    assert scheduler.references_due() == [] and scheduler.next_deadline() is None  # once per quiet spell
