import COpus

/// A libopus decoder to interleaved Int16, with loss concealment and FEC recovery.
public final class OpusDecoder {
    /// Samples per second per channel.
    public let sampleRate: Int
    /// Number of interleaved channels.
    public let channels: Int
    private let decoder: OpaquePointer
    /// Where packets are decoded before the samples are copied out.
    private var scratch: [Int16] = []
    /// Longest Opus packet: 120 ms.
    private var maxFrameSize: Int { sampleRate * 120 / 1000 }

    public init(sampleRate: Int = 48_000, channels: Int = 2) throws {
        guard [8_000, 12_000, 16_000, 24_000, 48_000].contains(sampleRate), channels == 1 || channels == 2 else {
            throw MediaFormatError("Opus needs 8/12/16/24/48 kHz and 1-2 channels, got \(sampleRate) Hz x \(channels)")
        }
        self.sampleRate = sampleRate
        self.channels = channels
        var error: Int32 = 0
        guard let decoder = opus_decoder_create(Int32(sampleRate), Int32(channels), &error), error == OPUS_OK else {
            throw CodecError.opus(error, "opus_decoder_create")
        }
        self.decoder = decoder
    }

    deinit { opus_decoder_destroy(decoder) }

    /// Decodes one packet; the frame's `pts` is the packet's, rescaled to `sampleRate`.
    public func decode(_ packet: EncodedAudioFrame) throws -> AudioFrame {
        try decode(packet.data, pts: packet.pts * Int64(sampleRate) / 48_000)
    }

    /// Decodes one packet of Opus data.
    public func decode(_ data: [UInt8], pts: Int64) throws -> AudioFrame {
        guard !data.isEmpty else { throw MediaFormatError("empty Opus packet") }
        return try run(data, samples: maxFrameSize, fec: false, pts: pts)
    }

    /// Fills in a lost packet of `samples` per channel: from the FEC data in the packet
    /// after the gap when there is one, otherwise by packet loss concealment.
    public func concealLoss(samples: Int = 960, fecFrom nextPacket: [UInt8]? = nil, pts: Int64) throws -> AudioFrame {
        guard samples > 0, samples <= maxFrameSize, samples % (sampleRate / 400) == 0 else {
            throw MediaFormatError("concealment length \(samples) is not a multiple of 2.5 ms up to 120 ms")
        }
        return try run(nextPacket, samples: samples, fec: nextPacket != nil, pts: pts)
    }

    private func run(_ data: [UInt8]?, samples: Int, fec: Bool, pts: Int64) throws -> AudioFrame {
        // Room for the longest packet, kept between calls: a 20 ms packet fills a sixth of it.
        if scratch.count < samples * channels { scratch = [Int16](repeating: 0, count: samples * channels) }
        let decoded = scratch.withUnsafeMutableBufferPointer { out in
            if let data {
                return opus_decode(decoder, data, Int32(data.count), out.baseAddress!, Int32(samples), fec ? 1 : 0)
            }
            return opus_decode(decoder, nil, 0, out.baseAddress!, Int32(samples), 0)
        }
        guard decoded > 0 else { throw CodecError.opus(decoded, fec ? "opus_decode(fec)" : "opus_decode") }
        let pcm = Array(scratch[..<(Int(decoded) * channels)])
        return AudioFrame(validSamples: pcm, sampleRate: sampleRate, channels: channels, pts: pts)
    }
}
