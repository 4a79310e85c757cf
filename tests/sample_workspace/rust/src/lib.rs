//! Tokenizers used by the notes search engine.

use std::collections::HashSet;

/// Splits text into keywords.
pub trait Tokenizer {
    /// Returns the keywords of `text`, in order of appearance.
    fn tokenize(&self, text: &str) -> Vec<String>;
}

/// Splits on whitespace and punctuation and drops stop words.
pub struct KeywordTokenizer {
    stop_words: HashSet<String>,
}

impl KeywordTokenizer {
    /// Creates a tokenizer with a small English stop word list.
    pub fn new() -> Self {
        let stop_words = ["a", "an", "the", "and", "or", "of"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        KeywordTokenizer { stop_words }
    }
}

impl Tokenizer for KeywordTokenizer {
    fn tokenize(&self, text: &str) -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| w.to_lowercase())
            .filter(|w| !self.stop_words.contains(w))
            .collect()
    }
}

/// How a query combines its keywords.
pub enum MatchMode {
    All,
    Any,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_stop_words() {
        let words = KeywordTokenizer::new().tokenize("The notes and the search");
        assert_eq!(words, vec!["notes", "search"]);
    }
}
