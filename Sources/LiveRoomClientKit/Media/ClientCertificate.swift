import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire

/// The client process's DTLS certificate, made once and used for every peer connection.
public struct ClientCertificate: Sendable, DTLSFingerprintSource {
    public let certificate: DTLSCertificate

    public init() throws {
        certificate = try DTLSCertificate(commonName: "liveroom")
    }

    public var sdpFingerprint: SDPFingerprint { PeerTransport.sdpFingerprint(of: certificate) }
}
