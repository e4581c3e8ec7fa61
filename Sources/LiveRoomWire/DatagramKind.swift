import NIOCore

/// What a datagram on the shared media port carries, by its first byte
/// (RFC 7983 §7) and, for the RTP range, its second byte (RFC 5761 §4).
public enum DatagramKind: Hashable, Sendable {
    /// STUN (first byte 0–3).
    case stun
    /// DTLS (first byte 20–63).
    case dtls
    /// RTP (first byte 128–191, payload type outside 64–95).
    case rtp
    /// RTCP (first byte 128–191, second byte 192–223).
    case rtcp
    /// Anything else, including ZRTP (16–19) and TURN channels (64–79).
    case unknown

    /// Classifies by the first byte alone; the RTP range is reported as ``rtp``.
    public init(firstByte: UInt8) {
        switch firstByte {
        case 0...3: self = .stun
        case 20...63: self = .dtls
        case 128...191: self = .rtp
        default: self = .unknown
        }
    }

    /// Classifies a datagram, telling RTCP from RTP by the packet type byte.
    /// An empty datagram, or an RTP-range datagram of one byte, is ``unknown``.
    public init(datagram: ByteBuffer) {
        guard let first = datagram.getInteger(at: datagram.readerIndex, as: UInt8.self) else {
            self = .unknown
            return
        }
        let kind = DatagramKind(firstByte: first)
        guard kind == .rtp else {
            self = kind
            return
        }
        guard let second = datagram.getInteger(at: datagram.readerIndex + 1, as: UInt8.self) else {
            self = .unknown
            return
        }
        self = (192...223).contains(second) ? .rtcp : .rtp
    }
}
