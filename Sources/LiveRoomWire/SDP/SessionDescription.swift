/// An SDP session description (RFC 8866) as WebRTC uses it (RFC 8829, RFC 8843).
///
/// `parse` accepts CRLF or LF line endings; `serialize` writes CRLF and the RFC 8866
/// line order, so a description produced by a browser or webrtcbin round-trips
/// to the same text. Unknown attributes and line types are kept.
public struct SessionDescription: Hashable, Sendable {
    /// `v=`, always 0.
    public var version: UInt8
    /// `o=`.
    public var origin: SDPOrigin
    /// `s=` (WebRTC writes `-`).
    public var sessionName: String
    /// `i=`, if present.
    public var information: String?
    /// `c=` at session level, if present.
    public var connection: SDPConnection?
    /// Session `b=` lines.
    public var bandwidths: [SDPBandwidth]
    /// `t=` lines.
    public var timings: [SDPTiming]
    /// Other session lines (`u=`, `e=`, `p=`, `r=`, `z=`, `k=`, unknown types), in order.
    public var otherLines: [SDPLine]
    /// Session-level `a=` lines.
    public var attributes: [SDPAttribute]
    /// The media sections.
    public var media: [SDPMediaDescription]

    /// Creates a session description.
    public init(origin: SDPOrigin, sessionName: String = "-", information: String? = nil, connection: SDPConnection? = nil,
                bandwidths: [SDPBandwidth] = [], timings: [SDPTiming] = [SDPTiming()], otherLines: [SDPLine] = [],
                attributes: [SDPAttribute] = [], media: [SDPMediaDescription] = []) {
        self.version = 0
        self.origin = origin
        self.sessionName = sessionName
        self.information = information
        self.connection = connection
        self.bandwidths = bandwidths
        self.timings = timings
        self.otherLines = otherLines
        self.attributes = attributes
        self.media = media
    }

    /// Parses SDP text.
    public static func parse(_ text: String) throws(WireError) -> SessionDescription {
        // "\r\n" is a single Character in Swift, so split on both forms.
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\r\n" || $0 == "\n" }).map { line -> Substring in
            line.last == "\r" ? line.dropLast() : line
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first else { throw .truncated("SDP is empty") }
        guard first == "v=0" else { throw .malformed("SDP must start with v=0, found \"\(first.prefix(40))\"") }

        var origin: SDPOrigin?
        var sessionName: String?
        var description = SessionDescription(origin: SDPOrigin(sessionID: "0", sessionVersion: "0"), timings: [])
        var currentMedia: SDPMediaDescription?

        for (number, line) in lines.enumerated().dropFirst() {
            let bytes = line.utf8
            guard bytes.count >= 2, let type = line.first, type.isASCII, type.isLetter, bytes[bytes.index(after: bytes.startIndex)] == UInt8(ascii: "=") else {
                throw .malformed("SDP line \(number + 1) \"\(line.prefix(40))\" is not <letter>=<value>")
            }
            let value = line.dropFirst(2)
            if type == "m" {
                if let finished = currentMedia { description.media.append(finished) }
                currentMedia = try SDPMediaDescription(parsingMediaLine: value)
                continue
            }
            if var media = currentMedia {
                switch type {
                case "a": media.attributes.append(try SDPAttribute(parsing: value))
                case "c": media.connections.append(try SDPConnection(parsing: value))
                case "b": media.bandwidths.append(try SDPBandwidth(parsing: value))
                case "i" where media.information == nil: media.information = String(value)
                case "v", "o", "s", "t":
                    throw .malformed("SDP line \(number + 1): \(type)= is not allowed in a media section")
                default: media.otherLines.append(SDPLine(type: type, value: String(value)))
                }
                currentMedia = media
                continue
            }
            switch type {
            case "v": throw .malformed("SDP line \(number + 1): repeated v=")
            case "o":
                guard origin == nil else { throw .malformed("SDP line \(number + 1): repeated o=") }
                origin = try SDPOrigin(parsing: value)
            case "s":
                guard sessionName == nil else { throw .malformed("SDP line \(number + 1): repeated s=") }
                sessionName = String(value)
            case "i" where description.information == nil: description.information = String(value)
            case "c":
                guard description.connection == nil else { throw .malformed("SDP line \(number + 1): repeated session c=") }
                description.connection = try SDPConnection(parsing: value)
            case "b": description.bandwidths.append(try SDPBandwidth(parsing: value))
            case "t": description.timings.append(try SDPTiming(parsing: value))
            case "a": description.attributes.append(try SDPAttribute(parsing: value))
            default: description.otherLines.append(SDPLine(type: type, value: String(value)))
            }
        }
        if let finished = currentMedia { description.media.append(finished) }
        guard let origin else { throw .malformed("SDP has no o= line") }
        guard let sessionName else { throw .malformed("SDP has no s= line") }
        description.origin = origin
        description.sessionName = sessionName
        return description
    }

    /// The SDP text with CRLF line endings, lines in RFC 8866 order.
    public func serialize() -> String {
        var lines: [String] = ["v=\(version)", "o=\(origin.text)", "s=\(sessionName)"]
        if let information { lines.append("i=\(information)") }
        let early: Set<Character> = ["u", "e", "p"]
        let late: Set<Character> = ["r", "z", "k"]
        lines += otherLines.filter { early.contains($0.type) }.map(\.text)
        if let connection { lines.append("c=\(connection.text)") }
        lines += bandwidths.map { "b=\($0.text)" }
        lines += timings.map { "t=\($0.text)" }
        lines += otherLines.filter { late.contains($0.type) }.map(\.text)
        lines += otherLines.filter { !early.contains($0.type) && !late.contains($0.type) }.map(\.text)
        lines += attributes.map { "a=\($0.text)" }
        for section in media {
            lines.append("m=\(section.mediaLine)")
            if let information = section.information { lines.append("i=\(information)") }
            lines += section.connections.map { "c=\($0.text)" }
            lines += section.bandwidths.map { "b=\($0.text)" }
            lines += section.otherLines.map(\.text)
            lines += section.attributes.map { "a=\($0.text)" }
        }
        return lines.map { $0 + "\r\n" }.joined()
    }

    // MARK: Accessors

    /// The mids of the first `a=group:BUNDLE`, if any.
    public var bundleGroup: [String]? {
        for case .group(let semantics, let tags) in attributes where semantics == "BUNDLE" { return tags }
        return nil
    }

    /// Whether `a=ice-lite` is present at session level.
    public var isICELite: Bool { attributes.contains(.iceLite) }

    /// Session-level `a=ice-options`.
    public var iceOptions: [String] {
        for case .iceOptions(let options) in attributes { return options }
        return []
    }

    /// The session-level `a=fingerprint`, or else the first media section's.
    public var fingerprint: SDPFingerprint? {
        for case .fingerprint(let value) in attributes { return value }
        return media.lazy.compactMap(\.fingerprint).first
    }

    /// The ICE ufrag: session level, or else the first media section's.
    public var iceUfrag: String? {
        for case .iceUfrag(let value) in attributes { return value }
        return media.lazy.compactMap(\.iceUfrag).first
    }

    /// The ICE password: session level, or else the first media section's.
    public var icePwd: String? {
        for case .icePwd(let value) in attributes { return value }
        return media.lazy.compactMap(\.icePwd).first
    }

    /// The media section with `mid`, if any.
    public func media(withMid mid: String) -> SDPMediaDescription? {
        media.first { $0.mid == mid }
    }
}
