"""Find the text files of a workspace, honouring .gitignore and .knowledgeignore.

Every file is accounted for: a text file is listed with its language (from the extension, the file
name or the shebang; "text" when unknown), anything else is listed under `skipped` with the reason.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from services.core import files
from services.core.models import SkippedFile
from services.core.errors import QueryError

MIB = files.MIB
BINARY_SNIFF_BYTES = 8192
PROJECT_IGNORE_FILE = ".knowledgeignore"
IGNORE_FILES = frozenset({".gitignore", PROJECT_IGNORE_FILE})
VENV_MARK = "pyvenv.cfg"  # a folder holding it is a virtual environment: never walked
RULE_FILES = IGNORE_FILES | {VENV_MARK}  # files that change what else is listed

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
    ".vue": "vue", ".svelte": "svelte", ".proto": "protobuf", ".graphql": "graphql", ".gql": "graphql",
    ".tf": "terraform", ".tfvars": "terraform", ".dart": "dart", ".ex": "elixir", ".exs": "elixir",
    ".hs": "haskell", ".xml": "xml", ".r": "r", ".pl": "perl", ".pm": "perl", ".jl": "julia",
    ".groovy": "groovy", ".gradle": "groovy", ".ps1": "powershell", ".fish": "shell",
    ".erl": "erlang", ".clj": "clojure", ".elm": "elm", ".zig": "zig", ".nim": "nim", ".v": "verilog",
    ".pyx": "cython", ".pxd": "cython", ".scss": "css", ".less": "css", ".htm": "html",
}
LANGUAGE_BY_NAME = {
    "Makefile": "text", "Dockerfile": "text", "README": "text", "LICENSE": "text",
    "Gemfile": "ruby", "Rakefile": "ruby", "Vagrantfile": "ruby", "CMakeLists.txt": "text",
    "Justfile": "text", "justfile": "text",
}
# Interpreter named by a shebang ("#!/usr/bin/env python3" -> "python") to language.
LANGUAGE_BY_INTERPRETER = {
    "python": "python", "node": "javascript", "nodejs": "javascript", "deno": "typescript",
    "bash": "shell", "sh": "shell", "zsh": "shell", "dash": "shell", "ksh": "shell", "fish": "shell",
    "ruby": "ruby", "perl": "perl", "php": "php", "lua": "lua", "swift": "swift", "kotlin": "kotlin",
}
_SHEBANG = re.compile(rb"^#!\s*(\S+)(?:\s+(?:-\S+\s+)*(\S+))?")
# Extensions that are never text: skipped as binary without opening the file (keeps the scan fast).
BINARY_EXTENSIONS = frozenset(
    ".png .jpg .jpeg .gif .bmp .ico .icns .webp .tif .tiff .psd .pdf .zip .gz .tgz .bz2 .xz .zst .7z .rar "
    ".jar .war .whl .egg .so .dylib .dll .exe .o .a .lib .obj .pyc .pyo .pyd .class .wasm .bin .dat .db "
    ".sqlite .sqlite3 .mo .ttf .otf .woff .woff2 .eot .mp3 .mp4 .wav .ogg .flac .avi .mov .mkv .webm "
    ".npy .npz .pkl .pickle .pt .pth .onnx .safetensors .parquet .feather .h5 .hdf5".split()
)

# Machine-made files: minified bundles, source maps, lock files, protobuf outputs. A file that only says it was
# generated ("do not edit") is indexed: it is readable code that other code calls, where go-to must land.
MACHINE_MADE = "minified/generated"
MACHINE_MADE_NAMES = (
    "*.min.js", "*.min.css", "*.min.mjs", "*.map", "*.lock", "package-lock.json", "npm-shrinkwrap.json",
    "pnpm-lock.yaml", "*.bundle.js", "*-bundle.js", "*.pb.go", "*_pb2.py", "*_pb2_grpc.py", "*.pb.h", "*.pb.cc",
)
MINIFIED_MIN_CHARS = 2048  # shorter texts are never judged minified by their line lengths
MINIFIED_AVG_LINE = 300  # characters per line, on average, above which a text is minified
MACHINE_LINE = 50_000  # a line this long was not written by hand
_MACHINE_MADE_NAME = re.compile("|".join(fnmatch.translate(pattern) for pattern in MACHINE_MADE_NAMES))


class UnreadableRoot(OSError):
    """The workspace folder itself cannot be listed."""


class SkipFileError(Exception):
    """A file that cannot be indexed; the message is the human reason."""

    @property
    def reason(self) -> str:
        return str(self)


@dataclass(frozen=True)
class SourceFile:
    path: str  # workspace-relative, POSIX separators
    root: Path  # the workspace folder, resolved
    size: int
    mtime_ns: int
    language: str

    @property
    def abs_path(self) -> Path:
        return self.root / self.path


@dataclass
class ScanResult:
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    symlinks: bool = False  # a symlink was met (scan_paths cannot tell when a link's target changes)


def known_languages() -> list[str]:
    return sorted({*LANGUAGE_BY_EXTENSION.values(), *LANGUAGE_BY_NAME.values(), *LANGUAGE_BY_INTERPRETER.values()})


def check_languages(languages) -> None:
    """QueryError naming the first language no file is ever read as."""
    if not languages:
        return
    known = known_languages()
    unknown = [language for language in languages if language not in known]
    if unknown:
        raise QueryError(f"Unknown language {unknown[0]!r}. Known: {', '.join(known)}.")


def language_for(name: str, head: bytes = b"") -> str:
    """Language of a file from its name, else its shebang line; "text" when neither tells."""
    if name in LANGUAGE_BY_NAME:
        return LANGUAGE_BY_NAME[name]
    by_extension = LANGUAGE_BY_EXTENSION.get(os.path.splitext(name)[1].lower())
    return by_extension or shebang_language(head) or "text"


def shebang_language(head: bytes) -> str | None:
    """"#!/usr/bin/env python3" -> "python"; None without a known interpreter."""
    match = _SHEBANG.match(head)
    if not match:
        return None
    program = match.group(1).rsplit(b"/", 1)[-1]
    if program == b"env" and match.group(2):
        program = match.group(2)
    name = re.sub(rb"[\d.]+$", b"", program).decode("ascii", "replace")
    return LANGUAGE_BY_INTERPRETER.get(name)


def machine_made(name: str, text: str) -> bool:
    """A minified bundle, source map, lock file or protobuf output (by its name, or its lines' lengths)."""
    if _MACHINE_MADE_NAME.match(name):
        return True
    lines = text.count("\n") + 1
    if len(text) >= MINIFIED_MIN_CHARS and len(text) / lines > MINIFIED_AVG_LINE:
        return True
    return len(text) > MACHINE_LINE and max(map(len, text.split("\n"))) > MACHINE_LINE


def too_large(size: int, limit: int) -> str:
    return f"too large ({files.format_size(size)} > {files.format_size(limit)})"


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_source(file: SourceFile, skip_machine_made: bool = True, max_bytes: int = MIB) -> tuple[str, str]:
    """Return (text, sha256 of the bytes); raise SkipFileError when the file cannot be used (one grown past
    `max_bytes` since the scan is "too large", and never read whole)."""
    try:
        data = files.read_bytes(file.abs_path, max_bytes)
    except files.FileTooLarge as exc:
        raise SkipFileError(too_large(exc.size, max_bytes)) from exc
    except files.NotRegularFile as exc:
        raise SkipFileError(exc.reason) from exc
    except OSError as exc:
        raise SkipFileError(f"unreadable: {_os_reason(exc)}") from exc
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise SkipFileError("binary file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFileError("not UTF-8 text") from exc
    if skip_machine_made and machine_made(file.abs_path.name, text):
        raise SkipFileError(MACHINE_MADE)
    return text, file_hash(data)


def scan_workspace(root: Path, max_file_bytes: int = MIB, skip_machine_made: bool = True,
                   known: Mapping | None = None) -> ScanResult:
    """List the indexable text files under root; every other file goes to `skipped` with a reason.
    `known`: the catalogue's records by path; a file with its record's size and mtime is listed with its
    record's language, unopened (sniffing every file is most of a big tree's scan)."""
    root = _readable_root(root)
    result = ScanResult()
    rules = _Rules(_load_spec(root / PROJECT_IGNORE_FILE), [])
    limits = _Limits(max_file_bytes, skip_machine_made, known or {})
    _walk(root, root, "", rules, limits, result, {_dir_key(root)})
    result.files.sort(key=lambda f: f.path)
    result.skipped.sort(key=lambda s: s.path)
    return result


def scan_paths(root: Path, paths: Iterable[str], max_file_bytes: int = MIB,
               skip_machine_made: bool = True) -> ScanResult | None:
    """What scan_workspace says about these workspace-relative paths (the files a watcher saw change),
    without walking the tree: the same ignore rules, skipped folders and sniffing. A path that is not
    there is in neither list. None when only a whole scan can tell: a path is a folder (created or moved
    in), a symlink, an ignore file or a virtual environment's mark (they change what else is listed), it
    sits under a symlink, or it cannot be looked at."""
    root = _readable_root(root)
    result = ScanResult()
    limits = _Limits(max_file_bytes, skip_machine_made, {})
    project = _Rules(_load_spec(root / PROJECT_IGNORE_FILE), [])
    rules_by_folder: dict[str, _Rules | None] = {}
    for rel in sorted(set(paths)):
        path = root / rel
        try:
            if path.name in SKIPPED_DIRS and path.is_dir():
                continue  # a skipped folder made or moved in: never walked
            if (path.name in RULE_FILES or path.is_symlink() or path.is_dir()
                    or os.path.realpath(path.parent) != str(path.parent)
                    or not os.access(path.parent, os.R_OK | os.X_OK)):  # the whole scan lists it unreadable
                return None
        except OSError:  # e.g. a folder on the way without search permission: the whole scan reports it
            return None
        rules = _folder_rules(root, rel.rpartition("/")[0], project, rules_by_folder)
        if rules is not None and not rules.ignored(rel, False) and os.path.lexists(path):
            _add_file(root, str(path), path.name, rel, False, limits, result)
    return result


def _folder_rules(root: Path, folder: str, project: "_Rules", known: dict) -> "_Rules | None":
    """The rules in force inside a folder ("" the root), as _walk gathers them on its way down from the
    project's; None when _walk would not enter it (a skipped, ignored or virtual-environment folder on
    the way). `known` caches them by folder."""
    if folder not in known:
        rules: _Rules | None = project
        if folder:
            parent, _, name = folder.rpartition("/")
            rules = _folder_rules(root, parent, project, known)
            if rules is not None and (name in SKIPPED_DIRS or not rules.enter(folder)
                                      or os.path.lexists(root / folder / VENV_MARK)):
                rules = None
        if rules is not None:
            local = _load_spec(root / folder / ".gitignore")
            rules = rules if local is None else rules.with_gitignore(folder, local)
        known[folder] = rules
    return known[folder]


def _readable_root(root: Path) -> Path:
    root = Path(root).resolve()
    try:
        with os.scandir(root):
            pass
    except OSError as exc:  # no evidence about any file: callers must not take the files for deleted
        raise UnreadableRoot(f"the workspace folder {root} cannot be read ({_os_reason(exc)})") from exc
    return root


@dataclass(frozen=True)
class _Limits:
    max_bytes: int
    skip_machine_made: bool
    known: Mapping  # path -> the catalogue's record (size, mtime_ns, language)


@dataclass(frozen=True)
class _Rules:
    """Ignore rules: .gitignore files (root first, deeper ones override) and the project's
    .knowledgeignore, whose verdict wins over them, so `!pattern` there re-includes what git ignores."""

    project: pathspec.PathSpec | None
    git: list[tuple[str, pathspec.PathSpec]]  # (folder, spec)

    def with_gitignore(self, folder: str, spec: pathspec.PathSpec) -> "_Rules":
        return _Rules(self.project, [*self.git, (folder, spec)])

    def ignored(self, rel: str, is_dir: bool) -> bool:
        verdict = _verdict(self.project, rel, is_dir)
        if verdict is not None:
            return verdict
        for base, spec in reversed(self.git):
            verdict = _verdict(spec, rel[len(base) + 1:] if base else rel, is_dir)
            if verdict is not None:
                return verdict
        return False

    def enter(self, rel: str) -> bool:
        """Whether to walk into a folder: not ignored, or ignored by git only while the project file
        re-includes something (its `!patterns` may name files inside)."""
        if not self.ignored(rel, True):
            return True
        if _verdict(self.project, rel, True):
            return False
        return self.project is not None and any(p.include is False for p in self.project.patterns)


def _verdict(spec: pathspec.PathSpec | None, rel: str, is_dir: bool) -> bool | None:
    """True: ignored, False: re-included by a `!pattern`, None: no rule matches."""
    if spec is None:
        return None
    return spec.check_file(rel + "/" if is_dir else rel).include


def _walk(root: Path, folder: Path, rel: str, rules: _Rules, limits: _Limits, result: ScanResult,
          seen: set) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        result.skipped.append(SkippedFile(rel or ".", f"unreadable: {_os_reason(exc)}"))
        return
    names = {e.name for e in entries}
    if rel and VENV_MARK in names:
        return  # a virtual environment
    local = _load_spec(folder / ".gitignore") if ".gitignore" in names else None
    if local is not None:
        rules = rules.with_gitignore(rel, local)
    for entry in entries:
        child_rel = f"{rel}/{entry.name}" if rel else entry.name
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir()  # follows symlinks
        except OSError as exc:
            result.skipped.append(SkippedFile(child_rel, f"unreadable: {_os_reason(exc)}"))
            continue
        if is_dir:
            if entry.name not in SKIPPED_DIRS and rules.enter(child_rel):
                _enter_dir(root, Path(entry.path), child_rel, is_link, rules, limits, result, seen)
        elif not rules.ignored(child_rel, False):
            _add_file(root, entry.path, entry.name, child_rel, is_link, limits, result)


def _enter_dir(root, path: Path, rel, is_link, rules, limits, result, seen) -> None:
    result.symlinks = result.symlinks or is_link
    if is_link and not _inside(root, path):
        result.skipped.append(SkippedFile(rel, "symlink outside the workspace"))
        return
    key = _dir_key(path)
    if key in seen:
        return  # symlink loop or a folder already scanned
    _walk(root, path, rel, rules, limits, result, seen | {key})


def _add_file(root: Path, path: str, name: str, rel: str, is_link: bool, limits: _Limits,
              result: ScanResult) -> None:
    result.symlinks = result.symlinks or is_link
    if is_link and not os.path.exists(path):
        result.skipped.append(SkippedFile(rel, "broken symlink"))
        return
    if is_link and not _inside(root, Path(path)):
        result.skipped.append(SkippedFile(rel, "symlink outside the workspace"))
        return
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            result.skipped.append(SkippedFile(rel, files.NOT_REGULAR))  # a FIFO, socket or device: never opened
            return
        if os.path.splitext(name)[1].lower() in BINARY_EXTENSIONS:
            result.skipped.append(SkippedFile(rel, "binary file"))
            return
        if info.st_size > limits.max_bytes:
            result.skipped.append(SkippedFile(rel, too_large(info.st_size, limits.max_bytes)))
            return
        record = limits.known.get(rel)
        if record is not None and (record.size, record.mtime_ns) == (info.st_size, info.st_mtime_ns):
            result.files.append(SourceFile(rel, root, info.st_size, info.st_mtime_ns, record.language))
            return  # indexed as it is: sniffed when it was
        head = files.read_head(path, BINARY_SNIFF_BYTES)
    except files.NotRegularFile as exc:  # swapped since the stat
        result.skipped.append(SkippedFile(rel, exc.reason))
        return
    except OSError as exc:
        result.skipped.append(SkippedFile(rel, f"unreadable: {_os_reason(exc)}"))
        return
    if b"\0" in head:
        result.skipped.append(SkippedFile(rel, "binary file"))
    elif limits.skip_machine_made and machine_made(name, head.decode("utf-8", "ignore")):
        result.skipped.append(SkippedFile(rel, MACHINE_MADE))
    else:
        result.files.append(SourceFile(rel, root, info.st_size, info.st_mtime_ns, language_for(name, head)))


def _load_spec(path: Path) -> pathspec.PathSpec | None:
    try:
        lines = files.read_text(path, errors="replace").splitlines()
    except OSError:  # none, unreadable or not a regular file
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


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
