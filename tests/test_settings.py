"""Settings: one validated class per area under flat names; a bad value is one line from every entry point."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from services.core.errors import KnowledgeError
from services.core.settings import (ENV_PREFIX, OTHER_ENV_NAMES, Area, BugReportSettings, CrossEncoderSettings,
                                    HybridSettings, IndexingSettings, QuerySettings, RrfSettings, Settings,
                                    SettingsError, settings_from_env)
from services.retrieval.strategies.bugreport import SIGNALS

AREAS = Area.__subclasses__()  # the areas; Settings derives from them, not from Area directly


@pytest.fixture
def clean_env(monkeypatch):
    """No KE_* or OPENAI_API_KEY variable from the machine running the tests."""
    for name in list(os.environ):
        if name.startswith("KE_") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    return monkeypatch


def test_settings_combines_every_area_under_flat_names():
    names = [name for area in AREAS for name in area.model_fields]
    assert len(AREAS) >= 11 and len(names) == len(set(names))  # each setting belongs to one area
    assert set(names) == set(Settings.model_fields)
    settings = Settings(rrf_k=10, candidate_pool_min=7, max_file_bytes=2048)
    assert settings.rrf_k == 10 and settings.candidate_pool(top_k=1) == 7 and settings.hybrid_alpha == 0.7
    assert settings.max_file_bytes == 2048


def test_an_area_is_usable_alone_and_validated_alike():
    rrf = RrfSettings(rrf_k=10)
    assert rrf.rrf_k == 10 and not hasattr(rrf, "candidate_pool_min")
    assert QuerySettings().candidate_pool(top_k=20) == Settings().candidate_pool(top_k=20) == 100
    with pytest.raises(SettingsError, match=r"^hybrid_alpha must be a number ≥ 0 and ≤ 1 \(got 1\.5\)$"):
        HybridSettings(hybrid_alpha=1.5)
    with pytest.raises(SettingsError, match="candidate_pool_min is not a setting"):
        RrfSettings(candidate_pool_min=3)


def test_settings_ignores_the_environment(clean_env):
    clean_env.setenv("KE_CANDIDATE_POOL_MIN", "abc")
    clean_env.setenv("KE_RRF_K", "5")
    assert Settings().candidate_pool_min == 50 and Settings().rrf_k == 60.0


def test_settings_from_env_converts_each_kind(clean_env):
    for name, value in {"KE_CANDIDATE_POOL_MIN": "7", "KE_HYBRID_ALPHA": "0.25", "KE_SKIP_MACHINE_MADE": "no",
                        "KE_CROSS_ENCODER_ADAPTIVE": "yes", "KE_EMBEDDING_BACKEND": "torch",
                        "KE_LLM_BASE_URL": "http://127.0.0.1:9/v1"}.items():
        clean_env.setenv(name, value)
    settings = settings_from_env()
    assert settings.candidate_pool_min == 7 and isinstance(settings.candidate_pool_min, int)
    assert settings.hybrid_alpha == 0.25 and settings.skip_machine_made is False
    assert settings.cross_encoder_adaptive is True and settings.embedding_backend == "torch"
    assert settings.llm_base_url == "http://127.0.0.1:9/v1" and settings.rrf_k == 60.0


def test_settings_from_env_overlays_a_base(clean_env):
    clean_env.setenv("KE_RRF_K", "5")
    settings = settings_from_env(Settings(hybrid_k=3))
    assert settings.rrf_k == 5 and settings.hybrid_k == 3


def test_openai_api_key_is_the_fallback_for_the_llm_key(clean_env):
    assert settings_from_env().llm_api_key == ""
    clean_env.setenv("OPENAI_API_KEY", "from-openai")
    assert settings_from_env().llm_api_key == "from-openai"
    clean_env.setenv("KE_LLM_API_KEY", "from-ke")
    assert settings_from_env().llm_api_key == "from-ke"


@pytest.mark.parametrize("name, raw, expected", [
    ("KE_CANDIDATE_POOL_MIN", "abc", "KE_CANDIDATE_POOL_MIN must be an integer ≥ 1 (got 'abc')"),
    ("KE_CANDIDATE_POOL_FACTOR", "-3", "KE_CANDIDATE_POOL_FACTOR must be an integer ≥ 1 (got '-3')"),
    ("KE_PATH_PRIOR_FACTOR", "-3", "KE_PATH_PRIOR_FACTOR must be a number ≥ 0 (got '-3')"),
    ("KE_EMBEDDING_BACKEND", "tensorflow",
     "KE_EMBEDDING_BACKEND must be one of auto, torch, onnx, onnx-int8, openvino, openvino-int8 (got 'tensorflow')"),
    ("KE_EMBEDDING_DEVICE", "tpu", "KE_EMBEDDING_DEVICE must be one of auto, cpu, cuda, mps (got 'tpu')"),
    ("KE_SKIP_MACHINE_MADE", "maybe", "KE_SKIP_MACHINE_MADE must be true or false (got 'maybe')"),
    ("KE_CROSS_ENCODER_MODEL", "", "KE_CROSS_ENCODER_MODEL must be non-empty text (got '')"),
    ("KE_BUGREPORT_K", "0", "KE_BUGREPORT_K must be a number > 0 (got '0')"),
])
def test_a_bad_environment_value_is_one_line_naming_the_variable(clean_env, name, raw, expected):
    clean_env.setenv(name, raw)
    with pytest.raises(SettingsError) as caught:
        settings_from_env()
    assert str(caught.value) == expected and isinstance(caught.value, KnowledgeError)


def test_every_bad_value_is_named_on_the_one_line(clean_env):
    clean_env.setenv("KE_HYBRID_ALPHA", "2")
    clean_env.setenv("KE_CACHE_SIZE", "0")
    with pytest.raises(SettingsError) as caught:
        settings_from_env()
    message = str(caught.value)
    assert "\n" not in message and "KE_HYBRID_ALPHA must be a number ≥ 0 and ≤ 1 (got '2')" in message
    assert "KE_CACHE_SIZE must be an integer ≥ 1 (got '0')" in message


def test_with_changes_validates_and_leaves_the_original_alone():
    settings = Settings()
    changed = settings.with_changes(cross_encoder_batch_size=8)
    assert type(changed) is Settings and changed.cross_encoder_batch_size == 8
    assert settings.cross_encoder_batch_size == 32 and changed.rrf_k == settings.rrf_k
    with pytest.raises(SettingsError, match=r"^candidate_pool_factor must be an integer ≥ 1 \(got -3\)$"):
        settings.with_changes(candidate_pool_factor=-3)
    with pytest.raises(SettingsError, match="^no_such_knob is not a setting$"):
        settings.with_changes(no_such_knob=1)
    with pytest.raises(SettingsError, match="cross_encoder_score_threshold must be a number ≥ 0 and ≤ 1"):
        CrossEncoderSettings().with_changes(cross_encoder_score_threshold=3.0)


def test_equal_settings_hash_alike_and_survive_pickling():
    first, second = Settings(rrf_k=5), Settings(rrf_k=5)
    assert first == second and hash(first) == hash(second) and first != Settings()
    assert len({first: 1, second: 2, Settings(): 3}) == 2
    assert pickle.loads(pickle.dumps(first)) == first
    with pytest.raises(ValidationError, match="frozen"):
        first.rrf_k = 6
    assert first.rrf_k == 5


def _round_trip(settings: Settings) -> Settings:
    return settings.with_changes(rrf_k=settings.rrf_k + 1)


def test_settings_cross_into_a_spawned_process_and_back():
    """The GUI's engine process is spawned and gets its settings pickled."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        back = pool.apply(_round_trip, (Settings(rrf_k=5, embedding_backend="torch"),))
    assert back == Settings(rrf_k=6, embedding_backend="torch")


