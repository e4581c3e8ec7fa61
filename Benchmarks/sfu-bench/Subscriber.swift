import BenchSupport
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// A light subscriber: ICE, DTLS and SRTP, no depacketizing or decoding. It counts packets
/// per stream, loss from sequence gaps per SSRC, and the forwarding delay from the
/// publisher's send-time header extension to the datagram's arrival (the kernel's receive
/// timestamp on UDP), into its loop's ``ReceiveTally``.
///
/// SRTP leaves the RTP header and its extensions in the clear, and everything counted is
/// there, so once connected it reads most packets as they come and decrypts one in
/// ``verifyEvery`` (which checks the server's encryption, authentication tag included). The
/// bench then spends its CPU on receiving, not on decrypting, and leaves the cores to the
/// server it measures. Confined to its event loop.
final class BenchSubscriber: LoopSubscriber {
    let channel: any Channel
    /// Whether `channel` is an ICE-TCP connection, whose packets go framed (RFC 4571).
    let framed: Bool
    let transport: PeerTransport
    private let tally: ReceiveTally
    /// The node (of a cluster run) whose media port this subscriber's media comes from.
    private let node: Int
    private let audioPayloadType: UInt8?
    private let videoPayloadType: UInt8?
    private var streams: [UInt32: SequenceTracker] = [:]
    private(set) var audioPackets = 0
    private(set) var videoPackets = 0

    init(channel: any Channel, framed: Bool = false, transport: PeerTransport, tracks: [NegotiatedTrack], tally: ReceiveTally, node: Int = 0) {
        self.channel = channel
        self.framed = framed
        self.transport = transport
        self.tally = tally
        self.node = node
        audioPayloadType = tracks.first { $0.kind == .audio }?.payloadType
        videoPayloadType = tracks.first { $0.kind == .video }?.payloadType
    }

    /// Receiving both audio and video.
    var isReceiving: Bool { audioPackets > 0 && videoPackets > 0 }

    func start(now: ContinuousClock.Instant) {
        _ = writeSends(transport.start(now: now), to: channel, framed: framed)
        channel.flush()
    }

    /// One RTP packet in this many is decrypted and checked; the rest are read from their clear header.
    static let verifyEvery = 16
    private var rtpSeen = 0

    /// - Parameter arrival: when the kernel queued the datagram (CLOCK_MONOTONIC ns), if known;
    ///   else now. The delay is counted to it, so the bench's own reading lag does not count.
    func receive(_ datagram: ByteBuffer, from source: TransportAddress, arrival: UInt64? = nil, now: ContinuousClock.Instant) {
        let arrival = arrival ?? monotonicNanoseconds()
        var verifying = false
        if transport.isConnected, Self.isRTP(datagram) {
            rtpSeen += 1
            guard rtpSeen % Self.verifyEvery == 0 else {
                datagram.withUnsafeReadableBytes { count($0, arrival: arrival) }
                return
            }
            verifying = true
            tally.verifiedPackets += 1
        }
        var decrypted = false
        let drops = transport.drops
        for event in writeSends(transport.receive(datagram, from: source, now: now), to: channel, framed: framed) {
            if case .rtp(let packet) = event {
                decrypted = true
                packet.withUnsafeBytes { count($0, arrival: arrival) }
            }
        }
        if verifying, !decrypted {
            // A packet SRTP has seen already is a duplicate, not a bad one.
            let after = transport.drops
            if after.srtpReplay > drops.srtpReplay { tally.duplicatePackets += 1 } else { tally.undecryptablePackets += 1 }
            if after.srtpAuth > drops.srtpAuth { tally.failures["authentication", default: 0] += 1 }
            if after.srtpOther > drops.srtpOther { tally.failures["other", default: 0] += 1 }
            if after.beforeConnected > drops.beforeConnected { tally.failures["unexpected source", default: 0] += 1 }
        }
    }

    /// RTP, not RTCP (RFC 5761 §4: RTCP packet types 192–223 in the second byte) nor STUN or DTLS.
    static func isRTP(_ datagram: ByteBuffer) -> Bool {
        guard datagram.readableBytes >= 12, let first = datagram.getInteger(at: datagram.readerIndex, as: UInt8.self),
            let second = datagram.getInteger(at: datagram.readerIndex + 1, as: UInt8.self)
        else { return false }
        return first >> 6 == 2 && !(192...223).contains(second)
    }

    func runTimers(now: ContinuousClock.Instant) {
        guard let timeout = transport.nextTimeout, now >= timeout else { return }
        _ = writeSends(transport.handleTimers(now: now), to: channel, framed: framed)
        channel.flush()
    }

    /// Sends DTLS close_notify and closes the socket.
    func close() {
        _ = writeSends(transport.close(reason: "sfu-bench done"), to: channel, framed: framed)
        channel.flush()
        channel.close(promise: nil)
    }

    private func count(_ packet: UnsafeRawBufferPointer, arrival: UInt64) {
        guard packet.count >= 12 else { return }
        let payloadType = packet[1] & 0x7F
        if payloadType == audioPayloadType {
            audioPackets += 1
            tally.audioPackets += 1
        } else if payloadType == videoPayloadType {
            videoPackets += 1
            tally.videoPackets += 1
        }
        let sequence = UInt16(packet[2]) << 8 | UInt16(packet[3])
        let ssrc = UInt32(packet[8]) << 24 | UInt32(packet[9]) << 16 | UInt32(packet[10]) << 8 | UInt32(packet[11])
        tally.expectedPackets += streams[ssrc, default: SequenceTracker()].add(sequence)
        if let sent = Self.sendTime(of: packet) {
            tally.recordDelay(nanoseconds: arrival &- sent, node: node)
        }
    }

