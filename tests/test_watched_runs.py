"""A watcher's run looks at the paths the watcher reported, not the whole tree: scan_paths agrees with
the whole scan path by path, and the run it plans leaves the index as a whole run would."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from services.indexing.indexer import Indexer
from services.indexing.scanning import RULE_FILES, scan_paths, scan_workspace
from tests.conftest import copy_sample
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.stand_in_encoder  # watching and indexing are tested, not the model


def tricky_tree(root: Path) -> Path:
    """The sample workspace (root, nested and project ignore files) plus every kind of file a scan sorts."""
    copy_sample(root)
    files = {
        "node_modules/pkg/index.js": "module.exports = 1\n",
        "env/lib/site.py": "x = 1\n", "env/pyvenv.cfg": "home = /usr\n",
        "build/out.py": "x = 2\n", "scratch/keep.py": "x = 3\n", "server.log": "started\n",
        "tools/run": "#!/usr/bin/env python3\nprint('run')\n",
        "web/dist.min.js": "var a=1;" * 400, "web/app.js": "export const a = 1\n",
        "docs/drafts/deep/idea.md": "# idea\n", "big.txt": "word " * 400,
        "gen/api_pb2.py": "# proto\n", "gen/made.py": "# @generated\nx = 1\n",
        "lib/.gitignore": "*.tmp\n!keep.tmp\n", "lib/a.tmp": "a\n", "lib/keep.tmp": "k\n", "lib/code.py": "y = 1\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "lib/blob.py").write_bytes(b"abc\x00def")
    (root / "lib/image.png").write_bytes(b"\x89PNG")
    (root / "lib/alias.py").symlink_to(root / "lib/code.py")
    (root / "lib/dangling.py").symlink_to(root / "lib/nowhere.py")
    (root / "venv2").mkdir()
    (root / "venv2/site.py").write_text("x = 4\n")
    (root / "venv2/pyvenv.cfg").symlink_to(root / "venv2/nowhere.cfg")  # dangling, still a venv's mark
    return root


def every_file(root: Path) -> list[str]:
    found = []
    for folder, _dirs, names in os.walk(root):
        found += [(Path(folder) / name).relative_to(root).as_posix() for name in names]
    return sorted(found)


def verdicts(result) -> dict[str, tuple[str, str]]:
    """{path: ("file", language) or ("skipped", reason)}."""
    listed = {f.path: ("file", f.language) for f in result.files}
    return listed | {s.path: ("skipped", s.reason) for s in result.skipped}


def test_scan_paths_gives_each_file_the_whole_scans_verdict(tmp_path):
    root = tricky_tree(tmp_path / "tree")
    whole = verdicts(scan_workspace(root, max_file_bytes=1024))
    paths = [p for p in every_file(root) if Path(p).name not in RULE_FILES and not (root / p).is_symlink()]
    for path in paths:  # ignored, in skipped folders or a venv, binary, machine-made, too large: one by one
        assert verdicts(scan_paths(root, [path], max_file_bytes=1024)) == {k: v for k, v in whole.items() if k == path}
    assert verdicts(scan_paths(root, paths, max_file_bytes=1024)) == {k: v for k, v in whole.items() if k in paths}
    assert "scratch/keep.py" not in whole and "lib/keep.tmp" in whole and "lib/a.tmp" not in whole
    assert "venv2/site.py" not in whole and "env/lib/site.py" not in whole
    assert whole["lib/blob.py"] == ("skipped", "binary file") and whole["tools/run"] == ("file", "python")


def test_scan_paths_asks_for_a_whole_scan_for_folders_rule_files_and_symlinks(tmp_path):
    root = tricky_tree(tmp_path / "tree")
    assert scan_paths(root, ["notes"]) is None  # a folder created or moved in
    assert scan_paths(root, ["lib/.gitignore"]) is None and scan_paths(root, [".knowledgeignore"]) is None
    assert scan_paths(root, ["env/pyvenv.cfg"]) is None  # made or deleted: a folder becomes a venv or stops being one
    assert scan_paths(root, ["lib/alias.py"]) is None  # a link made or retargeted
    (root / "linked").symlink_to(root / "lib")
    assert scan_paths(root, ["linked/code.py"]) is None
    assert scan_workspace(root).symlinks and not scan_workspace(root / "notes").symlinks
    (root / "notes/link.py").symlink_to(root / "notes/models.py")
    assert scan_workspace(root / "notes").symlinks  # a linked file alone is enough
    assert verdicts(scan_paths(root, ["notes/gone.py"])) == {}  # not there: in neither list
    assert verdicts(scan_paths(root, ["node_modules", "build"])) == {}  # skipped folders, made or moved in


def test_a_file_named_like_a_skipped_folder_is_reported_and_listed(tmp_path):
    from services.indexing.watcher import WorkspaceWatcher

    root = tricky_tree(tmp_path / "tree")
    shutil.rmtree(root / "build")
    (root / "build").write_text("#!/bin/sh\necho build\n")
    watcher = WorkspaceWatcher(root, lambda paths: None)
    assert watcher.relative(str(root / "build")) == "build"
    assert watcher.relative(str(root / "node_modules/pkg/index.js")) == ""
    assert verdicts(scan_paths(root, ["build"])) == {"build": ("file", "shell")} == {
        k: v for k, v in verdicts(scan_workspace(root)).items() if k == "build"}


def test_scan_paths_reads_each_folders_ignore_file_once(tmp_path, monkeypatch):
    from services.indexing import scanning

    root = tricky_tree(tmp_path / "tree")
    paths = [f"lib/new{i}.py" for i in range(300)] + [f"docs/new{i}.md" for i in range(300)]
    loaded = []
    real = scanning._load_spec
    monkeypatch.setattr(scanning, "_load_spec", lambda path: loaded.append(path) or real(path))
    result = scan_paths(root, paths)
    assert result is not None and len(loaded) == len(set(loaded)) <= 4  # project, root, lib, docs


def test_a_whole_scan_lists_unchanged_files_from_the_catalogue_as_a_fresh_scan_does(tmp_path):
    root = tricky_tree(tmp_path / "tree")
    fresh = scan_workspace(root)
    known = {f.path: f for f in fresh.files}
    again = scan_workspace(root, known=known)
    assert verdicts(again) == verdicts(fresh) and again.files == fresh.files
    told = {"lib/code.py": replace(known["lib/code.py"], language="klingon")}  # unchanged: not sniffed again
    assert verdicts(scan_workspace(root, known=told))["lib/code.py"] == ("file", "klingon")
    os.utime(root / "lib/code.py", ns=(1, 1))  # changed: looked at afresh
    assert verdicts(scan_workspace(root, known=told))["lib/code.py"] == ("file", "python")


def watcher_run(service, workspace, *paths: str):
    index = service.workspace_index(workspace)
    return Indexer(index, service.index_embedder, service.settings).run(quick=True, paths=set(paths))


def indexed_paths(service, workspace) -> set[str]:
    return set(service.workspace_index(workspace).catalog().files())


def skipped(service, workspace) -> dict[str, str]:
    return {s.path: s.reason for s in service.workspace_index(workspace).catalog().skipped()}


@pytest.fixture
async def indexed(service, tmp_path):
    workspace = copy_sample(tmp_path / "workspace")
    (workspace / "notes/blob.py").write_bytes(b"abc\x00def")
    await service.index(workspace)
    return workspace


async def test_a_watchers_run_indexes_the_paths_it_was_given_and_only_those(service, indexed):
    workspace = indexed
    (workspace / "notes/store.py").write_text("def quantum_flux_ledger():\n    return 1\n")
    (workspace / "README.md").write_text("# changed too, but not reported yet\n")
    report = watcher_run(service, workspace, "notes/store.py")
    assert report.files_indexed == 1 and report.files_unchanged == 0
    catalog = service.workspace_index(workspace).catalog()
    assert "quantum_flux_ledger" in catalog.chunks(path="notes/store.py")[0].content
    assert "changed too" not in " ".join(c.content for c in catalog.chunks(path="README.md"))
    assert skipped(service, workspace)["notes/blob.py"] == "binary file"  # the rest of the list is kept
    assert report.skipped == ()  # what the run looked at: the rest of the list is kept, not re-read
    assert watcher_run(service, workspace, "README.md").files_indexed == 1


async def test_a_watchers_run_removes_the_files_of_a_folder_deleted_or_replaced_and_lists_new_skipped_ones(service, indexed):
    workspace = indexed
    assert any(p.startswith("go/") for p in indexed_paths(service, workspace))
    shutil.rmtree(workspace / "go")
    shutil.rmtree(workspace / "java")
    (workspace / "java").write_text("a file where the folder was\n")
    (workspace / "notes/photo.py").write_bytes(b"\x00\x01")
    report = watcher_run(service, workspace, "go", "java", "notes/photo.py", "vim.swp~")
    assert not any(p.startswith(("go/", "java/")) for p in indexed_paths(service, workspace))
    assert "java" in indexed_paths(service, workspace) and report.files_removed == 5  # 1 Go file, 4 Java files
    assert {"notes/blob.py", "notes/photo.py"} <= set(skipped(service, workspace))


async def test_a_watchers_run_drops_the_skipped_files_of_a_folder_moved_away(service, indexed):
    workspace = indexed
    (workspace / "assets").mkdir()
    (workspace / "assets/logo.py").write_bytes(b"\x89PNG\x00")
    await service.index(workspace)
    assert skipped(service, workspace)["assets/logo.py"] == "binary file"
    (workspace / "assets").rename(workspace.parent / "elsewhere")
    (workspace / "notes/unreported.py").write_text("x = 5\n")
    watcher_run(service, workspace, "assets")
    assert "assets/logo.py" not in skipped(service, workspace) and "notes/blob.py" in skipped(service, workspace)
    assert "notes/unreported.py" not in indexed_paths(service, workspace)  # the run looked at its paths alone


@pytest.mark.parametrize("targeted", [False, True], ids=["whole scan", "watcher's run"])
async def test_a_file_that_is_still_there_but_no_longer_indexable_leaves_the_index(service, indexed, targeted):
    workspace = indexed
    (workspace / "README.md").write_text("word " * 300_000)  # too large
    (workspace / "notes/models.py").write_bytes(b"\x00\x01binary now")
    if targeted:
        report = watcher_run(service, workspace, "README.md", "notes/models.py")
    else:  # and what only a whole scan sees: a new ignore rule, a file replaced by a folder
        (workspace / ".gitignore").write_text("scratch/\n*.log\ngo/\n")
        (workspace / "notes/search.py").unlink()
        (workspace / "notes/search.py").mkdir()
        (workspace / "notes/search.py/inner.py").write_text("def inner():\n    return 6\n")
        report = await service.index(workspace)
        assert "notes/search.py/inner.py" in indexed_paths(service, workspace)
    gone = {"README.md", "notes/models.py"} | (set() if targeted else {"go/index/index.go", "notes/search.py"})
    assert not gone & indexed_paths(service, workspace) and report.files_removed == len(gone)
    assert skipped(service, workspace)["README.md"].startswith("too large")
    assert skipped(service, workspace)["notes/models.py"] == "binary file"


async def test_a_watchers_run_follows_an_edit_to_a_linked_files_target(service, tmp_path):
    workspace = copy_sample(tmp_path / "workspace")
    (workspace / "notes/alias.py").symlink_to(workspace / "notes/models.py")
    (workspace / "notes/later.py").symlink_to(workspace / "notes/not_yet.py")
    await service.index(workspace)
    assert skipped(service, workspace)["notes/later.py"] == "broken symlink"
    (workspace / "notes/models.py").write_text("def zephyr_quokka():\n    return 3\n")
    (workspace / "notes/not_yet.py").write_text("def nimbus_marmot():\n    return 4\n")
    watcher_run(service, workspace, "notes/models.py", "notes/not_yet.py")  # the watcher reports targets only
    catalog = service.workspace_index(workspace).catalog()
    assert "zephyr_quokka" in catalog.chunks(path="notes/alias.py")[0].content
    assert "nimbus_marmot" in catalog.chunks(path="notes/later.py")[0].content
    assert "notes/later.py" not in skipped(service, workspace)


async def watched(service, workspace) -> Path:
    """The workspace watched, without a watchdog observer (the test makes the reports), once its catch-up
    run has run; its root."""
    index = service.workspace_index(workspace)
    service.watches.add(index, auto_reindex=True, emit=lambda event: None, observe=False)
    await asyncio.to_thread(service.watches.drain)
    return index.root


async def test_a_watchers_run_after_an_ignore_file_changed_looks_at_everything(service, indexed):
    workspace = indexed
    (workspace / "scratch/plan.py").write_text("def orbital_plan():\n    return 2\n")
    watcher_run(service, workspace, "scratch/plan.py")
    assert "scratch/plan.py" not in indexed_paths(service, workspace)  # scratch/ is ignored
    (workspace / ".gitignore").write_text("*.log\n")
    watcher_run(service, workspace, ".gitignore")
    assert {"scratch/plan.py", "scratch/todo.txt"} <= indexed_paths(service, workspace)


async def test_changes_an_automatic_run_left_to_a_users_run_are_indexed_after_it(service, indexed, monkeypatch):
    from services.indexing import indexer as indexer_module

    workspace = indexed
    index = service.workspace_index(workspace)
    root = await watched(service, workspace)
    real = indexer_module.Indexer._update_history
    edited = []

    def edit_after_the_scan(self):  # the user's run has scanned: a save now, reported at once
        real(self)
        if not edited:
            edited.append(True)
            (workspace / "notes/store.py").write_text("def lunar_abacus():\n    return 7\n")
            service.watches.changed(root, {"notes/store.py"})  # queued behind the user's run, which still holds it

    monkeypatch.setattr(indexer_module.Indexer, "_update_history", edit_after_the_scan)
    await service.index(workspace)
    await wait_for(lambda: "lunar_abacus" in " ".join(c.content for c in index.catalog().chunks(path="notes/store.py")),
                   60, "the edit made during the user's run to be indexed")


async def test_a_file_that_failed_is_tried_again_by_the_next_watchers_run(service, indexed, monkeypatch):
    from services.encoders.embedder import Embedder

    workspace = indexed
    index = service.workspace_index(workspace)
    real = Embedder.encode_chunks
    failing = {"notes/store.py"}

    def encode(self, chunks):
        if failing & {c.path for c in chunks}:
            raise RuntimeError("injected: no real encoder failure can be made on demand here")
        return real(self, chunks)

    monkeypatch.setattr(Embedder, "encode_chunks", encode)
    await watched(service, workspace)
    (workspace / "notes/store.py").write_text("def comet_ledger():\n    return 8\n")
    service.scheduler.changed(index.root, {"notes/store.py"})
    service.watches.auto_index(index.root)
    assert skipped(service, workspace)["notes/store.py"].startswith("could not be embedded")
    assert service.scheduler.pending(index.root) == {"notes/store.py"}  # kept for the next run, as F5 would
    failing.clear()
    service.scheduler.changed(index.root, {"README.md"})  # the next save elsewhere
    service.watches.auto_index(index.root)
    assert "comet_ledger" in index.catalog().chunks(path="notes/store.py")[0].content


async def test_a_cancelled_users_run_leaves_the_changes_it_was_left_for_the_next_change(service, indexed):
    import threading

    workspace = indexed
    index = service.workspace_index(workspace)
    await watched(service, workspace)
    (workspace / "notes/store.py").write_text("def tidal_gauge():\n    return 9\n")
    service.scheduler.begin_user(index.root)  # an automatic run stands back for a user's run (the one below)...
    service.scheduler.changed(index.root, {"notes/store.py"})
    service.watches.auto_index(index.root)
    cancel = threading.Event()
    cancel.set()  # ...which the user cancels: no automatic run takes over the work they stopped
    assert (await service.index(workspace, cancel=cancel)).cancelled
    await asyncio.to_thread(service.watches.drain)  # what was queued has run
    assert service.scheduler.pending(index.root) == {"notes/store.py"}
    service.scheduler.end_user(index.root, complete=False)
