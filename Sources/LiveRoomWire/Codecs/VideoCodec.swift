/// The video codecs LiveRoom carries.
public enum VideoCodec: String, Sendable, CaseIterable {
    case vp8 = "VP8"
    case h264 = "H264"
}
