"""Find the text source files of a workspace, honouring .gitignore and .knowledgeignore."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from services.models import SkippedFile

MIB = 1024 * 1024
BINARY_SNIFF_BYTES = 8192
PROJECT_IGNORE_FILE = ".knowledgeignore"

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", "build", "dist", "target", "out", "bin",
    "obj", ".next", ".gradle", ".idea", ".knowledge",
})

LANGUAGE_BY_EXTENSION = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".java": "java", ".cs": "csharp", ".go": "go", ".rs": "rust", ".swift": "swift",
    ".kt": "kotlin", ".kts": "kotlin",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".rb": "ruby", ".php": "php",
    ".md": "markdown", ".markdown": "markdown",
    ".txt": "text", ".rst": "text",
    ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".json": "json",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell",
    ".ini": "text", ".cfg": "text", ".sql": "sql", ".html": "html", ".css": "css",
    ".scala": "scala", ".lua": "lua", ".m": "objc", ".mm": "objc",
}
LANGUAGE_BY_NAME = {
    "Makefile": "text", "Dockerfile": "text", "README": "text", "LICENSE": "text",
    "Gemfile": "ruby", "Rakefile": "ruby", "CMakeLists.txt": "text",
}


class SkipFileError(Exception):
    """A file that cannot be indexed; the message is the human reason."""

    @property
    def reason(self) -> str:
        return str(self)


@dataclass(frozen=True)
class SourceFile:
    path: str  # workspace-relative, POSIX separators
    abs_path: Path
    size: int
    mtime_ns: int
    language: str


@dataclass
class ScanResult:
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


def language_for(name: str) -> str | None:
    """Language of a file name, or None when it is not a known text source."""
    if name in LANGUAGE_BY_NAME:
        return LANGUAGE_BY_NAME[name]
    return LANGUAGE_BY_EXTENSION.get(os.path.splitext(name)[1].lower())


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def format_size(size: int) -> str:
    if size >= MIB:
        return f"{size / MIB:.1f} MiB"
    if size >= 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size} bytes"


def read_source(file: SourceFile) -> tuple[str, str]:
    """Return (text, sha256 of the bytes); raise SkipFileError when the file cannot be used."""
    try:
        data = file.abs_path.read_bytes()
    except OSError as exc:
        raise SkipFileError(f"unreadable: {_os_reason(exc)}") from exc
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise SkipFileError("binary file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFileError("not UTF-8 text") from exc
    return text, file_hash(data)


def scan_workspace(root: Path, max_file_bytes: int = MIB) -> ScanResult:
    """List the indexable text files under root; bad files go to `skipped` with a reason."""
    root = Path(root).resolve()
    result = ScanResult()
    specs: list[tuple[str, pathspec.PathSpec]] = []
    project_spec = _load_spec(root / PROJECT_IGNORE_FILE)
    if project_spec is not None:
        specs.append(("", project_spec))
    _walk(root, root, "", specs, max_file_bytes, result, {_dir_key(root)})
    result.files.sort(key=lambda f: f.path)
    result.skipped.sort(key=lambda s: s.path)
    return result


def _walk(root: Path, folder: Path, rel: str, specs, max_bytes: int, result: ScanResult, seen: set) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        result.skipped.append(SkippedFile(rel or ".", f"unreadable: {_os_reason(exc)}"))
        return
    names = {e.name for e in entries}
    if rel and "pyvenv.cfg" in names:
        return  # a virtual environment
    local = _load_spec(folder / ".gitignore") if ".gitignore" in names else None
    if local is not None:
        specs = [*specs, (rel, local)]
    for entry in entries:
        child_rel = f"{rel}/{entry.name}" if rel else entry.name
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir()  # follows symlinks
        except OSError as exc:
            result.skipped.append(SkippedFile(child_rel, f"unreadable: {_os_reason(exc)}"))
            continue
        if is_dir and entry.name in SKIPPED_DIRS:
            continue
        if _ignored(specs, child_rel, is_dir):
            continue
        if is_dir:
            _enter_dir(root, Path(entry.path), child_rel, is_link, specs, max_bytes, result, seen)
        elif language_for(entry.name) is not None:
            _add_file(root, entry, child_rel, is_link, max_bytes, result)


def _enter_dir(root, path: Path, rel, is_link, specs, max_bytes, result, seen) -> None:
    if is_link and not _inside(root, path):
        result.skipped.append(SkippedFile(rel, "symlink outside the workspace"))
        return
    key = _dir_key(path)
    if key in seen:
        return  # symlink loop or a folder already scanned
    _walk(root, path, rel, specs, max_bytes, result, seen | {key})


def _add_file(root: Path, entry: os.DirEntry, rel: str, is_link: bool, max_bytes: int, result: ScanResult) -> None:
    path = Path(entry.path)
    if is_link and not path.exists():
        result.skipped.append(SkippedFile(rel, "broken symlink"))
        return
    if is_link and not _inside(root, path):
        result.skipped.append(SkippedFile(rel, "symlink outside the workspace"))
        return
    try:
        info = entry.stat()
        if not stat.S_ISREG(info.st_mode):
            return
        if info.st_size > max_bytes:
            reason = f"too large ({format_size(info.st_size)} > {format_size(max_bytes)})"
            result.skipped.append(SkippedFile(rel, reason))
            return
        with open(path, "rb") as handle:
            head = handle.read(BINARY_SNIFF_BYTES)
    except OSError as exc:
        result.skipped.append(SkippedFile(rel, f"unreadable: {_os_reason(exc)}"))
        return
    if b"\0" in head:
        result.skipped.append(SkippedFile(rel, "binary file"))
        return
    language = language_for(entry.name) or "text"
    result.files.append(SourceFile(rel, path, info.st_size, info.st_mtime_ns, language))


def _load_spec(path: Path) -> pathspec.PathSpec | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(specs, rel: str, is_dir: bool) -> bool:
    for base, spec in specs:
        sub = rel[len(base) + 1:] if base else rel
        if spec.match_file(sub + "/" if is_dir else sub):
            return True
    return False


def _inside(root: Path, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except OSError:
        return False


def _dir_key(path: Path):
    try:
        info = path.stat()
        return (info.st_dev, info.st_ino)
    except OSError:
        return str(path)


def _os_reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