    /// The 8-byte send time in the one-byte header extension element with id 1 (RFC 8285),
    /// read in place (this is the hot path, so no full parse).
    static func sendTime(of packet: UnsafeRawBufferPointer) -> UInt64? {
        guard packet[0] & 0x10 != 0 else { return nil }
        let start = 12 + 4 * Int(packet[0] & 0x0F)
        guard packet.count >= start + 4, packet[start] == 0xBE, packet[start + 1] == 0xDE else { return nil }
        let end = start + 4 + 4 * (Int(packet[start + 2]) << 8 | Int(packet[start + 3]))
        guard end <= packet.count else { return nil }
        var index = start + 4
        while index < end {
            let byte = packet[index]
            if byte == 0 {
                index += 1
                continue
            }
            let id = byte >> 4, length = Int(byte & 0x0F) + 1
            if id == 15 { return nil }
            if id == 1, length == 8, index + 9 <= end {
                var value: UInt64 = 0
                for i in 1...8 { value = value << 8 | UInt64(packet[index + i]) }
                return value
            }
            index += 1 + length
        }
        return nil
    }
}

extension BenchSubscriber {
    static func makeLoopShared() -> ReceiveTally { ReceiveTally() }
}

extension MediaLoopState where Subscriber == BenchSubscriber {
    /// What this loop's subscribers received.
    var tally: ReceiveTally { shared }
}

/// The highest extended sequence number of one SSRC, for loss from sequence gaps.
struct SequenceTracker {
    private var highest: Int64?

    /// Notes `sequence`; returns by how many packets the expected count grows (0 for a
    /// late or duplicate packet).
    mutating func add(_ sequence: UInt16) -> Int {
        guard let highest else {
            self.highest = Int64(sequence)
            return 1
        }
        let delta = Int64(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: highest)))
        guard delta > 0 else { return 0 }
        self.highest = highest + delta
        return Int(delta)
    }
}

/// What the subscribers of one loop received: cumulative packet counts, and histograms of
/// forwarding delays (10 µs buckets up to 2 s), one per node the subscribers get their media
/// from, that ``resetDelays()`` restarts.
final class ReceiveTally {
    static let bucketNanoseconds: UInt64 = 10_000
    static let bucketCount = 200_000

    var audioPackets = 0
    var videoPackets = 0
    /// Packets the sequence numbers say were sent (first packet of a stream counts as one).
    var expectedPackets = 0
    /// RTP packets decrypted to check them, and those of them that did not decrypt.
    var verifiedPackets = 0
    var undecryptablePackets = 0
    var duplicatePackets = 0
    /// Why checked packets did not decrypt, with how often.
    var failures: [String: Int] = [:]
    /// By node (index 0 alone outside a cluster run).
    private(set) var nodeDelays = [[UInt32](repeating: 0, count: ReceiveTally.bucketCount)]

    func recordDelay(nanoseconds: UInt64, node: Int = 0) {
        // A negative delay (impossible on one clock) wraps to huge and lands in the last bucket.
        let bucket = min(Int(truncatingIfNeeded: min(nanoseconds / Self.bucketNanoseconds, UInt64(Int.max))), Self.bucketCount - 1)
        while node >= nodeDelays.count { nodeDelays.append([UInt32](repeating: 0, count: Self.bucketCount)) }
        nodeDelays[node][bucket] &+= 1
    }

    func resetDelays() {
        for node in nodeDelays.indices {
            for i in nodeDelays[node].indices { nodeDelays[node][i] = 0 }
        }
    }

    var snapshot: TallySnapshot {
        TallySnapshot(
            audioPackets: audioPackets, videoPackets: videoPackets, expectedPackets: expectedPackets, verifiedPackets: verifiedPackets,
            undecryptablePackets: undecryptablePackets)
    }
}

/// Cumulative counts of a tally (or of all of them) at one moment.
struct TallySnapshot: Sendable {
    var audioPackets = 0
    var videoPackets = 0
    var expectedPackets = 0
    var verifiedPackets = 0
    var undecryptablePackets = 0

    var receivedPackets: Int { audioPackets + videoPackets }

    static func + (a: TallySnapshot, b: TallySnapshot) -> TallySnapshot {
        TallySnapshot(
            audioPackets: a.audioPackets + b.audioPackets, videoPackets: a.videoPackets + b.videoPackets, expectedPackets: a.expectedPackets + b.expectedPackets,
            verifiedPackets: a.verifiedPackets + b.verifiedPackets, undecryptablePackets: a.undecryptablePackets + b.undecryptablePackets)
    }

    static func - (a: TallySnapshot, b: TallySnapshot) -> TallySnapshot {
        TallySnapshot(
            audioPackets: a.audioPackets - b.audioPackets, videoPackets: a.videoPackets - b.videoPackets, expectedPackets: a.expectedPackets - b.expectedPackets,
            verifiedPackets: a.verifiedPackets - b.verifiedPackets, undecryptablePackets: a.undecryptablePackets - b.undecryptablePackets)
    }
}
