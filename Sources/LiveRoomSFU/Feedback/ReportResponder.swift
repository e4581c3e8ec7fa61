import LiveRoomRTP
import LiveRoomWire

/// Reports. A publisher's sender reports, checked against its packets (``SenderReportCheck``:
/// passed on as they are, moved onto the server's clock, or replaced by the server's mapping),
/// go to each subscriber in that subscriber's SSRC and timestamps (and to the mirrors on other
/// loops and nodes, which do the same for theirs), at most one a track per
/// ``SFURouter/senderReportInterval``: a flood of them (70 fit in one packet) would become as
/// many packets to every subscriber and loop. Each connected publisher
/// is sent a receiver report a second: loss and LSR/DLSR (its round trip) per stream.
struct ReportResponder: FeedbackResponder {
    func received(_ rtcp: RTCPPacket, from peer: SFURouter.Peer, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool {
        guard case .senderReport(let report) = rtcp else { return false }
        guard case .publisher(let key, let tracks) = peer.role, let up = tracks.first(where: { $0.ssrc == report.ssrc }),
            up.lastSenderReport.map({ now - $0 >= SFURouter.senderReportInterval }) ?? true
        else { return true }
        up.lastSenderReport = now
        up.reception.receivedSenderReport(report, at: now)
        // Before any packet there is nothing to map the report onto.
        guard let expected = up.capture.timestamp(arrivingAt: now) else { return true }
        let passed = peer.senderReports.check(report, expected: expected, clockRate: up.codec.clockRate, wallArrival: router.wallClock())
        if peer.senderReports.verdict != .believed { router.counters.senderReportsReplaced += 1 }
        up.passedReport = passed
        router.forwardSenderReport(passed, on: up, into: &outputs)
        if router.relaying { outputs.append(.relay(.senderReport(key, passed), to: .mirrors)) }
        if router.exported.contains(key) { outputs.append(.relay(.senderReport(key, passed), to: .nodes)) }
        return true
    }

    /// A mirrored publisher's sender report, to this router's subscribers of it.
    func relayed(_ relay: SFURouter.Relay, from origin: SFURouter.Origin, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool {
        guard case .senderReport(let key, let report) = relay else { return false }
        if let mirror = router.mirrors[key], mirror.origin == origin, let up = mirror.tracks.first(where: { $0.ssrc == report.ssrc }) {
            up.passedReport = report
            router.forwardSenderReport(report, on: up, into: &outputs)
        }
        return true
    }

    func timers(of publisher: SFURouter.Peer, tracks: [SFURouter.UpTrack], in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) {
        guard publisher.reports.due(now: now) else { return }
        let blocks = tracks.compactMap { track in track.ssrc.flatMap { track.reception.reportBlock(ssrc: $0, now: now) } }
        if !blocks.isEmpty {
            router.sendRTCP([.receiverReport(RTCPReceiverReport(ssrc: router.feedbackSSRC, reportBlocks: blocks))], to: publisher, into: &outputs)
        }
    }
}

extension SFURouter {
    /// Each subscriber of `up` gets the publisher's sender report in its own SSRC and timestamps.
    func forwardSenderReport(_ report: RTCPSenderReport, on up: UpTrack, into outputs: inout [Output]) {
        for (subscriber, down) in up.subscribers {
            if let rewritten = rewritten(report, on: down) { sendRTCP([.senderReport(rewritten)], to: subscriber, into: &outputs) }
        }
    }

    /// The sender report a subscriber is sent with its first packet of `up` (its numbering
    /// just started), so that it can place that packet in time: lip sync from the first frame,
    /// not from the publisher's next report, which webrtcbin sends every 5 s. The newest one
    /// passed on or, before any, the server's mapping (its clock now against the timestamp a
    /// packet arriving now carries); nil while there is neither (a mirror before its first).
    func startReport(of up: UpTrack, on down: DownTrack, now: ContinuousClock.Instant) -> RTCPSenderReport? {
        var report = up.passedReport
        if report == nil, let ssrc = up.ssrc, let expected = up.capture.timestamp(arrivingAt: now) {
            report = RTCPSenderReport(ssrc: ssrc, ntpTimestamp: NTPTime(unixSeconds: wallClock()).value, rtpTimestamp: expected, packetCount: 0, octetCount: 0)
        }
        return report.flatMap { rewritten($0, on: down) }
    }

    /// `report` in the subscriber's SSRC and timestamps; nil before its numbering started.
    private func rewritten(_ report: RTCPSenderReport, on down: DownTrack) -> RTCPSenderReport? {
        guard let rtpTimestamp = down.rewriter.outputTimestamp(for: report.rtpTimestamp) else { return nil }
        var rewritten = report
        rewritten.ssrc = down.ssrc
        rewritten.rtpTimestamp = rtpTimestamp
        rewritten.reportBlocks = []
        return rewritten
    }
}
