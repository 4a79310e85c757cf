import Foundation

/// Persists chunks as JSON files in a folder.
public struct DiskChunkStore {
    let folder: URL

    public init(folder: URL) {
        self.folder = folder
    }

    func fileURL(for noteID: String) -> URL {
        folder.appendingPathComponent(noteID).appendingPathExtension("json")
    }
}

// Conformance lives in an extension so the storage code stays small.
extension DiskChunkStore: ChunkStore {
    public func add(_ chunk: NoteChunk) throws {
        var existing = chunks(for: chunk.noteID)
        existing.append(chunk)
        let data = try JSONEncoder().encode(existing)
        try data.write(to: fileURL(for: chunk.noteID), options: .atomic)
    }

    public func chunks(for noteID: String) -> [NoteChunk] {
        guard let data = try? Data(contentsOf: fileURL(for: noteID)) else { return [] }
        return (try? JSONDecoder().decode([NoteChunk].self, from: data)) ?? []
    }

    public func search(keyword: String) -> [NoteChunk] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let needle = keyword.lowercased()
        return names.flatMap { chunks(for: ($0 as NSString).deletingPathExtension) }
            .filter { $0.text.lowercased().contains(needle) }
    }
}