def test_bugreport_weights_name_every_signal_of_the_strategy():
    weights = BugReportSettings(bugreport_title_weight=1.5, bugreport_test_weight=0.5).bugreport_weights()
    assert set(weights) == set(SIGNALS)
    assert weights["title"] == 1.5 and weights["test"] == 0.5 and weights["bm25"] == 2.0
    assert Settings().bugreport_weights() == BugReportSettings().bugreport_weights()


def test_defaults_are_unchanged_by_the_split():
    settings, indexing = Settings(), IndexingSettings()
    assert (settings.embedding_backend, settings.embedding_device, settings.max_file_bytes) == \
        ("auto", "auto", 1024 * 1024)
    assert indexing.model_dump() == {name: getattr(settings, name) for name in IndexingSettings.model_fields}
    assert (settings.candidate_pool_min, settings.candidate_pool_factor, settings.narrow_pool_factor) == (50, 5, 2)
    assert (settings.path_prior_factor, settings.bugreport_k, settings.llm_timeout_seconds) == (0.8, 30.0, 20.0)


# --- the entry points, run as a user runs them ---

def cli(tmp_path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KE_") and k != "OPENAI_API_KEY"}
    base |= {"QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    return subprocess.run([sys.executable, "-m", "app.cli", *argv, "--data-dir", str(tmp_path / "data")],
                          env={**base, **env}, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("env, argv, expected", [
    ({"KE_CANDIDATE_POOL_MIN": "abc"}, ["strategies"],
     "error: KE_CANDIDATE_POOL_MIN must be an integer ≥ 1 (got 'abc')"),
    ({"KE_PATH_PRIOR_FACTOR": "-3"}, ["query", "{path}", "where is the parser"],
     "error: KE_PATH_PRIOR_FACTOR must be a number ≥ 0 (got '-3')"),
    ({"KE_EMBEDDING_BACKEND": "tensorflow"}, ["serve", "--port", "0"],
     "error: KE_EMBEDDING_BACKEND must be one of auto, torch, onnx, onnx-int8, openvino, openvino-int8 (got 'tensorflow')"),
    ({"KE_CANDIDATE_POOL_FACTOR": "-3"}, ["gui", "{path}"],
     "error: KE_CANDIDATE_POOL_FACTOR must be an integer ≥ 1 (got '-3')"),
    ({"KE_EMBEDDING_DEVICE": "tpu"}, ["mcp"],
     "error: KE_EMBEDDING_DEVICE must be one of auto, cpu, cuda, mps (got 'tpu')"),
])
@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_every_entry_point_prints_one_line_and_exits_1_on_a_bad_value(tmp_path, env, argv, expected):
    done = cli(tmp_path, env, *[arg.format(path=tmp_path) for arg in argv])
    assert (done.returncode, done.stderr.strip()) == (1, expected), done.stderr[-2000:]


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_good_environment_values_reach_the_engine(tmp_path):
    env = {"KE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "KE_LLM_MODEL": "tiny-llm", "KE_CANDIDATE_POOL_MIN": "7",
           "KE_SKIP_MACHINE_MADE": "false", "KE_HYBRID_ALPHA": "0.5"}
    done = cli(tmp_path, env, "strategies", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    llm = next(s for s in json.loads(done.stdout) if s["name"] == "llm")
    assert llm["available"] and llm["reason"] == "tiny-llm at http://127.0.0.1:9/v1"
    without = cli(tmp_path, {}, "strategies", "--json")
    assert not next(s for s in json.loads(without.stdout) if s["name"] == "llm")["available"]


# --- unknown KE_* names: a misspelt setting is reported, never silently ignored ---

def test_a_misspelt_setting_is_refused_with_the_name_it_resembles(clean_env):
    clean_env.setenv("KE_CANDIDTE_POOL_MIN", "7")
    with pytest.raises(SettingsError, match=r"^unknown setting KE_CANDIDTE_POOL_MIN "
                                            r"\(did you mean KE_CANDIDATE_POOL_MIN\?\)$"):
        settings_from_env()
    clean_env.setenv("ke_no_such_knob", "1")  # names are read case-insensitively, as the settings are
    with pytest.raises(SettingsError) as caught:
        settings_from_env()
    assert str(caught.value) == ("unknown setting KE_CANDIDTE_POOL_MIN (did you mean KE_CANDIDATE_POOL_MIN?); "
                                 "unknown setting ke_no_such_knob")


def test_the_ke_names_read_outside_settings_are_allowed(clean_env):
    for name in OTHER_ENV_NAMES:
        clean_env.setenv(name, "1")
    clean_env.setenv("KE_RRF_K", "5")
    assert settings_from_env().rrf_k == 5


def test_every_ke_name_the_project_reads_is_a_setting_or_in_the_one_list():
    """A new KE_ variable read anywhere (engine, faces, benchmarks, tests, CI) is a setting or listed in
    OTHER_ENV_NAMES, or every entry point would refuse it."""
    root = Path(__file__).resolve().parents[1]
    settings = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
    found: dict[str, str] = {}
    for path in [*root.glob("[!.]*/**/*.py"), *root.glob(".ci/*")]:
        if path == Path(__file__) or ".venv" in path.parts or not path.is_file():
            continue
        for name in re.findall(r"\bKE_[A-Z][A-Z0-9_]*[A-Z0-9]\b", path.read_text(errors="replace")):
            found.setdefault(name, str(path.relative_to(root)))
    unknown = {name: where for name, where in found.items() if name not in settings | OTHER_ENV_NAMES}
    assert not unknown and {"KE_TOKEN", "KE_ENCODER_CACHE_DIR"} <= set(found)


@pytest.mark.parametrize("argv", [["strategies"], ["query", "{path}", "where is the parser"], ["serve", "--port", "0"],
                                  ["gui", "{path}"], ["mcp"], ["health", "{path}", "--engine-url",
                                                               "http://127.0.0.1:9"]])
@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_every_entry_point_refuses_an_unknown_setting_in_one_line(tmp_path, argv):
    done = cli(tmp_path, {"KE_CANDIDTE_POOL_MIN": "7"}, *[arg.format(path=tmp_path) for arg in argv])
    expected = "error: unknown setting KE_CANDIDTE_POOL_MIN (did you mean KE_CANDIDATE_POOL_MIN?)"
    assert (done.returncode, done.stderr.strip()) == (1, expected), done.stderr[-2000:]
