"""The fast paths of the keyword strategies give exactly what the spec's regex matching gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.retrieval.strategies._ranking import WordCounts, contains_word, count_words

WORDS = st.sampled_from(["save", "Save", "note_store", "x2", "über", "c++", "a.b", "self", "__init__", "é", "`save", "save()"])
TEXT = st.lists(st.one_of(WORDS, st.text(alphabet=" _.,()+-\n\tabcSAVE2éü", max_size=6)), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=TEXT, word=WORDS)
def test_word_counts_match_the_regex(text, word):
    counts = WordCounts(text)
    assert counts.count(word.lower()) == count_words(text, word.lower())
    assert counts.contains(word.lower()) == contains_word(text, word.lower())


def test_word_counts_examples():
    counts = WordCounts("def save_note(note):\n    Save(note) # saves NOTE")
    assert counts.count("note") == 3 and counts.count("save") == 1 and counts.count("save_note") == 1
    assert counts.count("c++") == 0 and not counts.contains("saves_")


@settings(max_examples=300, deadline=None)
@given(text=TEXT, words=st.lists(WORDS.map(str.lower), max_size=6))
def test_keyword_sets_match_the_per_keyword_loops(text, words):
    from services.retrieval.strategies._ranking import Keywords

    keywords, counts = Keywords(words), WordCounts(text)
    distinct = list(dict.fromkeys(words))
    assert keywords.found(counts) == sum(1 for k in distinct if contains_word(text, k))
    assert keywords.occurrences(counts) == sum(count_words(text, k) for k in distinct)
