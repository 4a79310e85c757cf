package notes;

/** An immutable note record. */
public record Note(String id, String title, String body) {
    public Note {
        if (title == null || title.isBlank()) {
            throw new IllegalArgumentException("a note needs a title");
        }
    }
}
