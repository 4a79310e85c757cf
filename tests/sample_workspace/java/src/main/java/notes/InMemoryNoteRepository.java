package notes;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Keeps notes in insertion order in memory.
 */
public class InMemoryNoteRepository extends AbstractRepository implements NoteRepository, Comparable<InMemoryNoteRepository> {
    private final Map<String, Note> notes = new LinkedHashMap<>();

    @Override
    public void save(Note note) {
        notes.put(note.id(), note);
        recordWrite();
    }

    @Override
    public Optional<Note> findById(String id) {
        return Optional.ofNullable(notes.get(id));
    }

    @Override
    public List<Note> findAll() {
        return new ArrayList<>(notes.values());
    }

    @Override
    public int compareTo(InMemoryNoteRepository other) {
        return Integer.compare(notes.size(), other.notes.size());
    }

    /** Lists note titles, used by the command line tool. */
    static class TitleLister {
        List<String> titles(NoteRepository repository) {
            List<String> result = new ArrayList<>();
            for (Note note : repository.findAll()) {
                result.add(note.title());
            }
            return result;
        }
    }
}
