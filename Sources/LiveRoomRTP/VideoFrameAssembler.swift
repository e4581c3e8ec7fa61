import LiveRoomWire
import NIOCore

/// Turns a video RTP stream back into frames: reorders packets by sequence number, finds
/// frame boundaries (first packet of a frame, timestamp, marker), asks for lost packets
/// once each (NACK), and gives up on a frame that stays incomplete, then waits for a
/// keyframe and asks for one (PLI). Pure: time is a parameter, the owner sends the RTCP.
///
/// Frames come out in order. Before the first keyframe, and after a frame was given up,
/// only a keyframe is let through, since nothing else can be decoded.
public struct VideoFrameAssembler: Sendable {
    /// One received packet, as the codec layer describes it.
    public struct Packet: Sendable, Hashable {
        public var sequenceNumber: UInt16
        public var timestamp: UInt32
        public var marker: Bool
        /// The RTP payload.
        public var payload: ByteBuffer
        /// Whether this packet begins a frame (VP8: S bit in partition 0; H.264: a
        /// parameter set, or the start of a slice with first_mb_in_slice 0).
        public var startsFrame: Bool
        /// Whether this packet shows its frame is a keyframe.
        public var marksKeyframe: Bool
        public var arrival: ContinuousClock.Instant
        /// The packet's RTP header extension (SEI of a VP8 frame rides there).
        public var headerExtension: RTPHeaderExtension?

        public init(
            sequenceNumber: UInt16, timestamp: UInt32, marker: Bool, payload: ByteBuffer, startsFrame: Bool, marksKeyframe: Bool,
            arrival: ContinuousClock.Instant, headerExtension: RTPHeaderExtension? = nil
        ) {
            self.headerExtension = headerExtension
            self.sequenceNumber = sequenceNumber
            self.timestamp = timestamp
            self.marker = marker
            self.payload = payload
            self.startsFrame = startsFrame
            self.marksKeyframe = marksKeyframe
            self.arrival = arrival
        }
    }

    /// A complete frame: its packets in sequence order.
    public struct Frame: Sendable, Hashable {
        public var timestamp: UInt32
        public var packets: [Packet]
        public var isKeyframe: Bool
        /// When its first packet arrived.
        public var firstArrival: ContinuousClock.Instant
        /// When it was complete and released.
        public var released: ContinuousClock.Instant
    }

    public enum Action: Sendable, Hashable {
        /// A complete frame, in order.
        case frame(Frame)
        /// Ask the sender to retransmit these sequence numbers (generic NACK).
        case nack([UInt16])
        /// Ask the sender for a keyframe (PLI).
        case requestKeyframe
    }

    /// Counts for statistics.
    public struct Counters: Sendable, Hashable {
        public var packetsReceived: UInt64 = 0
        public var duplicates: UInt64 = 0
        public var late: UInt64 = 0
        public var framesReleased: UInt64 = 0
        /// Frames given up, or complete but dropped while waiting for a keyframe.
        public var framesDropped: UInt64 = 0
        public var sequenceNumbersNacked: UInt64 = 0
        /// Sequence numbers asked for again.
        public var nackRetries: UInt64 = 0
        /// Packets never received: skipped when a frame was given up.
        public var packetsUnrecovered: UInt64 = 0
        public var keyframeRequests: UInt64 = 0
    }

    /// How long the oldest frame may stay incomplete before it is given up.
    public let completionTimeout: Duration
    /// Least time between keyframe requests while waiting for a keyframe.
    public let keyframeRequestInterval: Duration
    /// Gaps longer than this are not NACKed: a keyframe is asked for instead.
    public let maximumNackGap: Int
    /// Bound on buffered packets; past it the oldest frame is given up.
    public let maximumBufferedPackets: Int

