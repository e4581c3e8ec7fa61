/// A user's role in a room.
public enum Role: String, Sendable, Hashable, Codable, CaseIterable {
    case anchor
    case audience
}
