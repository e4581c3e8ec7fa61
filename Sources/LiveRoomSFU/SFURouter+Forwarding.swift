import LiveRoomRTP
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// Forwarding: a publisher's RTP to its subscribers, rewritten for each, with keyframe replay
/// for a new subscriber and the history that answers NACKs.
extension SFURouter {
    /// A publisher's RTP (decrypted) to every subscriber of its track, and to the taps on the publisher.
    func forward(_ packet: ByteBuffer, from peer: Peer, now: ContinuousClock.Instant, into outputs: inout [Output]) {
        guard case .publisher(let key, let tracks) = peer.role, let payloadType = packet.getInteger(at: packet.readerIndex + 1, as: UInt8.self),
            let track = tracks.first(where: { $0.payloadType == payloadType & 0x7F })
        else {
            countDropped(.unknownPayloadType)
            return
        }
        // A publisher that numbers the SEI extension its own way: renumbered once, here, in
        // place before the packet is parsed (the one parse it gets).
        var packet = packet
        if let id = track.seiExtensionID { RTPHeaderExtension.renumber(id, to: SEIHeaderExtension.defaultID, inPacket: &packet) }
        guard let packet = ForwardedPacket(packet) else {
            countDropped(.unknownPayloadType)
            return
        }
        // Video that did not arrive is asked for at once, before any subscriber notices the gap.
        if track.videoCodec != nil, track.ssrc == nil || track.ssrc == packet.header.ssrc {
            sendNACK(track.nacks.received(packet.header.sequenceNumber, now: now), to: peer, track: track, ssrc: packet.header.ssrc, into: &outputs)
        }
        forward(packet, on: track, of: key, mirrored: false, now: now, into: &outputs)
    }

    /// Forwards one packet, parsed once where it arrived: the header and payload view serve the
    /// statistics, keyframe detection and taps; the same bytes go to the history and the
    /// mirrors, and are copied once per subscriber, into its datagram, rewritten and encrypted
    /// there. A publisher of this router's own (not `mirrored`) is also relayed to the port's
    /// other routers.
    func forward(_ packet: ForwardedPacket, on track: UpTrack, of key: PublisherKey, mirrored: Bool, now: ContinuousClock.Instant, into outputs: inout [Output]) {
        let (ssrc, sequence, timestamp) = (packet.header.ssrc, packet.header.sequenceNumber, packet.header.timestamp)
        if track.ssrc != ssrc {
            // A new source: what was kept of the old one no longer lines up with its numbers.
            track.keyframe = nil
            track.newestSequence = nil
            if track.ssrc != nil {
                track.nacks = NackGenerator()
                track.capture = CaptureClock(clockRate: track.codec.clockRate)
            }
        }
        track.ssrc = ssrc
        track.history.store(sequenceNumber: sequence, packet: packet)
        if !mirrored {
            counters.rtpReceived += 1
            track.reception.record(sequenceNumber: sequence, timestamp: timestamp, bytes: packet.bytes.readableBytes, arrival: now)
            track.capture.record(timestamp: timestamp, arrival: now)
            if relaying {
                if let packetRelay {
                    packetRelay(.packet(key, track.kind, packet, arrival: now))
                } else {
                    outputs.append(.relay(.packet(key, track.kind, packet, arrival: now), to: .mirrors))
                }
            }
            if !exported.isEmpty, exported.contains(key) { outputs.append(.relay(.packet(key, track.kind, packet, arrival: now), to: .nodes)) }
        }
        // Most rooms have no task: skip hashing the key for every packet then.
        if !taps.isEmpty, let tapIDs = taps[key], tapsHere(key) {
            for tap in tapIDs { outputs.append(.tapped(tap, publisher: key, codec: track.codec, packet: packet.parsed)) }
        }
        var keyframe = false
        if let codec = track.videoCodec {
            if VideoPayloadFormat.describe(packet.parsed.payload, codec: codec).marksKeyframe {
                track.keyframeRequests.keyframeReceived()
                keyframe = true
                // An H.264 keyframe marks several packets (parameter sets, IDR slices): the first one counts.
                if track.keyframe?.timestamp != timestamp { track.keyframe = (sequence, timestamp) }
            }
            if track.newestSequence.map({ sequence.isNewer(than: $0) }) ?? true { track.newestSequence = sequence }
        }
        if datagramSink == nil { outputs.reserveCapacity(outputs.count + track.subscribers.count) }
        for (subscriber, down) in track.subscribers {
            // A subscriber still being sent the kept keyframe gets live video behind it.
            if track.kind == .video, !subscriber.videoBacklog.isEmpty {
                // A backlog that cannot drain (the publisher sends faster than the replay's pace)
                // is given up: the subscriber waits for the next keyframe instead, which is asked for.
                guard subscriber.videoBacklog.count < Self.maximumBacklogPackets else {
                    subscriber.videoBacklog = []
                    down.awaitingKeyframe = true
                    outputs += requestKeyframe(of: key, now: now)
                    continue
                }
                subscriber.videoBacklog.append(packet)
                continue
            }
            guard subscriber.transport.isConnected else { continue }
            send(
                packet.bytes, ssrc: ssrc, sequence: sequence, timestamp: timestamp, on: down, keyframe: keyframe, to: subscriber, arrival: now, now: now,
                into: &outputs, reportingStartOf: track)
        }
    }