    public private(set) var counters = Counters()
    public private(set) var waitingForKeyframe = true
    private var unwrapper = SequenceNumberUnwrapper()
    private var buffer: [UInt64: Packet] = [:]
    /// Extended sequence number where the next frame starts; nil until a frame start is known.
    private var nextExpected: UInt64?
    private var highest: UInt64?
    /// Sequence numbers asked for and still missing: how often, and when last.
    private var nacked: [UInt64: (count: Int, last: ContinuousClock.Instant)] = [:]
    /// How long to wait for a retransmission before asking again (about a round trip).
    public let nackRetryInterval: Duration
    /// How often one sequence number is asked for at most.
    public let maximumNacksPerPacket: Int
    private var blockedSince: ContinuousClock.Instant?
    private var lastKeyframeRequest: ContinuousClock.Instant?

    public init(
        completionTimeout: Duration = .seconds(1), keyframeRequestInterval: Duration = .seconds(1), maximumNackGap: Int = 256,
        maximumBufferedPackets: Int = 2048, nackRetryInterval: Duration = .milliseconds(100), maximumNacksPerPacket: Int = 8
    ) {
        self.nackRetryInterval = nackRetryInterval
        self.maximumNacksPerPacket = maximumNacksPerPacket
        self.completionTimeout = completionTimeout
        self.keyframeRequestInterval = keyframeRequestInterval
        self.maximumNackGap = maximumNackGap
        self.maximumBufferedPackets = maximumBufferedPackets
    }

    /// Adds a packet and returns what follows: NACKs for new gaps, completed frames.
    public mutating func insert(_ packet: Packet, now: ContinuousClock.Instant) -> [Action] {
        guard let extended = unwrapper.unwrap(packet.sequenceNumber) else {
            counters.late += 1
            return []
        }
        if let nextExpected, extended < nextExpected {
            counters.late += 1
            return []
        }
        guard buffer[extended] == nil else {
            counters.duplicates += 1
            return []
        }
        counters.packetsReceived += 1
        var actions: [Action] = []
        if let highest, extended > highest + 1 {
            let gap = extended - highest - 1
            if gap <= UInt64(maximumNackGap) {
                let missing = (highest + 1)..<extended
                for sequence in missing { nacked[sequence] = (1, now) }
                counters.sequenceNumbersNacked += gap
                actions.append(.nack(missing.map { UInt16(truncatingIfNeeded: $0) }))
            }
            // A longer gap is beyond repair: the frame times out and a keyframe is asked for.
        }
        if highest.map({ extended > $0 }) ?? true { highest = extended }
        nacked[extended] = nil
        buffer[extended] = packet
        actions += drain(now: now)
        return actions
    }

    /// Asks again for what is still missing a round trip later (a NACK or its retransmission
    /// may be lost too), gives up on frames that waited too long, and repeats keyframe requests
    /// while waiting.
    public mutating func tick(now: ContinuousClock.Instant) -> [Action] {
        var actions = drain(now: now)
        let again = nacked.filter { now - $0.value.last >= nackRetryInterval && $0.value.count < maximumNacksPerPacket }.keys.sorted()
        if !again.isEmpty {
            for sequence in again { nacked[sequence] = (nacked[sequence]!.count + 1, now) }
            counters.nackRetries += UInt64(again.count)
            actions.append(.nack(again.map { UInt16(truncatingIfNeeded: $0) }))
        }
        if waitingForKeyframe, !actions.contains(.requestKeyframe), let request = keyframeRequest(now: now) {
            actions.append(request)
        }
        return actions
    }

    private mutating func keyframeRequest(now: ContinuousClock.Instant) -> Action? {
        if let last = lastKeyframeRequest, now - last < keyframeRequestInterval { return nil }
        lastKeyframeRequest = now
        counters.keyframeRequests += 1
        return .requestKeyframe
    }

