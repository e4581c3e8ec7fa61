/// One raw AAC frame (no ADTS header), as FLV and MP4 carry it.
public struct EncodedAACFrame: Sendable, Equatable {
    /// The raw AAC bytes of one `raw_data_block`.
    public var data: [UInt8]
    /// Presentation time in samples at `sampleRate`. The first frames of a stream may be
    /// negative: they carry the encoder's priming samples.
    public var pts: Int64
    /// Samples per channel the frame decodes to (1024 for AAC-LC).
    public var duration: Int
    /// Samples per second per channel.
    public var sampleRate: Int

    public init(data: [UInt8], pts: Int64, duration: Int = 1024, sampleRate: Int) {
        self.data = data
        self.pts = pts
        self.duration = duration
        self.sampleRate = sampleRate
    }

    /// `pts` in milliseconds, rounded down.
    public var ptsMilliseconds: Int64 {
        let scaled = pts * 1000
        return scaled >= 0 ? scaled / Int64(sampleRate) : -((-scaled + Int64(sampleRate) - 1) / Int64(sampleRate))
    }
}
