import LiveRoomProtocol

/// The output encoding of a task (TRTC's `TRTCStreamEncoderParam`; the admin API's
/// `VideoEncode` and `AudioEncode`). A 0×0 video size means audio-only output.
public struct StreamEncoderParam: Sendable, Hashable, Codable {
    public static let supportedSampleRates = [48000, 44100, 32000, 24000, 16000, 8000]
    public static let sizeRange = 16...1920
    public static let maxPixels = 1920 * 1080
    public static let fpsRange = 1...60
    public static let gopRange = 1...8
    public static let videoKbpsRange = 0...10000
    public static let audioKbpsRange = 8...500

    public var videoEncodedWidth: Int
    public var videoEncodedHeight: Int
    public var videoEncodedFPS: Int
    /// The keyframe interval in seconds.
    public var videoEncodedGOP: Int
    /// The video bitrate in kbps; 0 picks ``estimatedVideoKbps``.
    public var videoEncodedKbps: Int
    public var audioEncodedSampleRate: Int
    public var audioEncodedChannelNum: Int
    public var audioEncodedKbps: Int
    /// 0 LC-AAC (the only one LiveRoom encodes), 1 HE-AAC, 2 HE-AACv2.
    public var audioEncodedCodecType: Int
    /// 0 H.264 (the only one LiveRoom encodes), 1 H.265.
    public var videoEncodedCodecType: Int

    /// TRTC's defaults: audio-only, 20 fps, GOP 3 s, automatic video bitrate, 48 kHz mono 50 kbps LC-AAC.
    public init(
        videoEncodedWidth: Int = 0, videoEncodedHeight: Int = 0, videoEncodedFPS: Int = 20, videoEncodedGOP: Int = 3,
        videoEncodedKbps: Int = 0, audioEncodedSampleRate: Int = 48000, audioEncodedChannelNum: Int = 1,
        audioEncodedKbps: Int = 50, audioEncodedCodecType: Int = 0, videoEncodedCodecType: Int = 0
    ) {
        self.videoEncodedWidth = videoEncodedWidth
        self.videoEncodedHeight = videoEncodedHeight
        self.videoEncodedFPS = videoEncodedFPS
        self.videoEncodedGOP = videoEncodedGOP
        self.videoEncodedKbps = videoEncodedKbps
        self.audioEncodedSampleRate = audioEncodedSampleRate
        self.audioEncodedChannelNum = audioEncodedChannelNum
        self.audioEncodedKbps = audioEncodedKbps
        self.audioEncodedCodecType = audioEncodedCodecType
        self.videoEncodedCodecType = videoEncodedCodecType
    }

    /// Whether the output carries video (a non-zero size).
    public var hasVideo: Bool { videoEncodedWidth != 0 || videoEncodedHeight != 0 }

    /// The canvas size.
    public var canvas: MixSize { MixSize(width: videoEncodedWidth, height: videoEncodedHeight) }

    /// The video bitrate to encode at: the configured one, or about 0.15 bit per pixel when 0.
    public var effectiveVideoKbps: Int { videoEncodedKbps > 0 ? videoEncodedKbps : estimatedVideoKbps }

    /// About 0.15 bit per pixel (540×960 at 15 fps → 1166 kbps), at least 100 kbps.
    public var estimatedVideoKbps: Int {
        max(100, videoEncodedWidth * videoEncodedHeight * videoEncodedFPS * 15 / 100_000)
    }

    /// Checks every field; `field` prefixes the names in messages.
    public func validate(field: String = "encoderParam") throws(LiveRoomError) {
        if hasVideo {
            for (name, value) in [("videoEncodedWidth", videoEncodedWidth), ("videoEncodedHeight", videoEncodedHeight)] {
                guard Self.sizeRange.contains(value), value % 2 == 0 else {
                    throw LiveRoomError(
                        ErrorCode.invalidVideoResolution,
                        "\(field).\(name) is \(value); it must be an even number from \(Self.sizeRange.lowerBound) to \(Self.sizeRange.upperBound) (or both sizes 0 for audio-only)")
                }
            }
            guard videoEncodedWidth * videoEncodedHeight <= Self.maxPixels else {
                throw LiveRoomError(
                    ErrorCode.invalidVideoResolution,
                    "\(field) size \(videoEncodedWidth)x\(videoEncodedHeight) has more pixels than 1920x1080")
            }
            guard Self.fpsRange.contains(videoEncodedFPS) else {
                throw LiveRoomError(ErrorCode.invalidVideoEncoding, "\(field).videoEncodedFPS is \(videoEncodedFPS); it must be 1 to 60")
            }
            guard Self.gopRange.contains(videoEncodedGOP) else {
                throw LiveRoomError(ErrorCode.invalidVideoEncoding, "\(field).videoEncodedGOP is \(videoEncodedGOP) s; it must be 1 to 8 seconds")
            }
            guard Self.videoKbpsRange.contains(videoEncodedKbps) else {
                throw LiveRoomError(
                    ErrorCode.invalidVideoEncoding, "\(field).videoEncodedKbps is \(videoEncodedKbps); it must be 0 (automatic) to 10000")
            }
            guard videoEncodedCodecType == 0 else {
                throw LiveRoomError(
                    ErrorCode.unsupportedCodec, "\(field).videoEncodedCodecType \(videoEncodedCodecType) is not supported; only 0 (H.264) is")
            }
        }
        guard Self.supportedSampleRates.contains(audioEncodedSampleRate) else {
            throw LiveRoomError(
                ErrorCode.invalidAudioEncoding,
                "\(field).audioEncodedSampleRate is \(audioEncodedSampleRate); it must be one of \(Self.supportedSampleRates.map(String.init).joined(separator: ", "))")
        }
        guard audioEncodedChannelNum == 1 || audioEncodedChannelNum == 2 else {
            throw LiveRoomError(ErrorCode.invalidAudioEncoding, "\(field).audioEncodedChannelNum is \(audioEncodedChannelNum); it must be 1 or 2")
        }
        guard Self.audioKbpsRange.contains(audioEncodedKbps) else {
            throw LiveRoomError(ErrorCode.invalidAudioEncoding, "\(field).audioEncodedKbps is \(audioEncodedKbps); it must be 8 to 500")
        }
        guard audioEncodedCodecType == 0 else {
            throw LiveRoomError(
                ErrorCode.unsupportedCodec,
                "\(field).audioEncodedCodecType \(audioEncodedCodecType) is not supported; only 0 (LC-AAC) is")
        }
    }
}
