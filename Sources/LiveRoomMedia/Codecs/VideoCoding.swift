import LiveRoomWire

/// A video encoder: I420 frames in, compressed frames out. Not thread-safe; use from one
/// isolation domain.
public protocol VideoEncoding: AnyObject {
    var codec: VideoCodec { get }
    /// Encodes one frame; `forceKeyframe` asks for a key frame (e.g. after a PLI).
    /// May return no frame or several.
    func encode(_ frame: VideoFrame, forceKeyframe: Bool) throws -> [EncodedVideoFrame]
}

/// A video decoder: compressed frames in, I420 frames out. Not thread-safe.
public protocol VideoDecoding: AnyObject {
    var codec: VideoCodec { get }
    /// Decodes one compressed frame; returns the pictures it completes (usually one).
    func decode(_ frame: EncodedVideoFrame) throws -> [VideoFrame]
}
