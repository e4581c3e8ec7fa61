import LiveRoomSFU
import Prometheus
import Synchronization

/// The server's Prometheus metrics, served at `GET /metrics`. Values are read from the room
/// hub and the media port when scraped.
final class ServerMetrics: Sendable {
    /// What the hub reports.
    struct Rooms: Sendable {
        var rooms: Int
        var users: Int
        var publishers: Int
        var signalingConnections: Int
        var publishTasks: Int
        /// The pixels a second the tasks encode, as the encoding budget counts them.
        var encodingPixelsPerSecond: Int
    }

    private let registry = PrometheusCollectorRegistry()
    private let rooms: Gauge
    private let users: Gauge
    private let publishers: Gauge
    private let connections: Gauge
    private let tasks: Gauge
    private let encoding: Gauge
    private let peers: Gauge
    /// The router's running totals as Prometheus counters, and the totals last added.
    private let rtpReceived, rtpForwarded, bytesForwarded, retransmitted, nacksForwarded, nacksSent, keyframeRequests, keyframesReplayed, senderReportsReplaced: Counter
    /// `liveroom_media_dropped_total`, one series per reason.
    private let dropped: [SFURouter.DropReason: Counter]
    private let lastRouterCounters = Mutex(SFURouter.Counters())
    /// Packets forwarded by each media loop, and the totals last added.
    private let loopForwarded = Mutex<[(counter: Counter, last: Int)]>([])
    private let handoffsDropped, sendDropped: Counter
    private let lastDropped = Mutex((handoffs: 0, sends: 0))
    private let webhooksPending: Gauge
    private let webhooksDelivered, webhookFailures, webhooksDropped: Counter
    private let lastWebhooks = Mutex(WebhookService.Statistics())

    init() {
        rooms = registry.gauge("liveroom_rooms", help: "Rooms open now.")
        users = registry.gauge("liveroom_users", help: "Users in rooms now.")
        publishers = registry.gauge("liveroom_publishers", help: "Anchors publishing media now.")
        connections = registry.gauge("liveroom_signaling_connections", help: "Open signaling WebSocket connections.")
        tasks = registry.gauge("liveroom_publish_tasks", help: "Publish media stream tasks running now.")
        encoding = registry.gauge(
            "liveroom_encoding_pixels_per_second", help: "Pixels a second the publish tasks encode, as the encoding budget counts them (--encoding-budget).")
        peers = registry.gauge("liveroom_media_peer_connections", help: "Peer connections on the media port.")
        rtpReceived = registry.counter("liveroom_rtp_received_total", help: "RTP packets received from publishers.")
        rtpForwarded = registry.counter("liveroom_rtp_forwarded_total", help: "RTP packets forwarded to subscribers.")
        bytesForwarded = registry.counter("liveroom_rtp_forwarded_bytes_total", help: "Bytes of RTP forwarded to subscribers.")
        retransmitted = registry.counter("liveroom_rtp_retransmitted_total", help: "Packets resent from the history for NACKs.")
        nacksForwarded = registry.counter("liveroom_nacks_forwarded_total", help: "NACKs passed on to publishers.")
        nacksSent = registry.counter("liveroom_nacks_sent_total", help: "NACKs the server sent publishers for video that did not arrive.")
        keyframeRequests = registry.counter("liveroom_keyframe_requests_total", help: "PLIs sent to publishers.")
        keyframesReplayed = registry.counter(
            "liveroom_keyframes_replayed_total", help: "New subscribers started from the keyframe the server keeps instead of a new one.")
        senderReportsReplaced = registry.counter(
            "liveroom_sender_reports_replaced_total",
            help: "Publishers' sender reports passed on in the server's own mapping: before two of a track agree, or all of a publisher whose reports did not match its packets.")
        var dropped: [SFURouter.DropReason: Counter] = [:]
        for reason in SFURouter.DropReason.allCases {
            dropped[reason] = registry.counter(
                "liveroom_media_dropped_total", labels: [("reason", reason.rawValue)],
                help: "Datagrams and packets the media port dropped, by why (they named nothing the server has, or did not parse or authenticate).")
        }
        self.dropped = dropped
        handoffsDropped = registry.counter(
            "liveroom_media_handoffs_dropped_total", help: "Packets one media loop handed another and dropped because that loop had too many waiting.")
        sendDropped = registry.counter(
            "liveroom_media_send_dropped_total", help: "Datagrams not sent because a media socket's send buffer was full.")
        webhooksPending = registry.gauge("liveroom_webhook_pending", help: "Webhooks stored in the outbox and not yet delivered.")
        webhooksDelivered = registry.counter("liveroom_webhook_delivered_total", help: "Webhooks answered 2xx and deleted from the outbox.")
        webhookFailures = registry.counter(
            "liveroom_webhook_failures_total", help: "Webhook attempts that failed (no connection, no answer in 5 s, not 2xx) and are retried.")
        webhooksDropped = registry.counter(
            "liveroom_webhook_dropped_total", help: "Webhook events not stored because the outbox was full (or could not be written).")
    }

