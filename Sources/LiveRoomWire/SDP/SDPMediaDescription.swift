/// One media section, from `m=` to the next `m=` (RFC 8866 §5.14).
public struct SDPMediaDescription: Hashable, Sendable {
    /// `audio`, `video`, `application`, …
    public var kind: String
    /// The port (9 in WebRTC offers; 0 rejects the section).
    public var port: UInt16
    /// The optional `/<number of ports>`.
    public var portCount: UInt16?
    /// The transport protocol, e.g. `UDP/TLS/RTP/SAVPF`.
    public var proto: String
    /// The formats: RTP payload types, or e.g. `webrtc-datachannel`.
    public var formats: [String]
    /// `i=`, if present.
    public var information: String?
    /// `c=` lines.
    public var connections: [SDPConnection]
    /// `b=` lines.
    public var bandwidths: [SDPBandwidth]
    /// Other non-attribute lines (`k=` and unknown types), in order.
    public var otherLines: [SDPLine]
    /// `a=` lines, in order.
    public var attributes: [SDPAttribute]

    /// Creates a media section.
    public init(kind: String, port: UInt16 = 9, portCount: UInt16? = nil, proto: String = "UDP/TLS/RTP/SAVPF",
                formats: [String], information: String? = nil, connections: [SDPConnection] = [SDPConnection()],
                bandwidths: [SDPBandwidth] = [], otherLines: [SDPLine] = [], attributes: [SDPAttribute] = []) {
        self.kind = kind
        self.port = port
        self.portCount = portCount
        self.proto = proto
        self.formats = formats
        self.information = information
        self.connections = connections
        self.bandwidths = bandwidths
        self.otherLines = otherLines
        self.attributes = attributes
    }

    init(parsingMediaLine value: Substring) throws(WireError) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count >= 3 else { throw .malformed("SDP m= line \"\(value)\" needs at least 3 fields") }
        let portParts = parts[1].split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(portParts.count), let port = UInt16(portParts[0]) else {
            throw .malformed("SDP m= line \"\(value)\" has a bad port")
        }
        var portCount: UInt16?
        if portParts.count == 2 {
            guard let count = UInt16(portParts[1]) else { throw .malformed("SDP m= line \"\(value)\" has a bad port count") }
            portCount = count
        }
        self.init(kind: String(parts[0]), port: port, portCount: portCount, proto: String(parts[2]),
                  formats: parts.dropFirst(3).map(String.init), connections: [])
    }

    var mediaLine: String {
        var text = "\(kind) \(port)"
        if let portCount { text += "/\(portCount)" }
        text += " \(proto)"
        for format in formats { text += " \(format)" }
        return text
    }

    // MARK: Accessors

    /// The `a=mid`, if present.
    public var mid: String? {
        for case .mid(let value) in attributes { return value }
        return nil
    }

    /// The direction attribute; `sendrecv` when absent (RFC 8866 §6.7).
    public var direction: SDPDirection {
        for case .direction(let value) in attributes { return value }
        return .sendrecv
    }

    /// All rtpmaps in order.
    public var rtpMaps: [SDPRTPMap] {
        attributes.compactMap { if case .rtpmap(let map) = $0 { return map } else { return nil } }
    }

    /// The rtpmap of `payloadType`, if any.
    public func rtpMap(for payloadType: UInt8) -> SDPRTPMap? {
        rtpMaps.first { $0.payloadType == payloadType }
    }

    /// The fmtp of `payloadType`, if any.
    public func formatParameters(for payloadType: UInt8) -> SDPFormatParameters? {
        for case .fmtp(let parameters) in attributes where parameters.payloadType == payloadType { return parameters }
        return nil
    }

    /// The rtcp-fb entries that apply to `payloadType` (including `*`).
    public func rtcpFeedback(for payloadType: UInt8) -> [(type: String, parameter: String?)] {
        attributes.compactMap {
            if case .rtcpFeedback(let pt, let type, let parameter) = $0, pt == nil || pt == payloadType {
                return (type, parameter)
            }
            return nil
        }
    }

    /// The distinct SSRCs named by `a=ssrc`, in order of first appearance.
    public var ssrcs: [UInt32] {
        var seen: [UInt32] = []
        for case .ssrc(let id, _, _) in attributes where !seen.contains(id) { seen.append(id) }
        return seen
    }

    /// The value of `a=ssrc:<ssrc> <attribute>:<value>`.
    public func ssrcAttribute(_ ssrc: UInt32, _ name: String) -> String? {
        for case .ssrc(let id, let attribute, let value) in attributes where id == ssrc && attribute == name { return value }
        return nil
    }

    /// The SSRC groups with `semantics` (e.g. `FID`).
    public func ssrcGroups(_ semantics: String) -> [[UInt32]] {
        attributes.compactMap {
            if case .ssrcGroup(let groupSemantics, let ssrcs) = $0, groupSemantics == semantics { return ssrcs }
            return nil
        }
    }

    /// The ICE candidates of this section.
    public var candidates: [ICECandidate] {
        attributes.compactMap { if case .candidate(let candidate) = $0 { return candidate } else { return nil } }
    }

    /// The `a=ice-ufrag`, if present in this section.
    public var iceUfrag: String? {
        for case .iceUfrag(let value) in attributes { return value }
        return nil
    }

    /// The `a=ice-pwd`, if present in this section.
    public var icePwd: String? {
        for case .icePwd(let value) in attributes { return value }
        return nil
    }

    /// The `a=fingerprint`, if present in this section.
    public var fingerprint: SDPFingerprint? {
        for case .fingerprint(let value) in attributes { return value }
        return nil
    }

    /// The `a=setup`, if present in this section.
    public var setup: SDPSetupRole? {
        for case .setup(let value) in attributes { return value }
        return nil
    }

    /// The extmaps of this section.
    public var extensionMaps: [SDPExtensionMap] {
        attributes.compactMap { if case .extmap(let map) = $0 { return map } else { return nil } }
    }

    /// Whether `a=rtcp-mux` is present.
    public var isRTCPMux: Bool { attributes.contains(.rtcpMux) }

    /// Whether `a=bundle-only` is present.
    public var isBundleOnly: Bool { attributes.contains(.bundleOnly) }
}
