/// One `a=` line, decoded for the attributes WebRTC uses (RFC 8866, 8829, 8843, 8839,
/// 8842, 5576, 4585, 8285, 8122, 8830) and kept verbatim otherwise.
public enum SDPAttribute: Hashable, Sendable {
    /// `a=mid:<id>`.
    case mid(String)
    /// `a=group:<semantics> <mid> …` (e.g. `BUNDLE 0 1`).
    case group(semantics: String, identificationTags: [String])
    /// `a=msid:<stream id> [<track id>]`.
    case msid(streamID: String, trackID: String?)
    /// `a=ssrc:<ssrc> <attribute>[:<value>]` (e.g. `cname:…`, `msid:…`).
    case ssrc(id: UInt32, attribute: String, value: String?)
    /// `a=ssrc-group:<semantics> <ssrc> …` (e.g. `FID 1111 2222` for RTX).
    case ssrcGroup(semantics: String, ssrcs: [UInt32])
    /// `a=rtpmap:…`.
    case rtpmap(SDPRTPMap)
    /// `a=fmtp:…`.
    case fmtp(SDPFormatParameters)
    /// `a=rtcp-fb:<pt|*> <type> [<parameter>]`; `payloadType` nil means `*`.
    case rtcpFeedback(payloadType: UInt8?, type: String, parameter: String?)
    /// `a=rtcp-mux`.
    case rtcpMux
    /// `a=extmap:…`.
    case extmap(SDPExtensionMap)
    /// `a=ice-ufrag:…`.
    case iceUfrag(String)
    /// `a=ice-pwd:…`.
    case icePwd(String)
    /// `a=ice-lite`.
    case iceLite
    /// `a=ice-options:<option> …` (e.g. `trickle`).
    case iceOptions([String])
    /// `a=fingerprint:…`.
    case fingerprint(SDPFingerprint)
    /// `a=setup:…`.
    case setup(SDPSetupRole)
    /// `a=candidate:…`.
    case candidate(ICECandidate)
    /// `a=sendrecv`, `a=sendonly`, `a=recvonly`, `a=inactive`.
    case direction(SDPDirection)
    /// `a=bundle-only`.
    case bundleOnly
    /// Any other attribute: name and, if there was a colon, the verbatim value.
    case other(name: String, value: String?)

