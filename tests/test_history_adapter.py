"""History as free labels (issue #19): with too few labelled questions, `tuned` learns its adapter from the
repository's commits (message -> the chunks of the files it touched), on a real git repository the test
makes, judged on held-out newer commits, and only from commits before the question's cut-off."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from services.core.models import QueryOptions
from services.engine.service import LocalEngine
from services.core.labelled import LabelledQuery
from services.evaluation.runner import evaluate
from services.indexing.history import read_history
from services.retrieval.strategies import query_adapter as adapters
from tests.test_history import DAY, START, Repo

TOPICS = {  # file -> (code, words its commits use; none of them in the code)
    "colors.py": ("def shade(rgb):\n    return tuple(c // 2 for c in rgb)\n", "palette hue banner tint"),
    "dates.py": ("def weekday(stamp):\n    return stamp.weekday()\n", "calendar timezone leap year"),
    "network.py": ("def fetch(url):\n    return open_socket(url).read()\n", "proxy timeout retry download"),
    "storage.py": ("def save(record, db):\n    db.put(record.key, record)\n", "persist disk corruption flush"),
    "latex.py": ("def render(expr):\n    return '$' + str(expr) + '$'\n", "typeset matrix fraction printing"),
    "parser.py": ("def tokenize(text):\n    return text.split()\n", "grammar syntax error lexer"),
}


@dataclass(frozen=True)
class _Chunk:
    id: str
    path: str


@pytest.fixture(scope="module")
def history_repo(tmp_path_factory) -> Repo:
    """42 commits, one a day: 7 rounds over the 6 topic files, each commit's message in its topic's words."""
    repo = Repo(tmp_path_factory.mktemp("history-adapter") / "project")
    repo.commit("Initial version", **{name: code for name, (code, _) in TOPICS.items()})
    for round_ in range(7):
        for name, (code, words) in TOPICS.items():
            w = words.split()
            repo.commit(f"Fix the {w[round_ % 4]} handling ({w[(round_ + 1) % 4]}, {w[(round_ + 2) % 4]})",
                        **{name: code + f"# revision {round_}\n"})
    return repo


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_history_pairs_use_only_commits_before_the_cut_off_and_skip_mass_edits(history_repo, tmp_path):
    commits = read_history(history_repo.folder)
    chunks = [_Chunk(f"{name}:1-2:x", name) for name in TOPICS]
    everything = adapters.history_pairs(commits, chunks, None)
    assert len(everything) == 42  # the initial commit touched 6 files: a mass edit, not a label
    cut = START + 10 * DAY  # commits of days 2..9 only (day 1: the initial commit)
    early = adapters.history_pairs(commits, chunks, cut)
    assert len(early) == 8 and all(m.startswith("Fix the") for m, _ in early)
    assert {m for m, _ in early} <= {c.message for c in commits if c.time < cut}
    message, rows = everything[0]  # newest first: the last commit touched parser.py
    assert "grammar" in message or "syntax" in message or "lexer" in message
    assert [chunks[r].path for r in rows] == ["parser.py"]


def test_history_training_reads_a_bounded_number_of_vectors_whatever_the_index_s_size():
    """The newest commits' chunks fill at most half the budget, random other chunks the rest."""
    import numpy as np

    pairs = [(f"commit {n}", np.arange(n * 100, n * 100 + 100)) for n in range(400)]  # 100 chunks a commit
    kept = adapters.within_budget(pairs, budget=1_000)
    assert [m for m, _ in kept] == [f"commit {n}" for n in range(5)]

    class Index:  # stands in for the StrategyContext's vector read (the real one: tests/test_scale.py)
        asked: list[str] = []

        def embeddings(self, ids):
            self.asked.extend(ids)
            return {i: [1.0, 0.0] for i in ids}

    chunks = [_Chunk(f"c{n}", f"f{n // 100}.py") for n in range(40_000)]
    index = Index()
    docs, groups, positives = adapters.read_vectors(index, chunks, [rows for _, rows in kept], budget=1_000)
    assert len(index.asked) == len(docs) == 1_000 and {f"c{n}" for n in range(500)} <= set(index.asked)
    assert positives[0].tolist() == list(range(100)) and index.asked[:100] == [f"c{n}" for n in range(100)]
    assert len(set(groups.tolist())) > 5  # other files' chunks too


@pytest.mark.slow
async def test_tuned_learns_from_the_history_and_respects_each_question_s_cut_off(history_repo, tmp_path):
    service = LocalEngine(data_dir=tmp_path / "data")
    try:
        await service.index(history_repo.folder)
        question = "the banner tint looks wrong"
        options = QueryOptions(workspace=str(history_repo.folder), strategy="tuned", top_k=3, use_cache=False)

        early_options = QueryOptions(**{**options.__dict__, "before": START + 10 * DAY})
        early = await service.query(question, early_options)  # answered at once: it learns in the background
        assert not early.reranked and "being trained on the git history" in early.fallback_reason
        assert adapters.wait_for_training(120)
        early = await service.query(question, early_options)
        assert not early.reranked and "git history with 30 commits" in early.fallback_reason  # 8 commits before

        await service.query(question, options)
        assert adapters.wait_for_training(120)
        result = await service.query(question, options)  # every commit: 34 learnt from, 8 newest held out
        if result.reranked:  # used: it beat the vector search on the held-out newer commits
            note = result.results[0].signals[0].note
            assert "learnt from the history" in note and "(8 newer commits" in note
        else:  # not used, and it says so
            assert "trained on the history, on 8 held-out newer commits" in result.fallback_reason

        files = await service.find_files(question, QueryOptions(**{**options.__dict__, "before": START + 10 * DAY}))
        assert files.before == START + 10 * DAY and files.strategy == "tuned"

        asked = [LabelledQuery("early", question, before=START + 10 * DAY), LabelledQuery("late", question)]
        report = await evaluate(service, asked, {"early": {"colors.py": 1}, "late": {"colors.py": 1}},
                                ["none", "tuned"], history_repo.folder, top_k=3)
        tuned = report.strategies["tuned"]  # eval passes each query's `before` to the strategy
        assert tuned.fallbacks == (1 if result.reranked else 2)
    finally:
        service.close()