    /// The Prometheus text exposition of the values given.
    func exposition(
        rooms snapshot: Rooms, media: MediaStatistics, webhooks: WebhookService.Statistics = .init(), purchases: DelayHistogram = DelayHistogram()
    ) -> String {
        let (router, peerCount) = (media.counters, media.peers)
        rooms.set(Double(snapshot.rooms))
        users.set(Double(snapshot.users))
        publishers.set(Double(snapshot.publishers))
        connections.set(Double(snapshot.signalingConnections))
        tasks.set(Double(snapshot.publishTasks))
        encoding.set(Double(snapshot.encodingPixelsPerSecond))
        peers.set(Double(peerCount))
        lastRouterCounters.withLock { last in
            let totals: [(Counter, Int, Int)] = [
                (rtpReceived, router.rtpReceived, last.rtpReceived), (rtpForwarded, router.rtpForwarded, last.rtpForwarded),
                (bytesForwarded, router.bytesForwarded, last.bytesForwarded), (retransmitted, router.retransmitted, last.retransmitted),
                (nacksForwarded, router.nacksForwarded, last.nacksForwarded), (nacksSent, router.nacksSent, last.nacksSent),
                (keyframeRequests, router.keyframeRequests, last.keyframeRequests),
                (keyframesReplayed, router.keyframesReplayed, last.keyframesReplayed),
                (senderReportsReplaced, router.senderReportsReplaced, last.senderReportsReplaced),
            ] + dropped.map { reason, counter in (counter, router.droppedBy[reason, default: 0], last.droppedBy[reason, default: 0]) }
            for (counter, now, before) in totals where now > before { counter.increment(by: Int64(now - before)) }
            last = router
        }
        loopForwarded.withLock { loops in
            for (index, counters) in media.loops.enumerated() {
                if index == loops.count {
                    let counter = registry.counter(
                        "liveroom_media_loop_rtp_forwarded_total", labels: [("loop", "\(index)")],
                        help: "RTP packets forwarded to subscribers by each media loop.")
                    loops.append((counter, 0))
                }
                if counters.rtpForwarded > loops[index].last { loops[index].counter.increment(by: Int64(counters.rtpForwarded - loops[index].last)) }
                loops[index].last = counters.rtpForwarded
            }
        }
        lastDropped.withLock { last in
            if media.handoffsDropped > last.handoffs { handoffsDropped.increment(by: Int64(media.handoffsDropped - last.handoffs)) }
            if media.sendDropped > last.sends { sendDropped.increment(by: Int64(media.sendDropped - last.sends)) }
            last = (media.handoffsDropped, media.sendDropped)
        }
        webhooksPending.set(Double(webhooks.pending))
        lastWebhooks.withLock { last in
            if webhooks.delivered > last.delivered { webhooksDelivered.increment(by: Int64(webhooks.delivered - last.delivered)) }
            if webhooks.failures > last.failures { webhookFailures.increment(by: Int64(webhooks.failures - last.failures)) }
            if webhooks.dropped > last.dropped { webhooksDropped.increment(by: Int64(webhooks.dropped - last.dropped)) }
            last = webhooks
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(4096)
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
            + media.fanOutDelays.exposition(
                name: "liveroom_media_fanout_delay_seconds",
                help: "From a publisher's packet reaching the server to each subscriber's copy being sent, over UDP.")
            + (media.relay?.exposition() ?? "")
            + purchases.exposition(
                name: "liveroom_purchase_answer_seconds",
                help: "From a purchase reaching its room's shop to its answer being handed to the buyer's connection (sold out, an order once stored, busy).")
    }
}

extension PrometheusCollectorRegistry {
    /// A counter named `name` as written (its unit, `_total`, is part of the name).
    fileprivate func counter(_ name: String, labels: [(String, String)] = [], help: String) -> Counter {
        let descriptor = MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
        return labels.isEmpty ? makeCounter(descriptor: descriptor) : makeCounter(descriptor: descriptor, labels: labels)
    }

    fileprivate func gauge(_ name: String, help: String) -> Gauge {
        makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help))
    }
}
