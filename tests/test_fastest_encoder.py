"""The `auto` backend (issue 44, "the fastest encoder for this CPU"): on first use the equal-quality CPU backends are
timed on the user's own chunks, the fastest is kept per machine and re-measured when the CPU or a runtime's version
changes; an index keeps the backend it was built with, and health says which and why. Real encoders (the stand-in
model), a clock given to the measurement so that the winner is known: no durations are asserted."""

from __future__ import annotations

import pytest

from services.encoders import EncoderSpec, fastest
from services.encoders.embedder import embedder_for
from services.engine.service import LocalEngine
from tests.helpers.stand_in_encoder import stand_in_settings

pytestmark = pytest.mark.stand_in_encoder

TEXTS = [f"def add_{n}(a, b):\n    return a + b * {n}\n" for n in range(40)]
MACHINE: dict[str, dict] = {"cpu": {"model": "Test CPU", "flags": ["avx2", "avx512_vnni"], "cores": 2},
           "versions": {"openvino": "1", "onnxruntime": "1"}}


def clock(*readings: float):
    """A clock reading `readings` in turn (two per candidate that runs: before and after its timing), then failing."""
    return iter(readings).__next__


@pytest.fixture(scope="module")
def spec():
    return embedder_for(stand_in_settings(), "index", threads=0).cpu_spec()


def test_the_fastest_candidate_is_chosen_recorded_and_read_back_without_measuring(spec, tmp_path):
    record = tmp_path / "record.json"
    choice = fastest.choose(spec, lambda: TEXTS, MACHINE, clock(0.0, 2.0, 0.0, 1.0), path=record)
    assert choice.backend == "onnx-int8"  # timed twice as fast
    assert choice.rates == {"openvino-int8": 128.0, "onnx-int8": 256.0} and choice.failed == {}
    assert (choice.texts, choice.own) == (256, 40)  # topped up with calibration.json's chunks
    assert choice.line().startswith("encoder onnx-int8: chosen on this machine ")
    assert choice.line().endswith(", 256 chunks/s vs openvino-int8 128 on 256 chunks (40 of yours)")
    again = fastest.choose(spec, lambda: pytest.fail("measured again"), MACHINE, clock(), path=record)
    assert again == choice == fastest.recorded(spec, MACHINE, record)


def test_a_tie_goes_to_the_measured_default(spec, tmp_path):
    choice = fastest.choose(spec, lambda: TEXTS * 7, MACHINE, clock(0.0, 1.02, 0.0, 1.0), path=tmp_path / "r.json")
    assert choice.backend == "openvino-int8" and choice.own == choice.texts == 256  # 2% slower: a tie


@pytest.mark.parametrize("change", [{"cpu": {**MACHINE["cpu"], "flags": ["avx2"]}},
                                    {"versions": {**MACHINE["versions"], "openvino": "2"}}])
def test_another_cpu_or_runtime_version_measures_again(spec, tmp_path, change):
    record = tmp_path / "record.json"
    fastest.choose(spec, lambda: TEXTS, MACHINE, clock(0.0, 2.0, 0.0, 1.0), path=record)
    other = {**MACHINE, **change}
    assert fastest.recorded(spec, other, record) is None
    choice = fastest.choose(spec, lambda: TEXTS, other, clock(0.0, 1.0, 0.0, 2.0), path=record)
    assert choice.backend == "openvino-int8"
    assert fastest.recorded(spec, MACHINE, record).backend == "onnx-int8"  # each machine keeps its own


def test_a_candidate_that_cannot_start_is_skipped_saying_why(tmp_path):
    not_a_model = tmp_path / "empty-model"
    not_a_model.mkdir()
    spec = EncoderSpec(str(not_a_model), cache_dir=tmp_path / "exports")
    record = tmp_path / "record.json"
    choice = fastest.choose(spec, lambda: TEXTS, MACHINE, clock(), path=record)
    assert choice.backend == fastest.DEFAULT and set(choice.failed) == set(fastest.CANDIDATES)
    assert choice.line().startswith("encoder openvino-int8: none of openvino-int8, onnx-int8 could start to be timed (")
    assert fastest.recorded(spec, MACHINE, record) is None  # nothing learnt: measured again next time


async def test_an_index_keeps_its_backend_and_a_new_one_runs_the_fastest(spec, tmp_path):
    chosen = fastest.choose(spec, lambda: TEXTS).backend  # this machine's (measured once, kept)
    other = next(name for name in fastest.CANDIDATES if name != chosen)
    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        folder.mkdir()
        (folder / "adder.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    with_other = LocalEngine(stand_in_settings(embedding_backend=other), data_dir=tmp_path / "data")
    await with_other.index(old)
    with_other.close()
    engine = LocalEngine(stand_in_settings(), data_dir=tmp_path / "data")  # auto, the default
    try:
        (old / "more.py").write_text("def subtract(a, b):\n    return a - b\n")
        report = await engine.index(old)
        assert report.rebuilt_reason == "" and report.chunks_embedded == 1  # not rebuilt: only the new file
        health = await engine.health(old)
        assert health.backend == other
        assert health.encoder_note == f"encoder {other}: the one this index was built with (auto keeps it; " \
                                      f"a full rebuild runs {chosen})"
        await engine.index(new)
        health = await engine.health(new)
        assert health.backend == chosen and health.encoder_note == fastest.recorded(spec).line()
        assert "chosen on this machine" in health.encoder_note
    finally:
        engine.close()


def test_two_first_indexes_at_once_measure_once_and_say_the_same(spec, tmp_path):
    """Two engines building their first index together (the window's and a CLI's): one measures, under the
    record's lock, and the other reads its record, so both say the same line."""
    import threading

    record, asked, choices = tmp_path / "record.json", [], []
    readings = clock(0.0, 2.0, 0.0, 1.0)  # one measurement's worth: a second one would exhaust it

    def texts() -> list[str]:
        asked.append(threading.current_thread().name)
        return TEXTS

    threads = [threading.Thread(target=lambda: choices.append(fastest.choose(spec, texts, MACHINE, readings,
                                                                             path=record))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert len(asked) == 1 and len(choices) == 2 and choices[0] == choices[1]
    assert choices[0].backend == "onnx-int8"
