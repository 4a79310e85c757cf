import Foundation

/// Keeps chunks in a dictionary; fast, but lost when the app quits.
public final class MemoryChunkStore: ChunkStore {
    private var byNote: [String: [NoteChunk]] = [:]

    public init() {}

    public func add(_ chunk: NoteChunk) throws {
        byNote[chunk.noteID, default: []].append(chunk)
    }

    public func chunks(for noteID: String) -> [NoteChunk] {
        byNote[noteID] ?? []
    }

    public func search(keyword: String) -> [NoteChunk] {
        let needle = keyword.lowercased()
        return byNote.values.flatMap { $0 }.filter { $0.text.lowercased().contains(needle) }
    }
}
