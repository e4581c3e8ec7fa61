/// `a=extmap:<id>[/<direction>] <uri> [<attributes>]` (RFC 8285 §8).
public struct SDPExtensionMap: Hashable, Sendable {
    /// The local identifier used in RTP header extensions (1–14 one-byte, up to 255 two-byte).
    public var id: UInt16
    /// An optional direction.
    public var direction: SDPDirection?
    /// The extension URI.
    public var uri: String
    /// Extension attributes, verbatim.
    public var attributes: String?

    /// Creates an extmap.
    public init(id: UInt16, direction: SDPDirection? = nil, uri: String, attributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.attributes = attributes
    }

    init(parsing value: Substring) throws(WireError) {
        let parts = value.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2 else { throw .malformed("SDP extmap \"\(value)\" needs an id and a URI") }
        let idParts = parts[0].split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(idParts.count), let id = UInt16(idParts[0]), (1...4095).contains(id) else {
            throw .malformed("SDP extmap \"\(value)\" has a bad id")
        }
        var direction: SDPDirection?
        if idParts.count == 2 {
            guard let parsed = SDPDirection(rawValue: String(idParts[1])) else {
                throw .malformed("SDP extmap \"\(value)\" has a bad direction")
            }
            direction = parsed
        }
        self.init(id: id, direction: direction, uri: String(parts[1]), attributes: parts.count > 2 ? String(parts[2]) : nil)
    }

    var text: String {
        var text = String(id)
        if let direction { text += "/\(direction.rawValue)" }
        text += " \(uri)"
        if let attributes { text += " \(attributes)" }
        return text
    }
}
