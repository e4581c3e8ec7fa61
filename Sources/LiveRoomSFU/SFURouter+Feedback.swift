import LiveRoomRTP
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// Feedback: subscribers' NACK and PLI/FIR, publishers' sender reports, keyframe requests.
extension SFURouter {
    /// RTCP from a peer: subscribers' NACK and PLI/FIR, publishers' sender reports.
    func feedback(_ packet: [UInt8], from peer: Peer, now: ContinuousClock.Instant) -> [Output] {
        guard let packets = try? RTCPPacket.parseCompound(ByteBuffer(bytes: packet)) else {
            countDropped(.malformedRTCP)
            return []
        }
        var outputs: [Output] = []
        switch peer.role {
        case .subscriber(let key, let tracks):
            guard let upTracks = upTracks(of: key) else { return [] }
            let publisher = publishers[key].flatMap { peers[$0] }
            for rtcp in packets {
                switch rtcp {
                case .genericNACK(let nack):
                    guard let (kind, down) = tracks.first(where: { $0.value.ssrc == nack.mediaSSRC }),
                        let up = upTracks.first(where: { $0.kind == kind }), let upSSRC = up.ssrc
                    else { continue }
                    var missing: [UInt16] = []
                    var asked: Set<UInt16> = []
                    for lost in nack.lostSequenceNumbers where asked.count < Self.maximumResentPerNACK && asked.insert(lost).inserted {
                        guard let source = down.rewriter.sourceSequence(for: lost) else { continue }
                        guard let stored = up.history.packet(sequenceNumber: source) else {
                            missing.append(source)
                            continue
                        }
                        // Sent into the port's batch (no output) or as an output: counted either way.
                        let forwarded = counters.rtpForwarded
                        let header = stored.header
                        if let output = send(stored.bytes, ssrc: header.ssrc, sequence: header.sequenceNumber, timestamp: header.timestamp, kind: kind, to: peer, now: now) {
                            outputs.append(output)
                        }
                        if counters.rtpForwarded > forwarded { counters.retransmitted += 1 }
                    }
                    if !missing.isEmpty, let publisher {
                        counters.nacksForwarded += 1
                        outputs += sendRTCP([.genericNACK(RTCPGenericNACK(senderSSRC: feedbackSSRC, mediaSSRC: upSSRC, lostSequenceNumbers: missing))], to: publisher)
                    } else if !missing.isEmpty, let mirror = mirrors[key] {
                        outputs.append(.relay(.nack(key, kind, missing), to: .origin(mirror.origin)))
                    }
                case .pictureLossIndication(let pli):
                    if tracks[.video]?.ssrc == pli.mediaSSRC { outputs += requestKeyframe(of: key, now: now) }
                case .fullIntraRequest:
                    outputs += requestKeyframe(of: key, now: now)
                default:
                    break
                }
            }
        case .publisher(let key, let upTracks):
            // Each subscriber gets the publisher's sender reports in its own SSRC and timestamps.
            for case .senderReport(let report) in packets {
                // One a track per ``senderReportInterval`` is passed on: a flood of them (70 fit in
                // one packet) would become as many packets to every subscriber and loop.
                guard let up = upTracks.first(where: { $0.ssrc == report.ssrc }),
                    up.lastSenderReport.map({ now - $0 >= Self.senderReportInterval }) ?? true
                else { continue }
                up.lastSenderReport = now
                up.reception.receivedSenderReport(report, at: now)
                outputs += forwardSenderReport(report, on: up)
                if relaying { outputs.append(.relay(.senderReport(key, report), to: .mirrors)) }
                if exported.contains(key) { outputs.append(.relay(.senderReport(key, report), to: .nodes)) }
            }
        }
        return outputs
    }

    /// Each subscriber of `up` gets the publisher's sender report in its own SSRC and timestamps.
    func forwardSenderReport(_ report: RTCPSenderReport, on up: UpTrack) -> [Output] {
        var outputs: [Output] = []
        for (subscriber, down) in up.subscribers {
            guard let rtpTimestamp = down.rewriter.outputTimestamp(for: report.rtpTimestamp) else { continue }
            var rewritten = report
            rewritten.ssrc = down.ssrc
            rewritten.rtpTimestamp = rtpTimestamp
            rewritten.reportBlocks = []
            outputs += sendRTCP([.senderReport(rewritten)], to: subscriber)
        }
        return outputs
    }

    func requestKeyframe(of key: PublisherKey, now: ContinuousClock.Instant) -> [Output] {
        if let mirror = mirrors[key] {
            // The origin's limiter holds back the requests of every router.
            return [.relay(.keyframeRequest(key), to: .origin(mirror.origin))]
        }
        if let local = localPublishers[key] {
            guard let video = local.first(where: { $0.kind == .video }), video.keyframeRequests.request(now: now) else { return [] }
            return [.localKeyframeRequest(key)]
        }
        guard let publisher = publishers[key].flatMap({ peers[$0] }), case .publisher(_, let tracks) = publisher.role,
            let video = tracks.first(where: { $0.kind == .video }), video.keyframeRequests.request(now: now)
        else { return [] }
        return sendPLI(to: publisher, track: video)
    }

    func sendPLI(to publisher: Peer, track: UpTrack) -> [Output] {
        guard let ssrc = track.ssrc else { return [] }
        counters.keyframeRequests += 1
        return sendRTCP([.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: feedbackSSRC, mediaSSRC: ssrc))], to: publisher)
    }

    func sendRTCP(_ packets: [RTCPPacket], to peer: Peer) -> [Output] {
        peer.transport.protectRTCP(packets).map { [.send($0.datagram, to: $0.to)] } ?? []
    }
}
