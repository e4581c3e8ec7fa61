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
        let header = try RTCPFeedbackHeader.read(from: &body, name: "PLI", entrySize: 0)
        return RTCPPictureLossIndication(senderSSRC: header.senderSSRC, mediaSSRC: header.mediaSSRC)
    }

    func write(into buffer: inout ByteBuffer) throws(WireError) {
        try RTCPFeedbackHeader(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC).write(into: &buffer, format: Self.format, packetType: Self.packetType)
    }
}
