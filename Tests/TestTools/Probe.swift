import Foundation

/// What `ffprobe -of json` prints: the streams and, with `-show_format`, the container.
public struct Probe: Decodable, Sendable {
    public var streams: [ProbedStream]
    public var format: Format?

    /// The container, from `-show_format`.
    public struct Format: Decodable, Sendable {
        public var duration: String?
    }

    /// Decodes ffprobe's standard output.
    public init(json: Data) throws {
        self = try JSONDecoder().decode(Probe.self, from: json)
    }
}

/// One stream as ffprobe describes it; what ffprobe did not print is nil.
public struct ProbedStream: Decodable, Sendable, Equatable {
    public var codec: String
    /// "video" or "audio".
    public var type: String?
    public var width: Int?
    public var height: Int?
    public var sampleRate: String?
    public var channels: Int?
    /// The frames ffprobe decoded (`-count_frames`); 0 when it did not count.
    public var frames: Int
    /// The frame rate as a fraction, such as "15/1".
    public var frameRate: String?

    enum CodingKeys: String, CodingKey {
        case codec = "codec_name", type = "codec_type", width, height, sampleRate = "sample_rate", channels
        case frames = "nb_read_frames", frameRate = "r_frame_rate"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        codec = try container.decodeIfPresent(String.self, forKey: .codec) ?? ""
        type = try container.decodeIfPresent(String.self, forKey: .type)
        width = try container.decodeIfPresent(Int.self, forKey: .width)
        height = try container.decodeIfPresent(Int.self, forKey: .height)
        sampleRate = try container.decodeIfPresent(String.self, forKey: .sampleRate)
        channels = try container.decodeIfPresent(Int.self, forKey: .channels)
        frames = try Int(container.decodeIfPresent(String.self, forKey: .frames) ?? "") ?? 0
        frameRate = try container.decodeIfPresent(String.self, forKey: .frameRate)
    }
}
