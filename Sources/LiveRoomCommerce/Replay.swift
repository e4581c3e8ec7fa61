import LiveRoomProtocol

/// A recording of an anchor presenting a product: from `pop` to `unpop`, the next `pop` or the
/// longest a replay may run. The server keeps the file in its data directory and serves it
/// at ``url`` to holders of a valid UserSig.
public struct Replay: Sendable, Hashable {
    /// 32 lowercase hex digits, random.
    public var replayId: String
    public var roomId: String
    public var itemNumber: Int
    /// The anchor who presented the product.
    public var userId: String
    /// `vp8` (a WebM file), `h264` (Matroska) or `opus` (audio only, WebM).
    public var codec: String
    public var durationMs: Int64
    public var bytes: Int64
    /// Milliseconds since 1970.
    public var createdAt: Int64

    public init(replayId: String, roomId: String, itemNumber: Int, userId: String, codec: String, durationMs: Int64, bytes: Int64, createdAt: Int64) {
        self.replayId = replayId
        self.roomId = roomId
        self.itemNumber = itemNumber
        self.userId = userId
        self.codec = codec
        self.durationMs = durationMs
        self.bytes = bytes
        self.createdAt = createdAt
    }

    /// The most replays one product keeps: a new one beyond it deletes the oldest.
    public static let maxPerProduct = 10

    /// The file's extension for a codec: WebM for VP8 and Opus, Matroska for H.264.
    public static func fileExtension(codec: String) -> String {
        codec == "h264" ? "mkv" : "webm"
    }

    /// The file's name in the server's replay directory: never from a client, always from the id.
    public var fileName: String { "\(replayId).\(Self.fileExtension(codec: codec))" }

    /// The path the server serves it at.
    public var url: String { "/replays/\(fileName)" }

    /// Whether `name` could be a replay's file name (what a URL may ask for): 32 lowercase hex
    /// digits and a known extension. Returns the id.
    public static func replayId(fromFileName name: String) -> String? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, ["webm", "mkv"].contains(parts[1]), parts[0].count == 32,
            parts[0].utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { return nil }
        return String(parts[0])
    }

    public var json: JSONValue {
        [
            "replayId": .string(replayId), "userId": .string(userId), "codec": .string(codec), "durationMs": .number(Double(durationMs)),
            "bytes": .number(Double(bytes)), "createTime": .number(Double(createdAt)), "url": .string(url),
        ]
    }
}
