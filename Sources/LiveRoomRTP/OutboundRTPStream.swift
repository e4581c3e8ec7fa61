import LiveRoomWire
import NIOCore

/// One RTP stream we send: sequence numbers, timestamps, the send history for NACK and the
/// counts an RTCP sender report carries. Pure; the owner protects and writes the packets.
/// The client publishes with it, and the task runner feeds a mix into a room with it.
///
/// Media time zero is `mediaStart`: a frame with presentation time `pts` (in the stream's
/// clock) gets the RTP timestamp `timestampBase + pts`, and a sender report at `now` maps
/// the wall clock to `timestampBase + (now - mediaStart) * clockRate`.
public struct OutboundRTPStream: Sendable {
    public let ssrc: UInt32
    public let payloadType: UInt8
    public let clockRate: UInt32
    public let timestampBase: UInt32
    public let mediaStart: ContinuousClock.Instant
    public private(set) var nextSequenceNumber: UInt16
    /// Packets and payload octets sent (first transmissions), as an SR counts them.
    public private(set) var packetCount: UInt32 = 0
    public private(set) var octetCount: UInt32 = 0
    /// Media frames sent.
    public private(set) var frameCount: UInt64 = 0
    /// Bytes sent including headers and retransmissions, for bitrate figures.
    public private(set) var bytesSent: UInt64 = 0
    public private(set) var retransmittedPackets: UInt64 = 0
    public private(set) var history: PacketHistory<[UInt8]>
    /// Whether a packet was sent since the last sender report.
    public private(set) var sentSinceReport = false

    public init(
        ssrc: UInt32, payloadType: UInt8, clockRate: UInt32, mediaStart: ContinuousClock.Instant,
        timestampBase: UInt32 = .random(in: 0...UInt32.max), firstSequenceNumber: UInt16 = .random(in: 0...0x7FFF),
        historyCapacity: Int = 512
    ) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.clockRate = clockRate
        self.mediaStart = mediaStart
        self.timestampBase = timestampBase
        self.nextSequenceNumber = firstSequenceNumber
        self.history = PacketHistory(capacity: historyCapacity)
    }

    /// The RTP timestamp of media time `pts`.
    public func rtpTimestamp(pts: Int64) -> UInt32 {
        timestampBase &+ UInt32(truncatingIfNeeded: pts)
    }

    /// RTP packets (unprotected) for one frame split into `payloads`; the marker bit goes
    /// on the last packet when `marker` is set (video). `extensions` gives the first packets
    /// header extensions (a VP8 frame's SEI). Each is kept for retransmission.
    public mutating func packets(payloads: [ByteBuffer], pts: Int64, marker: Bool, extensions: [RTPHeaderExtension] = []) -> [[UInt8]] {
        let timestamp = rtpTimestamp(pts: pts)
        var packets: [[UInt8]] = []
        packets.reserveCapacity(payloads.count)
        for (index, payload) in payloads.enumerated() {
            let header = RTPHeader(
                marker: marker && index == payloads.count - 1, payloadType: payloadType, sequenceNumber: nextSequenceNumber,
                timestamp: timestamp, ssrc: ssrc, headerExtension: index < extensions.count ? extensions[index] : nil)
            guard let buffer = try? RTPPacket(header: header, payload: payload).serialize() else { continue }
            let bytes = Array(buffer: buffer)
            history.store(sequenceNumber: nextSequenceNumber, packet: bytes)
            nextSequenceNumber &+= 1
            packetCount &+= 1
            octetCount &+= UInt32(truncatingIfNeeded: payload.readableBytes)
            bytesSent &+= UInt64(bytes.count)
            packets.append(bytes)
        }
        frameCount &+= 1
        sentSinceReport = true
        return packets
    }

    /// The packets a NACK asks for that are still in the history (unprotected), in order.
    public mutating func retransmissions(of sequenceNumbers: [UInt16]) -> [[UInt8]] {
        let packets = sequenceNumbers.compactMap { history.packet(sequenceNumber: $0) }
        retransmittedPackets &+= UInt64(packets.count)
        bytesSent &+= UInt64(packets.reduce(0) { $0 + $1.count })
        return packets
    }

    /// The sender report for `now`, whose wall-clock time is `wallClock`.
    public mutating func senderReport(now: ContinuousClock.Instant, wallClock: NTPTime) -> RTCPSenderReport {
        sentSinceReport = false
        let elapsed = (now - mediaStart).ticks(rate: clockRate)
        return RTCPSenderReport(
            ssrc: ssrc, ntpTimestamp: wallClock.value, rtpTimestamp: timestampBase &+ UInt32(truncatingIfNeeded: elapsed),
            packetCount: packetCount, octetCount: octetCount)
    }
}
