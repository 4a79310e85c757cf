"""What the window remembers between runs: recent workspaces, each workspace's filters and question
history, auto-reindex, strategy and result count.

`store` is anything with QSettings' `value(key, default)` and `setValue(key, value)`: the window passes
its QSettings, tests a dict-backed store. Settings files hold strings, so values are read leniently.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

from services.core.settings import DEFAULT_STRATEGY

MAX_RECENT = 10


class Store(Protocol):
    def value(self, key: str, default: Any = None) -> Any: ...

    def setValue(self, key: str, value: Any) -> None: ...  # noqa: N802  (QSettings' name)


def settings_list(store: Store, key: str) -> list[str]:
    value = store.value(key, [])
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in (value or []) if v]


def recent_workspaces(store: Store) -> list[str]:
    return settings_list(store, "recentWorkspaces")


def remember_workspace(store: Store, path: str) -> list[str]:
    recent = [path] + [p for p in recent_workspaces(store) if p != path]
    recent = recent[:MAX_RECENT]
    store.setValue("recentWorkspaces", recent)
    store.setValue("lastWorkspace", path)
    return recent


def workspace_key(path: str) -> str:
    """A settings group name for a workspace (paths contain separators QSettings would split on)."""
    return hashlib.sha1(path.encode("utf-8")).hexdigest()[:16]


def flag(store: Store, key: str, default: bool) -> bool:
    return store.value(key, "true" if default else "false") in (True, "true")


class Preferences:
    """The window's remembered choices, global and per workspace."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @staticmethod
    def _group(workspace: str) -> str:
        return f"workspaces/{workspace_key(workspace)}"

    def filters(self, workspace: str) -> tuple[list[str], str]:
        """(languages, path glob) last used in `workspace`."""
        group = self._group(workspace)
        return settings_list(self.store, f"{group}/languages"), str(self.store.value(f"{group}/pathGlob", "") or "")

    def save_filters(self, workspace: str, languages: list[str], path_glob: str) -> None:
        group = self._group(workspace)
        self.store.setValue(f"{group}/languages", list(languages))
        self.store.setValue(f"{group}/pathGlob", path_glob.strip())

    def history(self, workspace: str) -> tuple[list[str], list[str]]:
        """(recent, pinned) questions of `workspace`."""
        group = self._group(workspace)
        return settings_list(self.store, f"{group}/recent"), settings_list(self.store, f"{group}/pinned")

    def save_history(self, workspace: str, recent: list[str], pinned: list[str]) -> None:
        group = self._group(workspace)
        self.store.setValue(f"{group}/recent", list(recent))
        self.store.setValue(f"{group}/pinned", list(pinned))

    @property
    def auto_reindex(self) -> bool:
        """Index changed files as they change (on), or only report them stale (off)."""
        return flag(self.store, "autoReindex", True)

    @auto_reindex.setter
    def auto_reindex(self, on: bool) -> None:
        self.store.setValue("autoReindex", on)

    def strategy(self, workspace: str = "") -> str:
        """The strategy chosen last time in `workspace`, else the last one chosen anywhere, else the
        default every face uses."""
        return self.own_strategy(workspace) or str(self.store.value("strategy", "") or DEFAULT_STRATEGY)

    def own_strategy(self, workspace: str) -> str:
        """The strategy last chosen in `workspace`; "" when none was."""
        return str(self.store.value(f"{self._group(workspace)}/strategy", "") or "") if workspace else ""

    def save_strategy(self, workspace: str, name: str) -> None:
        if workspace:
            self.store.setValue(f"{self._group(workspace)}/strategy", name)
        self.store.setValue("strategy", name)

    def question(self, workspace: str) -> str:
        """The question that was in the box when `workspace` was left (or the window closed)."""
        return str(self.store.value(f"{self._group(workspace)}/question", "") or "")

    def save_question(self, workspace: str, text: str) -> None:
        self.store.setValue(f"{self._group(workspace)}/question", text)

    def default_strategy(self, workspace: str) -> str:
        """The strategy chosen for `workspace` after an evaluation (Compare tab), or ""."""
        return str(self.store.value(f"{self._group(workspace)}/defaultStrategy", "") or "")

    def save_default_strategy(self, workspace: str, strategy: str) -> None:
        self.store.setValue(f"{self._group(workspace)}/defaultStrategy", strategy)

    def evaluation(self, workspace: str) -> str:
        """The workspace's last evaluation (services.evaluation.report.report_text), or ""."""
        return str(self.store.value(f"{self._group(workspace)}/evaluation", "") or "")

    def save_evaluation(self, workspace: str, text: str) -> None:
        self.store.setValue(f"{self._group(workspace)}/evaluation", text)

    def top_k(self, default: int = 10) -> int:
        try:
            return int(self.store.value("topK", default))
        except (TypeError, ValueError):
            return default
