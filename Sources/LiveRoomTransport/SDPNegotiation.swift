import LiveRoomWire

/// Audio or video.
public enum MediaKind: String, Sendable, Hashable, Codable, CaseIterable {
    case audio
    case video
}

/// A codec this server and client speak: Opus for audio, VP8 or H.264 for video (packetization-mode
/// 1; mode 0, single NAL units only, from publishers that offer nothing else).
public struct RTPCodec: Sendable, Hashable {
    public var kind: MediaKind
    /// The rtpmap encoding name: `opus`, `VP8`, `H264`.
    public var name: String
    public var clockRate: UInt32
    public var channels: UInt16?
    /// fmtp parameters to offer or answer, if any.
    public var formatParameters: String?

    public static let opus = RTPCodec(kind: .audio, name: "opus", clockRate: 48_000, channels: 2, formatParameters: "minptime=10;useinbandfec=1")
    public static let vp8 = RTPCodec(kind: .video, name: "VP8", clockRate: 90_000)
    public static let h264 = RTPCodec(
        kind: .video, name: "H264", clockRate: 90_000, formatParameters: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f")

    /// H.264 in single NAL unit mode (RFC 6184's packetization-mode 0, also what an fmtp without
    /// the parameter means): accepted from publishers, and forwarded to subscribers as mode 1,
    /// whose receivers take single NAL units too.
    public static let h264SingleNAL = RTPCodec(
        kind: .video, name: "H264", clockRate: 90_000, formatParameters: "level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f")

    /// The codecs LiveRoom can forward, audio and video, in order of preference (nodes of a
    /// cluster name them by their place here: new ones go last).
    public static let supported: [RTPCodec] = [.opus, .vp8, .h264, .h264SingleNAL]

    /// Whether a subscriber that negotiated `codec` can receive what a publisher sends in this one.
    public func canBeReceived(as codec: RTPCodec) -> Bool {
        self == codec || (self == .h264SingleNAL && codec == .h264)
    }

    /// Whether an offered rtpmap (and its fmtp) is this codec in a form we accept.
    func matches(_ map: SDPRTPMap, formatParameters fmtp: SDPFormatParameters?) -> Bool {
        guard map.encodingName.caseInsensitiveCompare(name) == .orderedSame, map.clockRate == clockRate else { return false }
        if name == "H264" {
            // Mode 1 (FU-A / STAP-A), as DESIGN.md requires, or mode 0 (single NAL units), which
            // is mode 1's subset; not mode 2 (interleaved).
            return fmtp?["packetization-mode"] ?? "0" == (self == .h264SingleNAL ? "0" : "1")
        }
        return true
    }

    /// The rtcp-fb lines we use: NACK and PLI for video, plus FIR; none for audio.
    var feedback: [(type: String, parameter: String?)] {
        kind == .video ? [("nack", nil), ("nack", "pli"), ("ccm", "fir")] : []
    }
}

/// One negotiated m-section: what flows, in which direction, with which payload type.
public struct NegotiatedTrack: Sendable, Hashable {
    public var mid: String
    public var kind: MediaKind
    public var codec: RTPCodec
    public var payloadType: UInt8
    /// Our direction in the answer (recvonly: we receive the peer's media; sendonly: we send).
    public var direction: SDPDirection
    /// SSRCs the peer declared it sends on this m-section.
    public var remoteSSRCs: [UInt32]
    /// The SSRC we send with, for sendonly sections.
    public var localSSRC: UInt32?
    /// The id of LiveRoom's SEI header extension (``SEIHeaderExtension``) on this section, when
    /// both sides agreed to it.
    public var seiExtensionID: UInt8?
}

/// ICE and DTLS parameters of one side of a peer connection.
public struct TransportDescription: Sendable, Hashable {
    public var iceUfrag: String
    public var icePwd: String
    /// `sha-256 AB:CD:…`.
    public var fingerprint: SDPFingerprint
    public var setup: SDPSetupRole
    public var candidates: [ICECandidate]
    public var iceLite: Bool

