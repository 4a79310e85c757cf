// Package index keeps an inverted index from keywords to note ids.
package index

import (
	"sort"
	"strings"
)

// Searcher finds note ids for a query.
type Searcher interface {
	Search(query string) []string
}

// InvertedIndex maps each keyword to the notes that contain it.
type InvertedIndex struct {
	postings map[string]map[string]bool
}

// NewInvertedIndex returns an empty index.
func NewInvertedIndex() *InvertedIndex {
	return &InvertedIndex{postings: map[string]map[string]bool{}}
}

// Add indexes the words of a note body under the note id.
func (ix *InvertedIndex) Add(noteID string, body string) {
	for _, word := range Tokenize(body) {
		if ix.postings[word] == nil {
			ix.postings[word] = map[string]bool{}
		}
		ix.postings[word][noteID] = true
	}
}

// Search returns the ids of notes containing every keyword of the query.
func (ix *InvertedIndex) Search(query string) []string {
	var result []string
	for i, word := range Tokenize(query) {
		ids := ix.postings[word]
		if i == 0 {
			for id := range ids {
				result = append(result, id)
			}
			continue
		}
		result = keep(result, ids)
	}
	sort.Strings(result)
	return result
}

func keep(ids []string, allowed map[string]bool) []string {
	out := ids[:0]
	for _, id := range ids {
		if allowed[id] {
			out = append(out, id)
		}
	}
	return out
}

// Tokenize splits text into lower-case keywords.
func Tokenize(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}
