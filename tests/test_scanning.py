"""Workspace scanning: ignore rules, skipped folders, bad files with reasons, symlinks."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from services.indexing.scanning import SkipFileError, file_hash, read_source, scan_workspace

SAMPLE = Path(__file__).parent / "sample_workspace"


def paths(result):
    return {f.path for f in result.files}


def reasons(result):
    return {s.path: s.reason for s in result.skipped}


def test_sample_workspace_lists_sources_with_languages():
    result = scan_workspace(SAMPLE)
    languages = {f.path: f.language for f in result.files}
    assert languages["notes/store.py"] == "python"
    assert languages["web/src/search.ts"] == "typescript"
    assert languages["web/src/NoteList.tsx"] == "tsx"
    assert languages["swift/Sources/Notes/ChunkStore.swift"] == "swift"
    assert languages["README.md"] == "markdown"
    assert not any("\\" in f.path for f in result.files)  # POSIX separators on every system


def test_sample_workspace_honours_root_nested_and_project_ignores():
    found = paths(scan_workspace(SAMPLE))
    assert (SAMPLE / "scratch/todo.txt").exists() and "scratch/todo.txt" not in found
    assert (SAMPLE / "web/src/generated/api.ts").exists() and "web/src/generated/api.ts" not in found
    assert (SAMPLE / "docs/drafts/wip.md").exists() and "docs/drafts/wip.md" not in found
    assert "docs/architecture.md" in found


def test_nested_gitignore_applies_only_to_its_subtree(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a/.gitignore").write_text("secret.py\n")
    (tmp_path / "a/secret.py").write_text("x = 1\n")
    (tmp_path / "b/secret.py").write_text("x = 2\n")
    (tmp_path / ".gitignore").write_text("*.md\n!keep.md\n")
    (tmp_path / "drop.md").write_text("# x\n")
    (tmp_path / "keep.md").write_text("# y\n")
    found = paths(scan_workspace(tmp_path))
    assert found == {"b/secret.py", "keep.md", ".gitignore", "a/.gitignore"}  # ignore files are text too


def test_always_skipped_folders_and_virtualenvs(tmp_path):
    for folder in ("node_modules/pkg", ".git", "__pycache__", "build", "target", "myenv", "src"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "code.py").write_text("print('hi')\n")
    (tmp_path / "myenv/pyvenv.cfg").write_text("home = /usr\n")
    result = scan_workspace(tmp_path)
    assert paths(result) == {"src/code.py"}
    assert result.skipped == []


def test_bad_files_are_skipped_with_reasons_while_good_files_are_listed(tmp_path):
    (tmp_path / "good.py").write_text("def ok():\n    return 1\n")
    (tmp_path / "blob.py").write_bytes(b"abc\x00def")
    (tmp_path / "huge.txt").write_text("x" * 3000)
    result = scan_workspace(tmp_path, max_file_bytes=1024)
    assert paths(result) == {"good.py"}
    assert reasons(result)["blob.py"] == "binary file"
    assert reasons(result)["huge.txt"].startswith("too large (2.9 KiB > 1.0 KiB)")


# Scans a folder with root's rights dropped (uid/gid 65534, "nobody") after the imports, and prints
# {path: reason} of the skipped files as JSON: root reads every file, so the check needs a plain user.
UNPRIVILEGED_SCAN = """
import json, os, sys
from pathlib import Path
from services.indexing.scanning import scan_workspace
os.setgroups([]); os.setgid(65534); os.setuid(65534)
result = scan_workspace(Path(sys.argv[1]))
print(json.dumps({"listed": [f.path for f in result.files],
                  "skipped": {s.path: s.reason for s in result.skipped}}))
