"""The note record and small helpers around it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

MAX_TITLE_LENGTH = 120


@dataclass
class Note:
    """A short note with a title, a body and optional tags."""

    title: str
    body: str
    tags: list[str] = field(default_factory=list)
    note_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat())

    def summary(self, length: int = 60) -> str:
        """Return the first characters of the body, for list views."""
        text = " ".join(self.body.split())
        return text if len(text) <= length else text[: length - 1] + "…"

    def has_tag(self, tag: str) -> bool:
        """True when the note carries the tag (case-insensitive)."""
        return tag.lower() in (t.lower() for t in self.tags)


def validate_title(title: str) -> str:
    """Strip the title and reject empty or overly long ones."""
    cleaned = title.strip()
    if not cleaned:
        raise ValueError("a note needs a title")
    if len(cleaned) > MAX_TITLE_LENGTH:
        raise ValueError(f"title longer than {MAX_TITLE_LENGTH} characters")
    return cleaned
