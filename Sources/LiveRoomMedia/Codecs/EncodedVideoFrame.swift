import LiveRoomWire

/// One compressed video frame: a VP8 frame, or an H.264 access unit in Annex B form.
public struct EncodedVideoFrame: Sendable, Equatable {
    /// The codec of `data`.
    public var codec: VideoCodec
    /// The bitstream bytes.
    public var data: [UInt8]
    /// Whether a decoder can start here (VP8 key frame, H.264 IDR with SPS/PPS).
    public var isKeyframe: Bool
    /// Presentation time in 90 kHz units.
    public var pts: Int64

    public init(codec: VideoCodec, data: [UInt8], isKeyframe: Bool, pts: Int64) {
        self.codec = codec
        self.data = data
        self.isKeyframe = isKeyframe
        self.pts = pts
    }
}
