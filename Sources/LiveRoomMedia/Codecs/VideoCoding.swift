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
    /// Decodes one compressed frame; the last picture it completes replaces `picture`, in
    /// the same storage when the size has not changed. Returns false when it completes none.
    func decode(_ frame: EncodedVideoFrame, into picture: inout VideoFrame?) throws -> Bool
}

extension VideoDecoding {
    public func decode(_ frame: EncodedVideoFrame, into picture: inout VideoFrame?) throws -> Bool {
        guard let last = try decode(frame).last else { return false }
        picture = last
        return true
    }
}
