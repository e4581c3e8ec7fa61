/// One compressed audio packet (an Opus packet).
public struct EncodedAudioFrame: Sendable, Equatable {
    /// The compressed bytes.
    public var data: [UInt8]
    /// Presentation time in samples at 48 kHz (the RTP Opus clock).
    public var pts: Int64
    /// Samples per channel the packet decodes to (960 for 20 ms).
    public var duration: Int

    public init(data: [UInt8], pts: Int64, duration: Int) {
        self.data = data
        self.pts = pts
        self.duration = duration
    }
}
