/// `a=rtpmap:<payload type> <encoding name>/<clock rate>[/<channels>]` (RFC 8866 §6.6).
public struct SDPRTPMap: Hashable, Sendable {
    /// The dynamic or static payload type.
    public var payloadType: UInt8
    /// The encoding name as written, e.g. `opus`, `VP8`, `H264`, `rtx`.
    public var encodingName: String
    /// The RTP clock rate.
    public var clockRate: UInt32
    /// The channel count (audio), if given.
    public var channels: UInt16?

    /// Creates an rtpmap.
    public init(payloadType: UInt8, encodingName: String, clockRate: UInt32, channels: UInt16? = nil) {
        self.payloadType = payloadType
        self.encodingName = encodingName
        self.clockRate = clockRate
        self.channels = channels
    }

    init(parsing value: Substring) throws(WireError) {
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, let payloadType = UInt8(parts[0]), payloadType <= 127 else {
            throw .malformed("SDP rtpmap \"\(value)\" has no valid payload type")
        }
        let encoding = parts[1].split(separator: "/", omittingEmptySubsequences: false)
        guard (2...3).contains(encoding.count), !encoding[0].isEmpty, let clockRate = UInt32(encoding[1]) else {
            throw .malformed("SDP rtpmap \"\(value)\" is not <name>/<rate>[/<channels>]")
        }
        var channels: UInt16?
        if encoding.count == 3 {
            guard let count = UInt16(encoding[2]) else { throw .malformed("SDP rtpmap \"\(value)\" has a bad channel count") }
            channels = count
        }
        self.init(payloadType: payloadType, encodingName: String(encoding[0]), clockRate: clockRate, channels: channels)
    }

    var text: String {
        var text = "\(payloadType) \(encodingName)/\(clockRate)"
        if let channels { text += "/\(channels)" }
        return text
    }
}
