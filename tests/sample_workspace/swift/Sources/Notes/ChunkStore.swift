import Foundation

/// A piece of a note that can be searched on its own.
public struct NoteChunk: Codable, Equatable {
    public let noteID: String
    public let index: Int
    public let text: String
}

/// Stores note chunks and returns the ones matching a keyword.
public protocol ChunkStore {
    func add(_ chunk: NoteChunk) throws
    func chunks(for noteID: String) -> [NoteChunk]
    func search(keyword: String) -> [NoteChunk]
}

/// Where a chunk store keeps its data.
public enum StoreKind: String, CaseIterable {
    case memory
    case disk

    /// A label for settings screens.
    var label: String {
        switch self {
        case .memory: return "In memory"
        case .disk: return "On disk"
        }
    }
}