    public init(iceUfrag: String, icePwd: String, fingerprint: SDPFingerprint, setup: SDPSetupRole, candidates: [ICECandidate] = [], iceLite: Bool = false) {
        self.iceUfrag = iceUfrag
        self.icePwd = icePwd
        self.fingerprint = fingerprint
        self.setup = setup
        self.candidates = candidates
        self.iceLite = iceLite
    }

    /// The transport parameters an offer or answer carries (BUNDLE: the first m-section's,
    /// falling back to session level).
    public init(of description: SessionDescription) throws(NegotiationError) {
        let first = description.media.first
        guard let ufrag = first?.iceUfrag ?? description.iceUfrag, let pwd = first?.icePwd ?? description.icePwd else {
            throw NegotiationError("the SDP has no ice-ufrag and ice-pwd")
        }
        guard let fingerprint = first?.fingerprint ?? description.fingerprint else {
            throw NegotiationError("the SDP has no DTLS fingerprint")
        }
        self.init(
            iceUfrag: ufrag, icePwd: pwd, fingerprint: fingerprint, setup: first?.setup ?? .actpass,
            candidates: description.media.flatMap(\.candidates), iceLite: description.isICELite)
    }
}

/// Why an offer or answer cannot be used.
public struct NegotiationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Offer/answer for LiveRoom's peer connections: BUNDLE with rtcp-mux, Opus, VP8 and
/// H.264 (packetization-mode 1, or 0 from publishers), NACK/PLI/FIR feedback.
public enum SDPNegotiation {
    /// What the answerer will do with one offered m-section.
    public struct SectionPlan: Sendable {
        /// Codec to use, chosen among the offer's; nil rejects the section.
        public var codec: RTPCodec?
        /// SSRC to send with when we send on it.
        public var localSSRC: UInt32?
        /// msid stream and track ids for what we send.
        public var msid: (stream: String, track: String)?

        public init(codec: RTPCodec?, localSSRC: UInt32? = nil, msid: (stream: String, track: String)? = nil) {
            self.codec = codec
            self.localSSRC = localSSRC
            self.msid = msid
        }
    }

    /// The offered codecs of a section that we support, in the offer's order.
    public static func supportedCodecs(in section: SDPMediaDescription) -> [(codec: RTPCodec, payloadType: UInt8)] {
        section.formats.compactMap { format -> (RTPCodec, UInt8)? in
            guard let pt = UInt8(format), let map = section.rtpMap(for: pt) else { return nil }
            let fmtp = section.formatParameters(for: pt)
            return RTPCodec.supported.first { $0.kind.rawValue == section.kind && $0.matches(map, formatParameters: fmtp) }.map { ($0, pt) }
        }
    }

