"""`auto` on a name: its definitions, then the chunks that use it, ranked by the keyword table, no vectors (issue 44).

A bare or dotted name (`saferepr`, `SafeRepr.repr`, `_pytest.nodes`) that the index defines needs neither the
encoder nor the vector store: the catalogue lists its definitions (names.find) and its FTS5 table ranks the chunks
holding the name's identifiers whole, by BM25. A score is the chunk's BM25 over the best of the question (the best
1.0, as the file ranking scales its signals), so min_relevance keeps the uses scoring at least that share of the
best; the definitions lead whatever their score (names_first). The original ranking is the keyword order.
A name the index does not define goes the usual way (vectors), as do every strategy chosen by name and a file
answer (find_files: its file ranking reads the vector ranking).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.core.models import Candidate, QueryOptions, Signal
from services.core.text import code_tokens
from services.retrieval import names
from services.retrieval import search_steps as steps
from services.storage.workspace_index import WorkspaceIndex

NOTE_END = "(keyword match, no vectors)"


@dataclass(frozen=True)
class NameAnswer:
    reading: names.Reading
    definitions: list[names.Definition]
    ranked: list[Candidate]  # the definitions first, then the uses at or above min_relevance, by keyword score
    original: list[Candidate]  # the keyword order, at or above min_relevance
    pool: int  # the keyword hits ranked

    def note(self, shown: list[Candidate]) -> str:
        """What the answer says it did, counting the uses among the results `shown`."""
        ids = {d.chunk.id for d in self.definitions}
        uses = sum(c.chunk.id not in ids for c in shown)
        count = len(self.definitions)
        what = f"{count} definition{'s' if count != 1 else ''}"
        then = f"then {uses} chunk{'s' if uses != 1 else ''} that use it" if uses else "no other chunk uses it"
        kind = {names.NAME: "a name", names.DOTTED: "a dotted name"}[self.reading.kind]
        return f"read as {kind} `{self.reading.name}`: {what} first, {then} {NOTE_END}"


def identifiers(name: str) -> list[str]:
    """The name's identifiers whole, as the keyword table stores them (`SafeRepr.repr` -> saferepr, repr)."""
    return list(dict.fromkeys(tokens[0] for part in name.split(".") if (tokens := code_tokens(part))))


def answer(index: WorkspaceIndex, reading: names.Reading, options: QueryOptions,
           allowed: set[str] | None) -> NameAnswer | None:
    """The name's answer within the filters (`allowed` chunk ids, None: any); None when the index defines
    no such name there."""
    found = names.find(index.catalog(), reading)
    if allowed is not None:
        found = [d for d in found if d.chunk.id in allowed]
    if not found:
        return None
    tokens = identifiers(reading.name)
    hits = index.keywords.search_tokens(tokens, options.top_k + len(found), allowed)
    ranked_ids = {i for i, _ in hits}
    missing = {d.chunk.id for d in found} - ranked_ids
    extra = index.keywords.search_tokens(tokens, len(missing), missing) if missing else []
    chunks = index.chunks([i for i, _ in hits] + [d.chunk.id for d in found])
    best = hits[0][1] if hits else 0.0
    uses = [scaled(chunks[i], rank, score, best) for rank, (i, score) in enumerate(hits, 1) if i in chunks]
    scores = dict(extra)
    outside = [scaled(chunks[i], None, scores.get(i, 0.0), best) for i in missing if i in chunks]
    kept = [c for c in uses if c.score >= options.min_relevance]
    ranked = steps.names_first(kept, found, uses + outside, reading)
    return NameAnswer(reading, found, ranked, kept[:options.top_k], len(hits))


def scaled(chunk, rank: int | None, score: float, best: float) -> Candidate:
    """A keyword hit as a candidate: its BM25 over the best as both its score and its original score, with the
    row that says so (the why view's)."""
    share = min(1.0, score / best) if best > 0 else 0.0
    why = Signal("keyword match (BM25)", round(score, 4), share, "add",
                 f"BM25 {score:.2f} over the question's best {best:.2f}: the name's identifiers in this chunk")
    return Candidate(chunk, share, share, rank, score, rank, signals=(why,))
