import NIOCore

/// The part every RTCP feedback message shares (RFC 4585 §6.1): after the common header, the
/// SSRC of the packet's sender and of the media source it is about, then the feedback
/// control information (FCI). NACK, PLI, FIR and REMB read and write it here.
struct RTCPFeedbackHeader {
    var senderSSRC: UInt32
    var mediaSSRC: UInt32

    /// Reads the two SSRCs of `name` (e.g. "NACK") and checks that the FCI that follows is
    /// whole entries of `entrySize` bytes; 0 means the message carries no FCI, nil that any
    /// length is allowed (the message checks it itself).
    static func read(from body: inout ByteBuffer, name: String, entrySize: Int?) throws(WireError) -> RTCPFeedbackHeader {
        let sender = try body.readWireInteger(as: UInt32.self, "RTCP \(name) sender SSRC")
        let media = try body.readWireInteger(as: UInt32.self, "RTCP \(name) media SSRC")
        switch entrySize {
        case 0?:
            guard body.readableBytes == 0 else { throw .malformed("RTCP \(name) carries \(body.readableBytes) bytes of FCI, expected none") }
        case let size?:
            guard body.readableBytes % size == 0 else { throw .malformed("RTCP \(name) FCI is not a multiple of \(size) bytes") }
        case nil:
            break
        }
        return RTCPFeedbackHeader(senderSSRC: sender, mediaSSRC: media)
    }

    /// Writes a whole feedback message: the common header with `format` and `packetType`,
    /// the two SSRCs, then what `fci` writes.
    func write(
        into buffer: inout ByteBuffer, format: UInt8, packetType: UInt8, fci: (inout ByteBuffer) -> Void = { _ in }
    ) throws(WireError) {
        try RTCPPacket.writeHeader(into: &buffer, count: format, packetType: packetType) { buffer in
            buffer.writeInteger(senderSSRC)
            buffer.writeInteger(mediaSSRC)
            fci(&buffer)
        }
    }
}
