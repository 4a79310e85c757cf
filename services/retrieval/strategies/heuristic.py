"""`heuristic`: heuristic-and-llm-reranking.md, HeuristicReranker (no model, < 5 ms / 100 chunks).

boost = exact_name_boost   if the chunk's name equals the question (see `name_matches`)
      + name_term_boost    for each question term contained in the chunk's name
      + summary_boost x    (fraction of question terms found in the docstring/summary)
      - stub_penalty       if the content (stripped) is shorter than stub_max_chars, empty included
      + connection_boost   if more than connection_min other chunks reference this symbol
new score = original score + boost (not capped, so it can leave 0-1).
Terms: the question lower-cased, split on whitespace and punctuation, > 2 chars, no stop words.
"""

from __future__ import annotations

import re

from services.core.models import Candidate, Signal
from services.retrieval.strategies._ranking import apply_signals, best_first, cosine_signal, explained
from services.retrieval.strategies.base import SIMILARITY, BaseStrategy, RerankRequest, register
from services.core.text import STOP_WORDS

_TERM_SPLIT = re.compile(r"[^\w]+")
_NAME_NOISE = re.compile(r"[\s_]+")


def query_terms(query: str) -> list[str]:
    words = _TERM_SPLIT.split(query.lower())
    return list(dict.fromkeys(w for w in words if len(w) > 2 and w not in STOP_WORDS))


def squash(text: str) -> str:
    """Lower case without spaces and underscores: 'entity store' == 'EntityStore' == 'entity_store'."""
    return _NAME_NOISE.sub("", text.lower())


@register
class HeuristicStrategy(BaseStrategy):
    name = "heuristic"
    label = "Heuristic"
    description = ("Fast content signals: exact name match, question terms in the name or "
                   "docstring, penalty for stubs, bonus for much-referenced symbols.")
    scale = SIMILARITY
    order = 40
    # Its additive name boosts pull weak matches up from a wider pool: pytest MRR@10 0.270 with
    # 2 x top_k, 0.223 with max(50, 5 x top_k) (benchmarks/experiments/README.md).
    wide_pool = False
    legend = ("cosine similarity plus boosts (exact name +2.0, each term in the name +0.5, "
              "docstring up to +0.3, stub −0.3, much referenced +0.2), so it can reach about 3.")

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        terms = query_terms(request.query)
        wanted = squash(request.query.strip())
        return best_first(explained(c, [cosine_signal(c), *self.boosts(c, terms, wanted)])
                          for c in request.candidates)

    def boost(self, candidate: Candidate, terms: list[str], wanted_name: str) -> float:
        return apply_signals(self.boosts(candidate, terms, wanted_name))

    def boosts(self, candidate: Candidate, terms: list[str], wanted_name: str) -> list[Signal]:
        """Each content signal that fired, as an addition to the score."""
        s = self.settings
        chunk = candidate.chunk
        out = []
        name = chunk.symbol.lower()
        if name_matches(chunk.symbol, chunk.qualified_name, wanted_name):
            out.append(Signal("exact name", 1, s.exact_name_boost, "add", chunk.qualified_name or chunk.symbol))
        if name:
            out += [Signal(f"'{t}' in the name", 1, s.name_term_boost, "add") for t in terms if t in name]
        if chunk.docstring and terms:
            hits = [t for t in terms if t in chunk.docstring.lower()]
            if hits:
                fraction = len(hits) / len(terms)
                out.append(Signal("terms in the docstring", fraction, s.summary_boost * fraction, "add",
                                  ", ".join(hits)))
        size = len(chunk.content.strip())
        if size < s.stub_max_chars:
            out.append(Signal("stub", size, -s.stub_penalty, "add", f"{size} characters"))
        if chunk.references > s.connection_min:
            out.append(Signal("much referenced", chunk.references, s.connection_boost, "add",
                              f"{chunk.references} references"))
        return out


def name_matches(symbol: str, qualified_name: str, wanted: str) -> bool:
    """Exact name match: the symbol or qualified name equals the question, ignoring case,
    spaces and underscores ('EntityStore', 'entity store', 'entity_store' all match EntityStore;
    'Store.save' matches the qualified name Store.save)."""
    if not wanted:
        return False
    return any(name and squash(name) == wanted for name in (symbol, qualified_name))
