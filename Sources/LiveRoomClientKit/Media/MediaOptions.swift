import LiveRoomMedia
import LiveRoomWire

/// What a `liveroom join` publishes: a synthetic picture with a tone, or a media file.
public enum PublishSource: Sendable, Hashable {
    /// A moving test card labelled with the user id, and a tone (``MediaOptions/toneFrequency``, 440 Hz by default).
    case testCard
    /// A solid colour (`0xRRGGBB`) and a tone.
    case color(UInt32)
    /// A media file, looped.
    case file(path: String)
    /// Black and white blocks showing the frame's number (``FrameCodeSource``), and a tone.
    case frameCode

    /// Parses `testsrc`, `color:RRGGBB`, `framecode` or `file:PATH`.
    public init(parsing text: String) throws(MediaOptionError) {
        if text == "testsrc" {
            self = .testCard
        } else if text == "framecode" {
            self = .frameCode
        } else if text.hasPrefix("color:") {
            var hex = text.dropFirst(6)
            if hex.hasPrefix("#") { hex = hex.dropFirst() }
            guard hex.count == 6, hex.allSatisfy(\.isHexDigit), let rgb = UInt32(hex, radix: 16) else {
                throw MediaOptionError("--publish color: needs six hex digits (color:RRGGBB), not \"\(text)\"")
            }
            self = .color(rgb)
        } else if text.hasPrefix("file:") {
            let path = String(text.dropFirst(5))
            guard !path.isEmpty else { throw MediaOptionError("--publish file: needs a path (file:PATH)") }
            self = .file(path: path)
        } else {
            throw MediaOptionError("--publish must be testsrc, color:RRGGBB, framecode or file:PATH, not \"\(text)\"")
        }
    }
}

/// A bad media option value, with a message for the user.
public struct MediaOptionError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Which of the server's candidates the client may use (`--ice-transport`): UDP only, ICE-TCP
/// only (RFC 6544, for networks that drop UDP), or any, with UDP preferred.
public enum ICETransportPolicy: String, Sendable, Hashable, CaseIterable {
    case udp
    case tcp
    case any

    func allows(_ transport: TransportProtocol) -> Bool {
        switch self {
        case .any: true
        case .udp: transport == .udp
        case .tcp: transport == .tcp
        }
    }
}

/// How `liveroom join` publishes and records media.
public struct MediaOptions: Sendable, Hashable {
    /// What to publish when (or once) the user is an anchor; nil publishes nothing.
    public var publish: PublishSource?
    public var videoCodec: VideoCodec
    public var width: Int
    public var height: Int
    public var fps: Int
    /// Video target bitrate in kbit/s.
    public var bitrateKbps: Int
    /// Opus bitrate in kbit/s.
    public var audioBitrateKbps: Int
    /// Frequency in Hz of the tone published with a synthetic picture (`--tone-hz`), within ``toneFrequencyRange``.
    public var toneFrequency: Int
    /// Directory for `<userId>.mkv` recordings of remote users; nil records nothing.
    public var recordDirectory: String?
    /// Which of the server's candidates media may use.
    public var iceTransport: ICETransportPolicy
    /// The payload type our SEI messages go with (TRTC's `setSEIPayloadType`): 242, 5 or 100–254 but 244.
    public var seiPayloadType: Int
    /// Decode received video and add the frame code (``FrameCodeSource``) of the frame each
    /// SEI message came on to `onRecvSEIMsg`; our own sends print `onSEIMsgSent` with theirs.
    public var frameCodes = false

    public init(
        publish: PublishSource? = nil, videoCodec: VideoCodec = .vp8, width: Int = 540, height: Int = 960, fps: Int = 15,
        bitrateKbps: Int = 1300, audioBitrateKbps: Int = 48, toneFrequency: Int = 440, recordDirectory: String? = nil,
        iceTransport: ICETransportPolicy = .any, seiPayloadType: Int = SEIMessage.defaultPayloadType
    ) {
        self.iceTransport = iceTransport
        self.seiPayloadType = seiPayloadType
        self.publish = publish
        self.videoCodec = videoCodec
        self.width = width
        self.height = height
        self.fps = fps
        self.bitrateKbps = bitrateKbps
        self.audioBitrateKbps = audioBitrateKbps
        self.toneFrequency = toneFrequency
        self.recordDirectory = recordDirectory
    }

    /// Parses `vp8` or `h264` (any case).
    public static func parseVideoCodec(_ text: String) throws(MediaOptionError) -> VideoCodec {
        switch text.lowercased() {
        case "vp8": return .vp8
        case "h264", "h.264": return .h264
        default: throw MediaOptionError("--video-codec must be vp8 or h264, not \"\(text)\"")
        }
    }

    /// Parses `WxH` with even sides between 16 and 4096.
    public static func parseResolution(_ text: String) throws(MediaOptionError) -> (width: Int, height: Int) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]) else {
            throw MediaOptionError("--resolution must be WIDTHxHEIGHT, e.g. 540x960, not \"\(text)\"")
        }
        guard (16...4096).contains(width), (16...4096).contains(height), width % 2 == 0, height % 2 == 0 else {
            throw MediaOptionError("--resolution sides must be even and between 16 and 4096, not \(width)x\(height)")
        }
        return (width, height)
    }

    /// The tone frequencies `--tone-hz` accepts: well inside Opus's 20 kHz band at 48 kHz.
    public static let toneFrequencyRange = 50...8_000

    /// Checks frame rate, bitrate, tone frequency and the SEI payload type.
    public func validate() throws(MediaOptionError) {
        guard SEIMessage.isAllowedPayloadType(seiPayloadType) else {
            throw MediaOptionError("--sei-payload-type must be 5 or 100-254 except 244 (242 by default), not \(seiPayloadType)")
        }
        guard (1...60).contains(fps) else { throw MediaOptionError("--fps must be between 1 and 60, not \(fps)") }
        guard (16...20_000).contains(bitrateKbps) else {
            throw MediaOptionError("--bitrate must be between 16 and 20000 kbit/s, not \(bitrateKbps)")
        }
        guard Self.toneFrequencyRange.contains(toneFrequency) else {
            throw MediaOptionError("--tone-hz must be between 50 and 8000 Hz, not \(toneFrequency)")
        }
    }
}