    static let allocator = ByteBufferAllocator()

    /// The most packets a new subscriber is sent from the kept keyframe on (about 2 s of 1.3 Mbps
    /// video); a longer stretch is not replayed and a keyframe is asked for instead.
    public static let maximumReplayPackets = 320

    /// Sends a subscriber that just connected the publisher's newest keyframe and every video
    /// packet since, from the history, so it can decode at once instead of waiting for a new
    /// keyframe: the first ``replayPacketsPerTurn`` (the keyframe, as a rule) at once, the rest
    /// paced by the timer, live packets queued behind them. Nil (nothing sent) when there is no
    /// keyframe, a packet of the stretch is no longer (or never was) in the history, or the
    /// stretch is too long.
    func replayKeyframe(of key: PublisherKey, to subscriber: Peer, now: ContinuousClock.Instant) -> [Output]? {
        guard case .subscriber(_, let tracks) = subscriber.role, tracks[.video] != nil,
            let video = upTracks(of: key)?.first(where: { $0.kind == .video }), let (start, _) = video.keyframe,
            let newest = video.newestSequence
        else { return nil }
        let count = Int(newest &- start) + 1
        guard count <= min(Self.maximumReplayPackets, video.history.capacity) else { return nil }
        var packets: [ForwardedPacket] = []
        packets.reserveCapacity(count)
        for offset in 0..<count {
            guard let stored = video.history.packet(sequenceNumber: start &+ UInt16(offset)) else { return nil }
            packets.append(stored)
        }
        counters.keyframesReplayed += 1
        subscriber.videoBacklog = packets
        return sendBacklog(of: subscriber, now: now)
    }

    /// The most video packets a new subscriber's backlog (the replay and the live packets queued
    /// behind it) holds.
    public static let maximumBacklogPackets = 2 * maximumReplayPackets

    /// The shortest time between two sender reports of one track that are passed on (publishers
    /// send one every second or so).
    public static let senderReportInterval = Duration.milliseconds(100)

    /// The most sequence numbers of one NACK a subscriber is resent (duplicates counted once).
    public static let maximumResentPerNACK = 128

    /// Packets of a replay sent at once, and then each timer turn (20 ms), so a new
    /// subscriber's receive buffer and the loop's other work are not flooded.
    public static let replayPacketsPerTurn = 64

    /// Sends the next packets of a subscriber's video backlog.
    func sendBacklog(of subscriber: Peer, now: ContinuousClock.Instant) -> [Output] {
        let batch = subscriber.videoBacklog.prefix(Self.replayPacketsPerTurn)
        subscriber.videoBacklog.removeFirst(batch.count)
        var outputs: [Output] = []
        guard case .subscriber(let key, let tracks) = subscriber.role, let down = tracks[.video] else { return outputs }
        let video = down.reported ? nil : upTracks(of: key)?.first { $0.kind == .video }
        for queued in batch {
            send(
                queued.bytes, ssrc: queued.header.ssrc, sequence: queued.header.sequenceNumber, timestamp: queued.header.timestamp, on: down,
                keyframe: false, to: subscriber, arrival: nil, now: now, into: &outputs, reportingStartOf: video)
        }
        return outputs
    }

