"""The `knowledge-explorer` command line, run in-process on the sample workspace."""

from __future__ import annotations

import json

import pytest

from app.cli import main, normalise_argv
from services.core.messages import QueryRequest
from services.core.settings import DEFAULT_STRATEGY


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_index_health_query_and_strategies_print_stable_json(capsys, workspace, data_dir):
    code, out, _ = run(capsys, "index", str(workspace), "--data-dir", str(data_dir), "--json")
    report = json.loads(out)
    assert code == 0 and report["files_indexed"] > 10 and report["chunks_embedded"] == report["chunks_total"]
    assert {"files_indexed", "files_unchanged", "files_removed", "chunks_embedded", "chunks_total",
            "seconds"} <= set(report)

    code, out, _ = run(capsys, "health", str(workspace), "--data-dir", str(data_dir), "--json")
    health = json.loads(out)
    assert code == 0 and health["indexed"] and health["chunks"] == report["chunks_total"]
    assert {"indexed", "files", "chunks", "languages", "stale_files", "needs_reindex", "skipped", "model",
            "dimension", "updated_at", "size_bytes", "last_error", "state"} <= set(health)
    assert health["state"] == "ready" and health["last_error"] == ""

    code, out, _ = run(capsys, "query", str(workspace), "what implements ChunkStore", "--strategy", "metadata",
                       "--top-k", "3", "--data-dir", str(data_dir), "--json")
    result = json.loads(out)
    assert code == 0 and result["strategy"] == "metadata" and result["reranked"] is True
    assert result["fallback_reason"] is None and result["cache_hit"] is False
    assert set(result["timings_ms"]) >= {"embed", "search", "rerank", "expand"}
    first = result["results"][0]
    assert {"rank", "original_rank", "original_score", "score", "stale", "signals", "context"} <= set(first)
    assert {"path", "start_line", "end_line", "symbol", "qualified_name", "kind", "language", "content"} <= set(
        first["chunk"])
    assert first["chunk"]["symbol"] in ("MemoryChunkStore", "DiskChunkStore") and first["rank"] == 1
    assert first["stale"] == "" and [r["original_rank"] for r in result["original"]] == [1, 2, 3]
    assert [s["name"] for s in first["signals"]] == ["cosine similarity", "implements chunkstore"]
    assert first["signals"][1]["op"] == "mul" and first["signals"][1]["contribution"] == 1.5
    assert first["signals"][0]["value"] * 1.5 == pytest.approx(first["score"])
    assert result["pool_size"] >= 3

    code, out, _ = run(capsys, "strategies", "--json")
    strategies = {s["name"]: s for s in json.loads(out)}
    assert {"none", "keyword-boost", "rrf", "hybrid", "heuristic", "metadata", "cross-encoder", "llm"} <= set(strategies)
    assert strategies["cross-encoder"]["available"] is False and "not on this machine" in strategies["cross-encoder"]["reason"]
    assert strategies["metadata"]["description"] and strategies["metadata"]["available"] is True

    # no --strategy: the one default of every face (the REST request's too)
    code, out, _ = run(capsys, "query", str(workspace), "save a note", "--data-dir", str(data_dir), "--json")
    assert code == 0 and json.loads(out)["strategy"] == DEFAULT_STRATEGY == QueryRequest("q").strategy


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_fallback_is_reported_in_query_json(capsys, workspace, data_dir):
    run(capsys, "index", str(workspace), "--data-dir", str(data_dir), "--json")
    code, out, _ = run(capsys, "query", str(workspace), "save a note", "--strategy", "cross-encoder",
                       "--data-dir", str(data_dir), "--json")
    result = json.loads(out)
    assert code == 0 and result["reranked"] is False and "cross-encoder" in result["fallback_reason"]


def test_errors_are_one_clear_line_and_exit_1(capsys, tmp_path, data_dir):
    code, _, err = run(capsys, "index", str(tmp_path / "missing"), "--data-dir", str(data_dir))
    assert code == 1 and err.startswith("error: ") and "does not exist" in err
    code, _, err = run(capsys, "query", str(tmp_path), "   ", "--data-dir", str(data_dir))
    assert code == 1 and "empty" in err
    code, _, err = run(capsys, "index", str(tmp_path), "--data-dir", str(data_dir), "--model", "nobody/nothing")
    assert code == 1 and "nobody/nothing" in err


def test_health_of_an_unindexed_folder_says_so(capsys, tmp_path, data_dir):
    code, out, _ = run(capsys, "health", str(tmp_path), "--data-dir", str(data_dir))
    assert code == 0 and "not indexed" in out


@pytest.mark.parametrize("argv, expected", [
    ([], ["gui"]), (["some/folder"], ["gui", "some/folder"]),
    (["index", "x"], ["index", "x"]), (["--data-dir", "d", "query", "x", "q"], ["--data-dir", "d", "query", "x", "q"]),
])
def test_a_bare_path_opens_the_app(argv, expected):
    assert normalise_argv(argv) == expected


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_gui_screenshot_mode_runs_the_real_app_with_its_engine_process(workspace, data_dir, tmp_path):
    """`knowledge-explorer gui PATH --screenshot OUT.png --query Q` as a user runs it (offscreen)."""
    import os
    import subprocess
    import sys

    out = tmp_path / "window.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "gui", str(workspace), "--data-dir", str(data_dir),
         "--screenshot", str(out), "--query", "what implements ChunkStore", "--strategy", "metadata"],
        env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
    from PySide6.QtGui import QImage

    image = QImage(str(out))
    assert image.width() >= 1000 and image.height() >= 600


def test_a_name_s_answer_says_how_it_was_read_once():
    from app.render import query_text
    from services.core.models import QueryResult

    def result(reading_note: str, strategy_note: str) -> QueryResult:
        return QueryResult("Node", "auto", [], [], [], 0, 0, True, None, False, {"total": 1.0},
                           reading_note=reading_note, strategy_note=strategy_note)

    name = query_text(result("read as name `Node`: 1 definition first",
                             "read as a name `Node`: its definitions first (metadata)"))
    assert name.count("read as") == 1 and "1 definition first" in name
    report = query_text(result("", "a bug report of 80 words: ranking by bug-report"))
    assert "(a bug report of 80 words: ranking by bug-report)" in report
