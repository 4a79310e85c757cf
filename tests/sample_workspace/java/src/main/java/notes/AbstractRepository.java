package notes;

import java.util.concurrent.atomic.AtomicLong;

/** Counts writes so that callers can tell whether anything changed. */
public abstract class AbstractRepository {
    private final AtomicLong writes = new AtomicLong();

    protected void recordWrite() {
        writes.incrementAndGet();
    }

    public long writeCount() {
        return writes.get();
    }
}
