import NIOCore

/// A Picture Loss Indication, PSFB (PT 206) FMT 1 (RFC 4585 §6.3.1).
public struct RTCPPictureLossIndication: Hashable, Sendable {
    /// The sender of the feedback.
    public var senderSSRC: UInt32
    /// The video source that should send a keyframe.
    public var mediaSSRC: UInt32

    /// Creates a PLI.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
    }

    static let packetType: UInt8 = 206
    static let format: UInt8 = 1

    static func parse(body: ByteBuffer) throws(WireError) -> RTCPPictureLossIndication {
        var body = body
        let sender = try body.readWireInteger(as: UInt32.self, "RTCP PLI sender SSRC")
        let media = try body.readWireInteger(as: UInt32.self, "RTCP PLI media SSRC")
        guard body.readableBytes == 0 else { throw .malformed("RTCP PLI carries \(body.readableBytes) bytes of FCI, expected none") }
        return RTCPPictureLossIndication(senderSSRC: sender, mediaSSRC: media)
    }

    func write(into buffer: inout ByteBuffer) throws(WireError) {
        try RTCPPacket.writeHeader(into: &buffer, count: Self.format, packetType: Self.packetType) { buffer in
            buffer.writeInteger(senderSSRC)
            buffer.writeInteger(mediaSSRC)
        }
    }
}
