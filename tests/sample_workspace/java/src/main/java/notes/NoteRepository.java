package notes;

import java.util.List;
import java.util.Optional;

/**
 * Stores notes and finds them by id.
 */
public interface NoteRepository {
    void save(Note note);

    Optional<Note> findById(String id);

    List<Note> findAll();
}