    /// Answers an offer. `plan` decides each section from its kind, the peer's direction
    /// and the codecs offered; rejected sections get port 0.
    public static func answer(
        to offer: SessionDescription, local: TransportDescription, sessionID: UInt64,
        plan: (_ kind: MediaKind, _ offeredDirection: SDPDirection, _ codecs: [RTPCodec]) -> SectionPlan
    ) throws(NegotiationError) -> (answer: SessionDescription, tracks: [NegotiatedTrack]) {
        guard !offer.media.isEmpty else { throw NegotiationError("the offer has no media sections") }
        var sections: [SDPMediaDescription] = []
        var tracks: [NegotiatedTrack] = []
        var bundle: [String] = []
        for (index, offered) in offer.media.enumerated() {
            let mid = offered.mid ?? String(index)
            guard let kind = MediaKind(rawValue: offered.kind), offered.proto.hasSuffix("RTP/SAVPF") || offered.proto.hasSuffix("RTP/SAVP") else {
                // Data channels and unknown kinds are rejected, as RFC 8829 says.
                sections.append(SDPMediaDescription(kind: offered.kind, port: 0, proto: offered.proto, formats: offered.formats, attributes: [.mid(mid)]))
                continue
            }
            let offeredCodecs = supportedCodecs(in: offered)
            let decision = plan(kind, offered.direction, offeredCodecs.map(\.codec))
            guard let codec = decision.codec, let pt = offeredCodecs.first(where: { $0.codec == codec })?.payloadType,
                offered.direction != .inactive
            else {
                sections.append(SDPMediaDescription(kind: offered.kind, port: 0, proto: offered.proto, formats: offered.formats, attributes: [.mid(mid), .direction(.inactive)]))
                continue
            }
            let direction = offered.direction.reversed
            var attributes = transportAttributes(local, mid: mid)
            attributes.append(.direction(direction))
            // LiveRoom's SEI extension is echoed on video sections that offer it.
            let seiExtensionID = kind == .video ? Self.seiExtensionID(in: offered) : nil
            if let seiExtensionID { attributes.append(.extmap(SDPExtensionMap(id: UInt16(seiExtensionID), uri: SEIHeaderExtension.uri))) }
            attributes += codecAttributes(codec, payloadType: pt)
            if direction != .recvonly, let ssrc = decision.localSSRC {
                let (stream, track) = decision.msid ?? ("liveroom", "\(kind.rawValue)\(ssrc)")
                attributes.append(.msid(streamID: stream, trackID: track))
                attributes.append(.ssrc(id: ssrc, attribute: "cname", value: "liveroom"))
                attributes.append(.ssrc(id: ssrc, attribute: "msid", value: "\(stream) \(track)"))
            }
            attributes += local.candidates.map { .candidate($0) }
            if !local.candidates.isEmpty { attributes.append(.other(name: "end-of-candidates", value: nil)) }
            sections.append(SDPMediaDescription(kind: offered.kind, port: local.candidates.first?.port ?? 9, formats: [String(pt)], attributes: attributes))
            bundle.append(mid)
            tracks.append(NegotiatedTrack(
                mid: mid, kind: kind, codec: codec, payloadType: pt, direction: direction,
                remoteSSRCs: offered.ssrcs, localSSRC: direction == .recvonly ? nil : decision.localSSRC, seiExtensionID: seiExtensionID))
        }
        guard !tracks.isEmpty else { throw NegotiationError("no media section of the offer can be used (Opus, VP8 or H.264 packetization-mode=1 or 0)") }
        var session: [SDPAttribute] = [.group(semantics: "BUNDLE", identificationTags: bundle)]
        if local.iceLite { session.append(.iceLite) }
        session.append(.other(name: "msid-semantic", value: " WMS *"))
        let answer = SessionDescription(
            origin: SDPOrigin(sessionID: String(sessionID), sessionVersion: "2", address: "127.0.0.1"), attributes: session, media: sections)
        return (answer, tracks)
    }

    /// One m-section to offer.
    public struct OfferedSection: Sendable {
        public var kind: MediaKind
        /// Our direction: sendonly to publish, recvonly to subscribe.
        public var direction: SDPDirection
        /// Codecs in order of preference, with the payload types to use.
        public var codecs: [(codec: RTPCodec, payloadType: UInt8)]
        public var localSSRC: UInt32?
        /// Offer LiveRoom's SEI header extension with this id.
        public var seiExtensionID: UInt8?

        public init(
            kind: MediaKind, direction: SDPDirection, codecs: [(codec: RTPCodec, payloadType: UInt8)], localSSRC: UInt32? = nil,
            seiExtensionID: UInt8? = nil
        ) {
            self.kind = kind
            self.direction = direction
            self.codecs = codecs
            self.localSSRC = localSSRC
            self.seiExtensionID = seiExtensionID
        }
    }