"""


def scan_as_a_plain_user(root: Path) -> dict:
    """scan_workspace(root) as this user, or, when the tests run as root (as in CI), as "nobody"."""
    if os.geteuid() != 0:
        result = scan_workspace(root)
        return {"listed": [f.path for f in result.files], "skipped": reasons(result)}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", UNPRIVILEGED_SCAN, str(root)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_unreadable_file_is_skipped_and_the_readable_one_listed():
    # A folder "nobody" can enter (pytest's tmp_path is private to the user running the tests).
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        root.chmod(0o755)
        (root / "open.py").write_text("x = 1\n")
        (root / "open.py").chmod(0o644)
        (root / "secret.py").write_text("x = 2\n")
        (root / "secret.py").chmod(0)
        seen = scan_as_a_plain_user(root)
    assert seen["listed"] == ["open.py"]
    assert seen["skipped"] == {"secret.py": "unreadable: permission denied"}


def test_read_source_rejects_non_utf8_and_accepts_bom(tmp_path):
    (tmp_path / "latin.py").write_bytes("name = 'café'\n".encode("latin-1"))
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfx = 1\n")
    files = {f.path: f for f in scan_workspace(tmp_path).files}
    with pytest.raises(SkipFileError) as error:
        read_source(files["latin.py"])
    assert error.value.reason == "not UTF-8 text"
    text, digest = read_source(files["bom.py"])
    assert text == "x = 1\n"
    assert digest == file_hash(b"\xef\xbb\xbfx = 1\n")


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlinks_followed_only_inside_workspace(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("SECRET = 1\n")
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src/real.py").write_text("x = 1\n")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "leak.py").symlink_to(outside / "leak.py")
    (root / "alias").symlink_to(root / "src", target_is_directory=True)
    (root / "src/loop").symlink_to(root, target_is_directory=True)
    (root / "gone.py").symlink_to(root / "deleted.py")
    result = scan_workspace(root)
    assert paths(result) == {"src/real.py", "alias/real.py"}
    assert reasons(result) == {"escape": "symlink outside the workspace",
                               "leak.py": "symlink outside the workspace", "gone.py": "broken symlink"}


def test_scanning_thousands_of_files_lists_each_once(tmp_path):
    """Its speed is measured by `benchmarks/latency.py paths`."""
    for d in range(50):
        folder = tmp_path / f"pkg{d}"
        folder.mkdir()
        for i in range(100):
            (folder / f"m{i}.py").write_text("x = 1\n")
    result = scan_workspace(tmp_path)
    assert sorted(f.path for f in result.files) == sorted(f"pkg{d}/m{i}.py" for d in range(50) for i in range(100))


def test_every_text_file_is_listed_with_a_language_and_binaries_are_skipped(tmp_path):
    """Issue #9: files with extensions the scanner did not know were neither indexed nor listed."""
    texts = {"App.vue": "vue", "Card.svelte": "svelte", "api.proto": "protobuf", "schema.graphql": "graphql",
             "main.tf": "terraform", "main.dart": "dart", "lib.ex": "elixir", "Main.hs": "haskell",
             "pom.xml": "xml", "Justfile": "text", "notes.xyz": "text", "NOTICE": "text"}
    for name in texts:
        (tmp_path / name).write_text(f"content of {name}\n")
    (tmp_path / "tool").write_text("#!/usr/bin/env python3\nprint('hi')\n")
    (tmp_path / "deploy").write_text("#!/bin/bash -e\necho hi\n")
    (tmp_path / "serve").write_text("#!/usr/bin/env -S node --no-warnings\nconsole.log(1)\n")
    (tmp_path / "blob.dat2").write_bytes(b"\x00\x01\x02 unknown binary")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    result = scan_workspace(tmp_path)
    languages = {f.path: f.language for f in result.files}
    assert languages == {**texts, "tool": "python", "deploy": "shell", "serve": "javascript"}
    assert reasons(result) == {"blob.dat2": "binary file", "logo.png": "binary file"}


def test_minified_files_are_skipped_as_machine_made_and_readable_generated_code_is_indexed(tmp_path):
    machine = {
        "app.min.js": "var a=1;\n", "app.js.map": '{"version":3}\n', "package-lock.json": "{}\n",
        "Cargo.lock": "[[package]]\n", "vendor.js": "var a=function(){return 1};" * 200, "api_pb2.py": "# proto\n",
    }
    generated = {  # readable code that says it was generated: other code calls it, go-to must land there
        "_typed_ops.py": "# This file was generated using xarray.util.generate_ops. Do not edit manually.\n"
                         "class DatasetOpsMixin:\n    def __add__(self, other):\n        return self\n",
        "api.go": "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n",
    }
    for name, text in generated.items():
        (tmp_path / name).write_text(text)
    for name, text in machine.items():
        (tmp_path / name).write_text(text)
    long_line = "TABLE = [" + "1, " * 3000 + "]\n"
    (tmp_path / "table.py").write_text("def f():\n    return 1\n" * 200 + long_line)  # one long line: still code
    result = scan_workspace(tmp_path)
    assert reasons(result) == {name: "minified/generated" for name in machine}
    assert paths(result) == {"table.py"} | set(generated)
    assert paths(scan_workspace(tmp_path, skip_machine_made=False)) == set(machine) | {"table.py"} | set(generated)


def test_read_source_catches_a_file_minified_after_its_first_kilobytes(tmp_path):
    (tmp_path / "late.js").write_text("// header\n" * 1000 + "var x=1;" * 20_000)
    source = next(f for f in scan_workspace(tmp_path).files if f.path == "late.js")
    with pytest.raises(SkipFileError, match="minified/generated"):
        read_source(source)
    assert read_source(source, skip_machine_made=False)[0].startswith("// header")


def test_knowledgeignore_negations_win_over_gitignore(tmp_path):
    (tmp_path / ".gitignore").write_text("generated/\nvendor/\n*.log\n")
    (tmp_path / ".knowledgeignore").write_text("!generated/\n!vendor/lib.py\n!keep.log\nsecret.md\n")
    for name in ("generated/api.ts", "vendor/lib.py", "vendor/other.py", "keep.log", "drop.log",
                 "secret.md", "src/main.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    found = paths(scan_workspace(tmp_path)) - {".gitignore", ".knowledgeignore"}
    assert found == {"generated/api.ts", "vendor/lib.py", "keep.log", "src/main.py"}


def test_deeper_gitignore_negation_overrides_the_root_one(tmp_path):
    (tmp_path / ".gitignore").write_text("*.txt\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/.gitignore").write_text("!guide.txt\n")
    (tmp_path / "docs/guide.txt").write_text("a guide\n")
    (tmp_path / "docs/scratch.txt").write_text("scratch\n")
    found = paths(scan_workspace(tmp_path))
    assert "docs/guide.txt" in found and "docs/scratch.txt" not in found
