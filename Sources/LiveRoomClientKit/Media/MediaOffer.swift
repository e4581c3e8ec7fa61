import Foundation
import LiveRoomMedia
import LiveRoomTransport
import LiveRoomWire

/// The m-sections `liveroom join` offers: sendonly Opus and VP8 or H.264 to publish,
/// recvonly Opus and both video codecs to subscribe. Payload types follow Chrome's:
/// Opus 111, VP8 96, H.264 102.
public enum MediaOffer {
    public static let opusPayloadType: UInt8 = 111
    public static let vp8PayloadType: UInt8 = 96
    public static let h264PayloadType: UInt8 = 102

    /// The publishing sections: audio then video, each with its SSRC.
    public static func publishSections(videoCodec: VideoCodec, audioSSRC: UInt32, videoSSRC: UInt32) -> [SDPNegotiation.OfferedSection] {
        let video: (codec: RTPCodec, payloadType: UInt8) = videoCodec == .vp8 ? (.vp8, vp8PayloadType) : (.h264, h264PayloadType)
        return [
            .init(kind: .audio, direction: .sendonly, codecs: [(.opus, opusPayloadType)], localSSRC: audioSSRC),
            .init(kind: .video, direction: .sendonly, codecs: [video], localSSRC: videoSSRC, seiExtensionID: SEIHeaderExtension.defaultID),
        ]
    }

    /// The subscribing sections: audio then video, receive only.
    public static func subscribeSections() -> [SDPNegotiation.OfferedSection] {
        [
            .init(kind: .audio, direction: .recvonly, codecs: [(.opus, opusPayloadType)]),
            .init(kind: .video, direction: .recvonly, codecs: [(.vp8, vp8PayloadType), (.h264, h264PayloadType)], seiExtensionID: SEIHeaderExtension.defaultID),
        ]
    }

    /// Our side of a new peer connection: fresh ICE credentials, DTLS active.
    public static func localDescription(credentials: ICECredentials, certificate: DTLSFingerprintSource) -> TransportDescription {
        TransportDescription(iceUfrag: credentials.ufrag, icePwd: credentials.pwd, fingerprint: certificate.sdpFingerprint, setup: .active)
    }

    /// The server's candidates this client can use under `policy` (IPv4, as its media sockets
    /// are; UDP and passive ICE-TCP), highest priority first, which puts UDP first.
    public static func serverAddresses(of remote: TransportDescription, policy: ICETransportPolicy = .any) throws(NegotiationError) -> [TransportAddress] {
        guard !remote.candidates.isEmpty else { throw NegotiationError("the answer has no ICE candidate") }
        let addresses = remote.candidates
            .sorted { $0.priority > $1.priority }
            .compactMap { candidate -> TransportAddress? in
                let transport: TransportProtocol
                switch candidate.transport.lowercased() {
                case "udp": transport = .udp
                // We connect actively, so only the server's passive candidates serve.
                case "tcp" where candidate[extension: "tcptype"]?.lowercased() == "passive": transport = .tcp
                default: return nil
                }
                guard policy.allows(transport), let address = IPAddress(candidate.address), case .v4 = address else { return nil }
                return TransportAddress(address: address, port: candidate.port, transport: transport)
            }
        guard !addresses.isEmpty else {
            throw NegotiationError(
                "the answer has no IPv4 candidate for --ice-transport \(policy.rawValue): "
                    + remote.candidates.map { "\($0.address) \($0.transport)" }.joined(separator: ", "))
        }
        return addresses
    }

    /// Whether this machine has a route to an IPv4 address: a UDP socket connected to it (the
    /// kernel looks up the route; nothing is sent).
    public static func hasRoute(to address: TransportAddress) -> Bool {
        guard case .v4(let value) = address.address else { return false }
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = address.port.bigEndian
        target.sin_addr.s_addr = value.bigEndian
        return withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// The video codec of a negotiated track.
    public static func videoCodec(of track: NegotiatedTrack) -> VideoCodec? {
        switch track.codec.name.uppercased() {
        case "VP8": .vp8
        case "H264": .h264
        default: nil
        }
    }
}

/// Something with a DTLS certificate fingerprint to put in SDP.
public protocol DTLSFingerprintSource {
    var sdpFingerprint: SDPFingerprint { get }
}
