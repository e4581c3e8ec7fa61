import LiveRoomProtocol

/// Where a task's image (placeholder, background, watermark) may come from: an `http(s)` URL
/// that the server fetches under its egress policy, or a file name inside the operator's image
/// directory. Clients never name other server files: `file://` URLs, absolute paths and names
/// that climb out of the directory are refused.
public enum ImageReference: Sendable, Hashable {
    case web(String)
    /// A name relative to the image directory, without `..` parts.
    case file(String)
    case refused(String)

    /// The most bytes of one image, fetched or read.
    public static let maxBytes = 5 << 20

    public init(_ url: String, hasImageDirectory: Bool) {
        let lower = url.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            self = DestinationURL(url) == nil ? .refused("it is not a valid URL") : .web(url)
            return
        }
        if url.contains("://") || url.hasPrefix("/") || url.hasPrefix("~") {
            self = .refused("it is not allowed: images are http(s) URLs or file names in the server's image directory")
            return
        }
        guard hasImageDirectory else {
            self = .refused("it is not an http(s) URL, and this server has no image directory (--image-dir)")
            return
        }
        let parts = url.split(separator: "/", omittingEmptySubsequences: false)
        guard !url.isEmpty, url.utf8.count <= 255, !parts.contains(where: { $0 == ".." || $0.isEmpty }),
            !url.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" })
        else {
            self = .refused("it is not a plain file name inside the image directory")
            return
        }
        self = .file(url)
    }

    /// Whether `bytes` start like an image format the server decodes: PNG, JPEG, GIF, WebP or BMP.
    public static func looksLikeImage(_ bytes: some Collection<UInt8>) -> Bool {
        let head = Array(bytes.prefix(12))
        func starts(_ magic: [UInt8]) -> Bool { head.count >= magic.count && Array(head.prefix(magic.count)) == magic }
        return starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) || starts([0xFF, 0xD8, 0xFF]) || starts(Array("GIF8".utf8))
            || (starts(Array("RIFF".utf8)) && head.count >= 12 && Array(head[8..<12]) == Array("WEBP".utf8)) || starts(Array("BM".utf8))
    }
}
