"""`metadata`: hybrid-fusion-and-metadata-reranking.md, metadata-aware reranking by query intent.

Two intents are recognised (conformance first, as it is the more specific one):
* Conformance, "what implements / extends / conforms to / inherits from / subclasses of X",
  "implementations of X", "X implementations/subclasses": chunks whose `bases` name X
  (case-insensitive, ignoring module prefixes like `abc.` and generics like `[T]` / `<T>`)
  get score x conformance_match_boost.
* Protocol definition, "X protocol/interface/trait", "protocol/interface/trait X",
  "interface for X": chunks of kind protocol/interface get score x protocol_kind_boost.
  When X is named and some protocol/interface candidate has that name (ignoring case, spaces
  and underscores), only those are boosted; when no candidate has that name, or no X is named,
  every protocol/interface chunk is boosted.
Boosted scores are not capped. Path priors (settings.path_prior_factor, issue #11): chunks of tests,
examples, docs and generated code are multiplied by the factor. No intent and no priors -> the vector
order, scores unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.core.models import Candidate, Signal
from services.retrieval.strategies._ranking import best_first, cosine_signal, explained, path_prior, unchanged
from services.retrieval.strategies.base import SIMILARITY, BaseStrategy, RerankRequest, register
from services.retrieval.strategies.heuristic import squash
from services.core.text import STOP_WORDS

PROTOCOL_KINDS = frozenset({"protocol", "interface"})
_NAME = r"([A-Za-z_][\w.:]*(?:<[^>]*>|\[[^\]]*\])?)"
_ARTICLE = r"(?:(?:the|a|an)\s+)?"
_CONFORMANCE = [
    re.compile(rf"\b(?:implements?|implementing|extends?|extending|conforms?\s+to|conforming\s+to"
               rf"|inherits?\s+from|inheriting\s+from|derives?\s+from|subclass(?:es)?\s+of"
               rf"|subtypes?\s+of|implementations?\s+of|implementers?\s+of|adopts?)\s+{_ARTICLE}{_NAME}",
               re.IGNORECASE),
    re.compile(rf"\b{_NAME}\s+(?:implementations|implementers|subclasses|subtypes|conformances)\b",
               re.IGNORECASE),
]
_PROTOCOL = [
    re.compile(rf"\b(?:protocol|interface|trait)s?\s+(?:for|of)\s+{_ARTICLE}{_NAME}", re.IGNORECASE),
    re.compile(rf"\b{_NAME}\s+(?:protocol|interface|trait)s?\b", re.IGNORECASE),
    re.compile(rf"\b(?:protocol|interface|trait)s?\s+{_NAME}", re.IGNORECASE),
]
_KIND_WORDS = re.compile(r"\b(?:protocol|interface|trait)s?\b", re.IGNORECASE)


@dataclass(frozen=True)
class Intent:
    kind: str  # "conformance" or "protocol"
    target: str  # normalised type name, "" when the question names none


def type_name(text: str) -> str:
    """'abc.ABC' -> 'abc', 'Repo<T>' -> 'repo', 'typing.Generic[T]' -> 'generic', 'a::B' -> 'b'."""
    bare = re.split(r"[\[<(]", text.strip(), maxsplit=1)[0]
    return re.split(r"\.|::", bare)[-1].strip().lower()


def _useful(name: str) -> str:
    target = type_name(name)
    return "" if target in STOP_WORDS or target in {"protocol", "interface", "trait"} else target


def detect_intent(query: str) -> Intent | None:
    for pattern in _CONFORMANCE:
        match = pattern.search(query)
        if match and _useful(match.group(1)):
            return Intent("conformance", _useful(match.group(1)))
    if not _KIND_WORDS.search(query):
        return None
    for pattern in _PROTOCOL:
        match = pattern.search(query)
        if match and _useful(match.group(1)):
            return Intent("protocol", _useful(match.group(1)))
    return Intent("protocol", "")


@register
class MetadataStrategy(BaseStrategy):
    name = "metadata"
    label = "Metadata-aware"
    description = ("Reads the question's intent: 'X protocol' boosts protocol/interface "
                   "definitions (x1.3), 'what implements X' boosts types that list X as a base (x1.5); "
                   "tests, examples, docs and generated code are demoted (x0.8).")
    scale = SIMILARITY
    order = 50

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        s = self.settings
        intent = detect_intent(request.query)
        factor, chosen = self._selection(intent, request.candidates) if intent else (1.0, set())
        boost = self._boost_signal(intent, factor)

        def signals(c: Candidate) -> list[Signal]:
            return ([cosine_signal(c)] + ([boost] if c.chunk.id in chosen else [])
                    + path_prior(c.chunk.path, s.path_prior_patterns, s.path_prior_factor))

        if intent is None and s.path_prior_factor == 1.0:
            return unchanged(request.candidates, "the question asks for no protocol or conformance")
        return best_first(explained(c, signals(c)) for c in request.candidates)

    @staticmethod
    def _boost_signal(intent: Intent | None, factor: float) -> Signal | None:
        if intent is None:
            return None
        what = (f"implements {intent.target}" if intent.kind == "conformance"
                else f"{intent.target or 'a'} protocol/interface".strip())
        return Signal(what, factor, factor, "mul", f"question asks for {intent.kind}")

    def _selection(self, intent: Intent, candidates: list[Candidate]) -> tuple[float, set[str]]:
        if intent.kind == "conformance":
            chosen = {c.chunk.id for c in candidates
                      if any(type_name(b) == intent.target for b in c.chunk.bases)}
            return self.settings.conformance_match_boost, chosen
        kinds = [c for c in candidates if c.chunk.kind in PROTOCOL_KINDS]
        named = [c for c in kinds if intent.target and squash(c.chunk.symbol) == squash(intent.target)]
        return self.settings.protocol_kind_boost, {c.chunk.id for c in (named or kinds)}
