import LiveRoomWire
import NIOCore

/// A publisher's RTP packet on its way through the SFU: the whole packet (decrypted) and its
/// parse, made once where the packet arrives and handed on as it is to the history, the
/// mirrors on other loops, the taps and every subscriber's copy. The payload is a view of
/// `bytes`, not a copy.
public struct ForwardedPacket: Sendable {
    /// The whole packet.
    public let bytes: ByteBuffer
    /// Its header and payload.
    public let parsed: RTPPacket

    /// Parses `bytes` (the readable bytes, one RTP packet); nil when they are not one.
    public init?(_ bytes: ByteBuffer) {
        guard let parsed = try? RTPPacket.parse(bytes) else { return nil }
        self.bytes = bytes
        self.parsed = parsed
    }

    /// ``init(_:)-(ByteBuffer)`` from an array (a packet made inside the server, or from another node).
    public init?(_ bytes: [UInt8]) {
        self.init(ByteBuffer(bytes: bytes))
    }

    public var header: RTPHeader { parsed.header }
}
