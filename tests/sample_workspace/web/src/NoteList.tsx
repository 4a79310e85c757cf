import React, { useEffect, useState } from "react";
import { NoteSummary, SearchProvider } from "./search";

export interface NoteListProps {
  provider: SearchProvider;
  query: string;
  onSelect: (id: string) => void;
}

/** Renders the notes matching the current query as a clickable list. */
export function NoteList({ provider, query, onSelect }: NoteListProps) {
  const [notes, setNotes] = useState<NoteSummary[]>([]);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let cancelled = false;
    provider
      .search(query)
      .then((found) => !cancelled && setNotes(found))
      .catch((err: Error) => !cancelled && setError(err.message));
    return () => {
      cancelled = true;
    };
  }, [provider, query]);

  if (error) {
    return <p className="error">Search failed: {error}</p>;
  }
  return (
    <ul className="note-list">
      {notes.map((note) => (
        <li key={note.id} onClick={() => onSelect(note.id)}>
          <strong>{note.title}</strong>
          <span>{note.snippet}</span>
        </li>
      ))}
    </ul>
  );
}

export default NoteList;