    /// Parses the text after `a=`. Malformed values of known attributes throw.
    public init(parsing text: some StringProtocol) throws(WireError) {
        let text = Substring(text)
        let name: Substring
        let value: Substring?
        if let colon = text.firstIndex(of: ":") {
            name = text[..<colon]
            value = text[text.index(after: colon)...]
        } else {
            name = text
            value = nil
        }
        guard !name.isEmpty else { throw .malformed("SDP attribute \"\(text)\" has no name") }
        func required() throws(WireError) -> Substring {
            guard let value else { throw .malformed("SDP attribute \(name) needs a value") }
            return value
        }
        func words(_ value: Substring) -> [Substring] {
            value.split(separator: " ", omittingEmptySubsequences: true)
        }
        func flag(_ attribute: SDPAttribute) throws(WireError) -> SDPAttribute {
            guard value == nil else { throw .malformed("SDP attribute \(name) takes no value") }
            return attribute
        }
        switch name {
        case "mid":
            let value = try required()
            guard !value.isEmpty else { throw .malformed("SDP mid is empty") }
            self = .mid(String(value))
        case "group":
            let parts = words(try required())
            guard let semantics = parts.first else { throw .malformed("SDP group has no semantics") }
            self = .group(semantics: String(semantics), identificationTags: parts.dropFirst().map(String.init))
        case "msid":
            let parts = words(try required())
            guard (1...2).contains(parts.count) else { throw .malformed("SDP msid \"\(value ?? "")\" needs 1 or 2 fields") }
            self = .msid(streamID: String(parts[0]), trackID: parts.count > 1 ? String(parts[1]) : nil)
        case "ssrc":
            let value = try required()
            let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, let id = UInt32(parts[0]) else {
                throw .malformed("SDP ssrc \"\(value)\" is not <ssrc> <attribute>")
            }
            if let colon = parts[1].firstIndex(of: ":") {
                self = .ssrc(id: id, attribute: String(parts[1][..<colon]), value: String(parts[1][parts[1].index(after: colon)...]))
            } else {
                self = .ssrc(id: id, attribute: String(parts[1]), value: nil)
            }
        case "ssrc-group":
            let parts = words(try required())
            guard let semantics = parts.first else { throw .malformed("SDP ssrc-group has no semantics") }
            var ssrcs: [UInt32] = []
            for part in parts.dropFirst() {
                guard let ssrc = UInt32(part) else { throw .malformed("SDP ssrc-group has a bad SSRC \"\(part)\"") }
                ssrcs.append(ssrc)
            }
            self = .ssrcGroup(semantics: String(semantics), ssrcs: ssrcs)
        case "rtpmap":
            self = .rtpmap(try SDPRTPMap(parsing: try required()))
        case "fmtp":
            self = .fmtp(try SDPFormatParameters(parsing: try required()))
        case "rtcp-fb":
            let value = try required()
            let parts = value.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard parts.count >= 2 else { throw .malformed("SDP rtcp-fb \"\(value)\" needs a payload type and a type") }
            var payloadType: UInt8?
            if parts[0] != "*" {
                guard let number = UInt8(parts[0]), number <= 127 else {
                    throw .malformed("SDP rtcp-fb \"\(value)\" has a bad payload type")
                }
                payloadType = number
            }
            self = .rtcpFeedback(payloadType: payloadType, type: String(parts[1]), parameter: parts.count > 2 ? String(parts[2]) : nil)
        case "rtcp-mux":
            self = try flag(.rtcpMux)
        case "extmap":
            self = .extmap(try SDPExtensionMap(parsing: try required()))
        case "ice-ufrag":
            let value = try required()
            guard !value.isEmpty, !value.contains(" ") else { throw .malformed("SDP ice-ufrag \"\(value)\" is invalid") }
            self = .iceUfrag(String(value))
        case "ice-pwd":
            let value = try required()
            guard !value.isEmpty, !value.contains(" ") else { throw .malformed("SDP ice-pwd is invalid") }
            self = .icePwd(String(value))
        case "ice-lite":
            self = try flag(.iceLite)
        case "ice-options":
            self = .iceOptions(words(try required()).map(String.init))
        case "fingerprint":
            self = .fingerprint(try SDPFingerprint(parsing: try required()))
        case "setup":
            let value = try required()
            guard let role = SDPSetupRole(rawValue: String(value)) else { throw .malformed("SDP setup \"\(value)\" is unknown") }
            self = .setup(role)
        case "candidate":
            self = .candidate(try ICECandidate(parsing: try required()))
        case "sendrecv", "sendonly", "recvonly", "inactive":
            self = try flag(.direction(SDPDirection(rawValue: String(name))!))
        case "bundle-only":
            self = try flag(.bundleOnly)
        default:
            self = .other(name: String(name), value: value.map(String.init))
        }
    }

    /// The text after `a=`.
    public var text: String {
        switch self {
        case .mid(let id): return "mid:\(id)"
        case .group(let semantics, let tags): return (["group:\(semantics)"] + tags).joined(separator: " ")
        case .msid(let stream, let track): return "msid:\(stream)" + (track.map { " \($0)" } ?? "")
        case .ssrc(let id, let attribute, let value): return "ssrc:\(id) \(attribute)" + (value.map { ":\($0)" } ?? "")
        case .ssrcGroup(let semantics, let ssrcs): return (["ssrc-group:\(semantics)"] + ssrcs.map(String.init)).joined(separator: " ")
        case .rtpmap(let map): return "rtpmap:\(map.text)"
        case .fmtp(let parameters): return "fmtp:\(parameters.text)"
        case .rtcpFeedback(let payloadType, let type, let parameter):
            return "rtcp-fb:\(payloadType.map(String.init) ?? "*") \(type)" + (parameter.map { " \($0)" } ?? "")
        case .rtcpMux: return "rtcp-mux"
        case .extmap(let map): return "extmap:\(map.text)"
        case .iceUfrag(let ufrag): return "ice-ufrag:\(ufrag)"
        case .icePwd(let pwd): return "ice-pwd:\(pwd)"
        case .iceLite: return "ice-lite"
        case .iceOptions(let options): return "ice-options:" + options.joined(separator: " ")
        case .fingerprint(let fingerprint): return "fingerprint:\(fingerprint.text)"
        case .setup(let role): return "setup:\(role.rawValue)"
        case .candidate(let candidate): return "candidate:\(candidate.attributeValue)"
        case .direction(let direction): return direction.rawValue
        case .bundleOnly: return "bundle-only"
        case .other(let name, let value): return name + (value.map { ":\($0)" } ?? "")
        }
    }
}
