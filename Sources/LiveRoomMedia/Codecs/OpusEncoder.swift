import COpus

/// A libopus encoder for 20 ms frames of interleaved Int16, with in-band FEC on.
///
/// Uses the VoIP application mode; `pts` passes through unchanged.
public final class OpusEncoder {
    /// Samples per second per channel.
    public let sampleRate: Int
    /// Number of interleaved channels.
    public let channels: Int
    /// Target bitrate in kbit/s.
    public let bitrateKbps: Int
    /// Samples per channel in each frame: 20 ms.
    public var frameSize: Int { sampleRate / 50 }
    /// Samples the decoder output lags the input by at 48 kHz (libopus's lookahead of
    /// 6.5 ms in VoIP/audio mode); the value for an OpusHead pre-skip.
    public static let preSkip = 312

    private let encoder: OpaquePointer

    /// - Parameter expectedPacketLoss: percentage the FEC data is sized for.
    public init(sampleRate: Int = 48_000, channels: Int = 2, bitrateKbps: Int = 64, expectedPacketLoss: Int = 10) throws {
        guard [8_000, 12_000, 16_000, 24_000, 48_000].contains(sampleRate), channels == 1 || channels == 2, bitrateKbps > 0 else {
            throw MediaFormatError("Opus needs 8/12/16/24/48 kHz and 1-2 channels, got \(sampleRate) Hz x \(channels)")
        }
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrateKbps = bitrateKbps
        var error: Int32 = 0
        guard let encoder = opus_encoder_create(Int32(sampleRate), Int32(channels), OPUS_APPLICATION_VOIP, &error), error == OPUS_OK else {
            throw CodecError.opus(error, "opus_encoder_create")
        }
        self.encoder = encoder
        for (status, call) in [
            (liveroom_opus_set_bitrate(encoder, Int32(bitrateKbps * 1000)), "OPUS_SET_BITRATE"),
            (liveroom_opus_set_inband_fec(encoder, 1), "OPUS_SET_INBAND_FEC"),
            (liveroom_opus_set_packet_loss_perc(encoder, Int32(expectedPacketLoss)), "OPUS_SET_PACKET_LOSS_PERC"),
        ] where status != OPUS_OK {
            opus_encoder_destroy(encoder)
            throw CodecError.opus(status, call)
        }
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Encodes exactly one 20 ms frame into one Opus packet.
    public func encode(_ frame: AudioFrame) throws -> EncodedAudioFrame {
        guard frame.sampleRate == sampleRate, frame.channels == channels, frame.samplesPerChannel == frameSize else {
            throw MediaFormatError(
                "Opus encoder wants \(frameSize) samples x \(channels) at \(sampleRate) Hz, got \(frame.samplesPerChannel) x \(frame.channels) at \(frame.sampleRate) Hz")
        }
        var packet = [UInt8](repeating: 0, count: 1500)
        let length = opus_encode(encoder, frame.samples, Int32(frameSize), &packet, Int32(packet.count))
        guard length > 0 else { throw CodecError.opus(length, "opus_encode") }
        packet.removeSubrange(Int(length)...)
        return EncodedAudioFrame(data: packet, pts: frame.pts, duration: frameSize * 48_000 / sampleRate)
    }
}