    /// A resent packet on the subscriber's down track of `kind`.
    func resend(
        _ packet: ByteBuffer, ssrc: UInt32, sequence: UInt16, timestamp: UInt32, kind: MediaKind, to subscriber: Peer, now: ContinuousClock.Instant,
        into outputs: inout [Output]
    ) {
        guard case .subscriber(_, let tracks) = subscriber.role, let down = tracks[kind] else { return }
        send(packet, ssrc: ssrc, sequence: sequence, timestamp: timestamp, on: down, keyframe: false, to: subscriber, arrival: nil, now: now, into: &outputs)
    }

    /// Rewrites (in place, in a copy of the bytes) and encrypts one packet for one subscriber:
    /// into the ``datagramSink`` when there is one, or as a `.send` output. The first packet
    /// of `up` the subscriber is sent has a sender report go before it (``startReport(of:on:now:)``).
    func send(
        _ packet: ByteBuffer, ssrc: UInt32, sequence: UInt16, timestamp: UInt32, on down: DownTrack, keyframe: Bool, to subscriber: Peer,
        arrival: ContinuousClock.Instant?, now: ContinuousClock.Instant, into outputs: inout [Output], reportingStartOf up: UpTrack? = nil
    ) {
        guard !down.paused, let address = subscriber.transport.remoteAddress else { return }
        if down.awaitingKeyframe {
            guard keyframe else { return }
            // The stream goes on one after the last packet sent before the pause.
            down.awaitingKeyframe = false
            down.rewriter.sourceChanged()
        }
        let (outSequence, outTimestamp) = down.rewriter.rewrite(ssrc: ssrc, sequence: sequence, timestamp: timestamp, now: now)
        if let up, !down.reported, let report = startReport(of: up, on: down, now: now), let protected = subscriber.transport.protectRTCP([.senderReport(report)]) {
            down.reported = true
            if address.transport == .udp, let datagramSink { datagramSink.send(protected.datagram, to: protected.to) } else { outputs.append(.send(protected.datagram, to: protected.to)) }
        }
        var source = packet
        if let id = down.seiExtensionID, let first = packet.getInteger(at: packet.readerIndex, as: UInt8.self), first & 0x10 != 0 {
            // Copies the packet once for this subscriber: it numbers the extension its own way.
            RTPHeaderExtension.renumber(SEIHeaderExtension.defaultID, to: id, inPacket: &source)
        }
        // One copy, into the datagram's own storage: the header is rewritten and the packet
        // encrypted there, in place.
        let transport = subscriber.transport
        func write(into bytes: UnsafeMutableRawBufferPointer) -> Int? {
            source.withUnsafeReadableBytes { bytes.copyMemory(from: $0) }
            bytes[1] = (bytes[1] & 0x80) | down.payloadType
            bytes.storeBytes(of: outSequence.bigEndian, toByteOffset: 2, as: UInt16.self)
            bytes.storeBytes(of: outTimestamp.bigEndian, toByteOffset: 4, as: UInt32.self)
            bytes.storeBytes(of: down.ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
            return transport.protectRTP(bytes, length: source.readableBytes)
        }
        let capacity = source.readableBytes + SRTPSession.maximumTrailerLength
        var output: Output?
        var length: Int?
        if address.transport == .udp, let datagramSink {
            length = datagramSink.write(to: address, capacity: capacity, arrival: arrival, write)
        } else {
            var out = Self.allocator.buffer(capacity: capacity)
            out.writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { bytes in
                write(into: UnsafeMutableRawBufferPointer(rebasing: bytes[..<capacity])) ?? 0
            }
            if out.readableBytes > 0 {
                length = out.readableBytes
                output = .send(out, to: address)
            }
        }
        guard let length else { return }
        counters.rtpForwarded += 1
        counters.bytesForwarded += length
        if let output { outputs.append(output) }
    }
}