    /// A client offer with BUNDLE and rtcp-mux; mids are 0, 1, ….
    public static func offer(_ sectionsToOffer: [OfferedSection], local: TransportDescription, sessionID: UInt64, streamID: String) -> SessionDescription {
        var sections: [SDPMediaDescription] = []
        for (index, offered) in sectionsToOffer.enumerated() {
            let mid = String(index)
            var attributes = transportAttributes(local, mid: mid)
            attributes.append(.direction(offered.direction))
            if let id = offered.seiExtensionID { attributes.append(.extmap(SDPExtensionMap(id: UInt16(id), uri: SEIHeaderExtension.uri))) }
            for (codec, pt) in offered.codecs { attributes += codecAttributes(codec, payloadType: pt) }
            if offered.direction != .recvonly, let ssrc = offered.localSSRC {
                let track = "\(offered.kind.rawValue)-\(ssrc)"
                attributes.append(.msid(streamID: streamID, trackID: track))
                attributes.append(.ssrc(id: ssrc, attribute: "cname", value: streamID))
                attributes.append(.ssrc(id: ssrc, attribute: "msid", value: "\(streamID) \(track)"))
            }
            sections.append(SDPMediaDescription(kind: offered.kind.rawValue, formats: offered.codecs.map { String($0.payloadType) }, attributes: attributes))
        }
        return SessionDescription(
            origin: SDPOrigin(sessionID: String(sessionID), sessionVersion: "1", address: "127.0.0.1"),
            attributes: [.group(semantics: "BUNDLE", identificationTags: sections.indices.map(String.init)), .other(name: "msid-semantic", value: " WMS *")],
            media: sections)
    }

    /// Reads the tracks of an answer to our offer.
    public static func tracks(ofAnswer answer: SessionDescription, offered: [OfferedSection]) throws(NegotiationError) -> [NegotiatedTrack] {
        var tracks: [NegotiatedTrack] = []
        for (index, section) in answer.media.enumerated() where section.port != 0 && index < offered.count {
            let mine = offered[index]
            guard let (codec, pt) = supportedCodecs(in: section).first, mine.codecs.contains(where: { $0.codec == codec }) else {
                throw NegotiationError("the answer's m-section \(index) has no codec we offered")
            }
            tracks.append(NegotiatedTrack(
                mid: section.mid ?? String(index), kind: mine.kind, codec: codec, payloadType: pt, direction: mine.direction,
                remoteSSRCs: section.ssrcs, localSSRC: mine.localSSRC, seiExtensionID: mine.seiExtensionID == nil ? nil : Self.seiExtensionID(in: section)))
        }
        guard !tracks.isEmpty else { throw NegotiationError("the answer accepts no media section") }
        return tracks
    }

    /// `description` (an answer already given) with new ICE credentials in every m-section and
    /// the next session version: what an ICE restart answers with (RFC 8839 section 4.4.1.1.1),
    /// since codecs, SSRCs and DTLS stay as they were.
    public static func restartingICE(_ description: SessionDescription, credentials: ICECredentials) -> SessionDescription {
        var restarted = description
        restarted.origin.sessionVersion = String((UInt64(description.origin.sessionVersion) ?? 1) &+ 1)
        for index in restarted.media.indices {
            restarted.media[index].attributes = restarted.media[index].attributes.map { attribute in
                switch attribute {
                case .iceUfrag: .iceUfrag(credentials.ufrag)
                case .icePwd: .icePwd(credentials.pwd)
                default: attribute
                }
            }
        }
        return restarted
    }

    /// The id a section gives LiveRoom's SEI header extension, if it names it with a usable id.
    static func seiExtensionID(in section: SDPMediaDescription) -> UInt8? {
        section.extensionMaps.first { $0.uri == SEIHeaderExtension.uri && (1...255).contains($0.id) }.map { UInt8($0.id) }
    }

    private static func transportAttributes(_ local: TransportDescription, mid: String) -> [SDPAttribute] {
        [.mid(mid), .iceUfrag(local.iceUfrag), .icePwd(local.icePwd), .fingerprint(local.fingerprint), .setup(local.setup), .rtcpMux]
    }

    private static func codecAttributes(_ codec: RTPCodec, payloadType pt: UInt8) -> [SDPAttribute] {
        var attributes: [SDPAttribute] = [.rtpmap(SDPRTPMap(payloadType: pt, encodingName: codec.name, clockRate: codec.clockRate, channels: codec.channels))]
        if let parameters = codec.formatParameters { attributes.append(.fmtp(SDPFormatParameters(payloadType: pt, parameters: parameters))) }
        for (type, parameter) in codec.feedback { attributes.append(.rtcpFeedback(payloadType: pt, type: type, parameter: parameter)) }
        return attributes
    }
}