    /// Releases every complete frame at the head, giving up on a blocked head frame when due.
    private mutating func drain(now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        while true {
            if nextExpected == nil {
                // Start at the oldest buffered frame start; older packets are fragments.
                guard let start = buffer.filter({ $0.value.startsFrame }).keys.min() else {
                    // Fragments and no frame start (a publisher that never marks one): what waits is bounded.
                    if buffer.count > maximumBufferedPackets { buffer.removeAll() }
                    if nacked.count > maximumBufferedPackets { nacked.removeAll() }
                    return actions
                }
                drop(below: start)
                nextExpected = start
            }
            switch headFrame() {
            case .complete(let packets, let last):
                blockedSince = nil
                for key in buffer.keys where key <= last { buffer[key] = nil }
                nextExpected = last + 1
                let isKeyframe = packets.contains { $0.marksKeyframe }
                if waitingForKeyframe && !isKeyframe {
                    counters.framesDropped += 1
                    continue
                }
                waitingForKeyframe = false
                counters.framesReleased += 1
                actions.append(.frame(Frame(
                    timestamp: packets[0].timestamp, packets: packets, isKeyframe: isKeyframe,
                    firstArrival: packets.map(\.arrival).min()!, released: now)))
            case .blocked:
                // Nothing buffered: simply waiting for the next packet, not blocked by a loss.
                guard !buffer.isEmpty else {
                    blockedSince = nil
                    return actions
                }
                let since = blockedSince ?? now
                blockedSince = since
                // While waiting for a keyframe, an incomplete frame is worthless if a keyframe follows.
                let keyframeBuffered = waitingForKeyframe && nextKeyframeStart() != nil
                guard now - since >= completionTimeout || buffer.count > maximumBufferedPackets || keyframeBuffered else {
                    return actions
                }
                counters.framesDropped += 1
                giveUpHead()
                waitingForKeyframe = true
                if let request = keyframeRequest(now: now) { actions.append(request) }
                blockedSince = nil
                if nextExpected == nil { return actions }
            }
        }
    }

    private enum Head {
        case complete([Packet], last: UInt64)
        case blocked
    }

    /// The frame starting at `nextExpected`, if all its packets are here.
    private func headFrame() -> Head {
        guard let start = nextExpected, let first = buffer[start], first.startsFrame else { return .blocked }
        var packets = [first]
        var sequence = start
        var current = first
        while !current.marker {
            guard let next = buffer[sequence + 1] else { return .blocked }
            if next.timestamp != first.timestamp {
                // No marker, but the next frame began: this one ended.
                return .complete(packets, last: sequence)
            }
            sequence += 1
            packets.append(next)
            current = next
        }
        return .complete(packets, last: sequence)
    }

    private func nextKeyframeStart() -> UInt64? {
        guard let start = nextExpected else { return nil }
        // A later frame: an H.264 keyframe's IDR slice also looks like a start within its own frame.
        let headTimestamp = buffer[start]?.timestamp
        return buffer.filter { $0.key > start && $0.value.startsFrame && $0.value.marksKeyframe && $0.value.timestamp != headTimestamp }.keys.min()
    }

    /// Skips the blocked head frame: to the next buffered keyframe when waiting for one, or
    /// the next frame start; counts the packets never received.
    private mutating func giveUpHead() {
        guard let start = nextExpected else { return }
        let headTimestamp = buffer[start]?.timestamp
        let next = nextKeyframeStart()
            ?? buffer.filter { $0.key > start && $0.value.startsFrame && $0.value.timestamp != headTimestamp }.keys.min()
        if let next {
            let present = buffer.keys.filter { $0 >= start && $0 < next }.count
            counters.packetsUnrecovered += (next - start) - UInt64(present)
            drop(below: next)
            nextExpected = next
        } else {
            if let highest {
                let present = buffer.keys.filter { $0 >= start }.count
                counters.packetsUnrecovered += (highest + 1 - start) - UInt64(present)
            }
            buffer.removeAll()
            nextExpected = nil
            if let highest { drop(below: highest + 1) }
        }
    }

    private mutating func drop(below sequence: UInt64) {
        for key in buffer.keys where key < sequence { buffer[key] = nil }
        nacked = nacked.filter { $0.key >= sequence }
    }
}
