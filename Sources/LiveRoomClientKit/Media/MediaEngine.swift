import Foundation
import LiveRoomProtocol
import LiveRoomMedia
import LiveRoomRTP
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// Controls a running publish pipeline (``PublishPipeline``, or nothing in tests).
protocol PublishPipelineControl: AnyObject {
    func requestKeyframe()
    func setMuted(video: Bool?, audio: Bool?)
    func stop()
}

extension PublishPipeline: PublishPipelineControl {}

/// The client's media plane: the publishing connection, one subscription per remote
/// anchor, recordings and statistics. Confined to one event loop and free of I/O: it
/// hands datagrams, events and notifications to its ``Environment``, so tests run it
/// against in-memory server transports.
final class MediaEngine {
    /// Names a peer connection and its socket; the I/O layer picks a fresh one per connection.
    typealias ConnectionID = Int

    /// Things the signaling side must learn.
    enum Notification: Sendable {
        case publishClosed(reason: String)
        case subscriptionClosed(userId: String, reason: String)
        /// A connection's path stopped answering: send `restartIce` with this offer for the
        /// subscription to `userId`, or (nil) the publishing connection.
        case iceRestart(userId: String?, offer: String)
    }

    /// A peer connection an ICE restart is for: the publishing one, or a subscription.
    enum RestartTarget: Hashable {
        case publish
        case subscription(String)

        var userId: String? {
            if case .subscription(let userId) = self { return userId }
            return nil
        }
    }

    struct Environment {
        /// Writes a datagram on the connection's socket.
        var send: (ConnectionID, ByteBuffer, TransportAddress) -> Void
        /// The connection is closed: its socket may go.
        var release: (ConnectionID) -> Void
        /// Prints an event (onFirstVideoFrame, onStatistics).
        var event: (JSONValue) -> Void
        var notify: (Notification) -> Void
        /// Starts encoding from `start`, muted as given; nil publishes nothing (tests feed frames).
        var makePipeline: (_ start: ContinuousClock.Instant, _ videoMuted: Bool, _ audioMuted: Bool) -> PublishPipelineControl?
        /// The wall clock.
        var wallClock: () -> NTPTime
    }

    let userId: String
    let options: MediaOptions
    let certificate: ClientCertificate
    private let environment: Environment
    private var pendingPublish: (credentials: ICECredentials, sections: [SDPNegotiation.OfferedSection])?
    private(set) var publisher: PublishConnection?
    private var pipeline: PublishPipelineControl?
    private var pendingSubscriptions: [String: (credentials: ICECredentials, sections: [SDPNegotiation.OfferedSection])] = [:]
    private(set) var subscriptions: [String: SubscribeConnection] = [:]
    private var recordings: [String: (writer: RecordingWriter, timeline: RecordingTimeline)] = [:]
    private var firstFrameReported: Set<String> = []
    private var videoMuted = false
    private var audioMuted = false
    private var calculator = StatisticsCalculator()
    private var nextStatistics: ContinuousClock.Instant?
    /// Cleared when the user has left the room: nothing is reported after onExitRoom.
    private var reportsStatistics = true
    /// SEI messages waiting to ride on our next video frames, and on how many frames each still goes.
    private var pendingSEI: [(message: TaggedSEIMessage, frames: Int)] = []
    private var nextSEISequence = UInt32.random(in: 0...UInt32.max)
    /// Our SEI messages, and messages received, remembered to report each once.
    private var seiSeen = SEIDeduplicator()
    /// Decoders of received video, with `frameCodes` only.
    private var decoders: [String: any VideoDecoding] = [:]
    /// The most SEI messages that wait for frames at once, and that ride on one frame.
    static let maxPendingSEI = 30
    static let maxSEIPerFrame = 3
    /// ICE restarts asked for and not yet answered: our new credentials, and when we asked.
    private var restarts: [RestartTarget: (credentials: ICECredentials, asked: ContinuousClock.Instant)] = [:]
    /// How often onStatistics is printed.
    static let statisticsInterval = Duration.seconds(2)
    /// How long a connected path may leave consent checks unanswered (two checks), with no
    /// media coming either, before ICE restarts, and how long a restart waits for its answer before it is asked again.
    static let restartAfter = Duration.seconds(6)

    init(userId: String, options: MediaOptions, certificate: ClientCertificate, environment: Environment) {
        self.userId = userId
        self.options = options
        self.certificate = certificate
        self.environment = environment
    }

    // MARK: Publishing

    /// A fresh publish offer (sendonly Opus and video).
    func makePublishOffer() -> String {
        let credentials = ICECredentials.random()
        let sections = MediaOffer.publishSections(
            videoCodec: options.videoCodec, audioSSRC: .random(in: 1...UInt32.max), videoSSRC: .random(in: 1...UInt32.max))
        pendingPublish = (credentials, sections)
        return SDPNegotiation.offer(
            sections, local: MediaOffer.localDescription(credentials: credentials, certificate: certificate),
            sessionID: .random(in: 1...UInt64(Int64.max)), streamID: userId
        ).serialize()
    }

    /// Starts the publishing transport with the server's answer.
    func startPublishing(answer: String, connection id: ConnectionID, now: ContinuousClock.Instant) throws(NegotiationError) {
        guard let pending = pendingPublish else { throw NegotiationError("no publish offer is waiting for an answer") }
        pendingPublish = nil
        let (transport, tracks) = try makeTransport(credentials: pending.credentials, sections: pending.sections, answer: answer, now: now)
        stopPublishing(now: now)
        let connection = PublishConnection(
            id: id, transport: transport, offered: pending.sections, tracks: tracks, videoCodec: options.videoCodec, mediaStart: now)
        publisher = connection
        execute(connection.start(now: now), now: now)
    }

    /// Stops encoding and closes the publishing transport (close_notify).
    func stopPublishing(now: ContinuousClock.Instant) {
        pendingPublish = nil
        restarts[.publish] = nil
        pendingSEI.removeAll()
        pipeline?.stop()
        pipeline = nil
        guard let connection = publisher else { return }
        publisher = nil
        for case .send(let bytes, let to) in connection.close(reason: "unpublished") { environment.send(connection.id, bytes, to) }
        environment.release(connection.id)
    }

    /// An encoded frame from the pipeline.
    func publish(_ output: PublishPipeline.Output, now: ContinuousClock.Instant) {
        guard let connection = publisher else { return }
        switch output {
        case .video(let frame):
            guard !videoMuted else { return }
            let riding = pendingSEI.prefix(Self.maxSEIPerFrame).map(\.message)
            let (events, carried) = connection.send(video: frame, sei: riding)
            if carried, options.frameCodes {
                let index = Int((frame.pts * Int64(options.fps) + 45_000) / 90_000) & 0xFFFF
                for message in riding {
                    environment.event([
                        "event": "onSEIMsgSent", "messageHex": .string(message.message.data.hexString), "frameCode": .number(Double(index)),
                    ])
                }
            }
            if carried {
                for index in pendingSEI.indices.prefix(riding.count) { pendingSEI[index].frames -= 1 }
                pendingSEI.removeAll { $0.frames <= 0 }
            }
            execute(events, now: now)
        case .audio(let frame):
            guard !audioMuted else { return }
            execute(connection.send(audio: frame), now: now)
        }
    }

    /// TRTC's `sendSEIMsg`: `data` rides on our next `repeatCount` video frames with the
    /// payload type of `--sei-payload-type`, tagged with our number for it and the time.
    func sendSEI(data: [UInt8], repeatCount: Int, wallClockMilliseconds: UInt64) throws(LiveRoomError) {
        guard let connection = publisher, connection.video != nil, pipeline != nil, !videoMuted else {
            throw LiveRoomError(
                ErrorCode.seiNeedsVideo,
                videoMuted ? "SEI rides on video, and your video is muted" : "SEI rides on video, and you are not publishing video")
        }
        guard pendingSEI.count < Self.maxPendingSEI else {
            throw LiveRoomError(ErrorCode.customMessageRateLimited, "SEI message refused: \(Self.maxPendingSEI) are still waiting for video frames")
        }
        let payloadType = options.seiPayloadType
        let message = SEIMessage(payloadType: payloadType, uuid: payloadType == 5 ? SEIMessage.defaultUUID : nil, data: data)
        let tag = SEITag(sequence: nextSEISequence, sentAtMilliseconds: wallClockMilliseconds)
        nextSEISequence &+= 1
        pendingSEI.append((TaggedSEIMessage(message: message, tag: tag), repeatCount))
    }

    /// muteLocalVideo / muteLocalAudio: stop or resume sending that kind.
    func setMuted(_ kind: MediaKind, _ muted: Bool) {
        switch kind {
        case .video:
            videoMuted = muted
            pipeline?.setMuted(video: muted, audio: nil)
        case .audio:
            audioMuted = muted
            pipeline?.setMuted(video: nil, audio: muted)
        }
    }

    // MARK: Subscribing

    /// A fresh subscribe offer for `userId` (recvonly Opus, VP8 and H.264).
    func makeSubscribeOffer(userId remote: String) -> String {
        let credentials = ICECredentials.random()
        let sections = MediaOffer.subscribeSections()
        pendingSubscriptions[remote] = (credentials, sections)
        return SDPNegotiation.offer(
            sections, local: MediaOffer.localDescription(credentials: credentials, certificate: certificate),
            sessionID: .random(in: 1...UInt64(Int64.max)), streamID: userId
        ).serialize()
    }

    func startSubscription(userId remote: String, answer: String, connection id: ConnectionID, now: ContinuousClock.Instant) throws(NegotiationError) {
        guard let pending = pendingSubscriptions.removeValue(forKey: remote) else {
            throw NegotiationError("no subscribe offer for \(remote) is waiting for an answer")
        }
        let (transport, tracks) = try makeTransport(credentials: pending.credentials, sections: pending.sections, answer: answer, now: now)
        closeSubscription(userId: remote, now: now)
        let connection = SubscribeConnection(id: id, userId: remote, transport: transport, offered: pending.sections, tracks: tracks)
        subscriptions[remote] = connection
        recordings[remote]?.timeline.restart()
        execute(connection.start(now: now), from: connection, now: now)
    }

    func closeSubscription(userId remote: String, now: ContinuousClock.Instant) {
        pendingSubscriptions[remote] = nil
        restarts[.subscription(remote)] = nil
        decoders[remote] = nil
        guard let connection = subscriptions.removeValue(forKey: remote) else { return }
        for case .send(let bytes, let to) in connection.close(reason: "unsubscribed") { environment.send(connection.id, bytes, to) }
        environment.release(connection.id)
    }

    // MARK: ICE restarts

    /// Asks for an ICE restart when a connected path has stopped answering consent checks (a
    /// network change, UDP blocked on the way), and again while no answer comes.
    private func restartIfSilent(_ transport: PeerTransport, offered: [SDPNegotiation.OfferedSection], target: RestartTarget, now: ContinuousClock.Instant) {
        guard transport.isConnected, !transport.isClosed, transport.checksUnanswered(for: Self.restartAfter, now: now) else { return }
        if let asked = restarts[target]?.asked, now - asked < Self.restartAfter { return }
        let credentials = ICECredentials.random()
        restarts[target] = (credentials, now)
        let offer = SDPNegotiation.offer(
            offered, local: MediaOffer.localDescription(credentials: credentials, certificate: certificate),
            sessionID: .random(in: 1...UInt64(Int64.max)), streamID: userId
        ).serialize()
        var event: [String: JSONValue] = ["event": "onIceRestart", "connection": target.userId == nil ? "publish" : "subscribe"]
        if let remote = target.userId { event["userId"] = .string(remote) }
        environment.event(.object(event))
        environment.notify(.iceRestart(userId: target.userId, offer: offer))
    }

    /// The server's answer to our ICE restart: a new agent checks its candidates again (UDP
    /// first, then ICE-TCP) while DTLS and SRTP carry on.
    func completeICERestart(userId remote: String?, answer: String, now: ContinuousClock.Instant) throws(NegotiationError) {
        let target: RestartTarget = remote.map { .subscription($0) } ?? .publish
        guard let restart = restarts.removeValue(forKey: target) else { throw NegotiationError("no ICE restart is waiting for an answer") }
        let server = try TransportDescription(of: try Self.parseAnswer(answer, what: "the ICE restart answer"))
        let remoteCredentials = ICECredentials(ufrag: server.iceUfrag, pwd: server.icePwd)
        let agent = ICEControllingAgent(
            local: restart.credentials, remote: remoteCredentials, remoteAddresses: try reachableAddresses(of: server), now: now)
        switch target {
        case .publish:
            guard let connection = publisher else { return }
            execute(connection.restartICE(.controlling(agent), local: restart.credentials, remote: remoteCredentials, now: now), now: now)
        case .subscription(let remote):
            guard let connection = subscriptions[remote] else { return }
            execute(
                connection.restartICE(.controlling(agent), local: restart.credentials, remote: remoteCredentials, now: now), from: connection, now: now)
        }
    }

    // MARK: Datagrams and timers

    func receive(_ datagram: ByteBuffer, connection id: ConnectionID, from source: TransportAddress, now: ContinuousClock.Instant) {
        let wall = environment.wallClock()
        if let connection = publisher, connection.id == id {
            execute(connection.receive(datagram, from: source, now: now, wallClock: wall), now: now)
        } else if let connection = subscriptions.values.first(where: { $0.id == id }) {
            execute(connection.receive(datagram, from: source, now: now, wallClock: wall), from: connection, now: now)
        }
    }

    /// Runs every ~10 ms: transport timers, RTCP, assembler timeouts, statistics.
    func tick(now: ContinuousClock.Instant) {
        let wall = environment.wallClock()
        if let connection = publisher {
            execute(connection.tick(now: now, wallClock: wall), now: now)
            restartIfSilent(connection.transport, offered: connection.offered, target: .publish, now: now)
        }
        for connection in Array(subscriptions.values) {
            execute(connection.tick(now: now, wallClock: wall), from: connection, now: now)
            restartIfSilent(connection.transport, offered: connection.offered, target: .subscription(connection.userId), now: now)
        }
        let due = nextStatistics ?? now + Self.statisticsInterval
        nextStatistics = due
        if reportsStatistics, now >= due {
            nextStatistics = now + Self.statisticsInterval
            environment.event(calculator.event(for: statisticsSnapshot(now: now)))
        }
    }

    func stopStatistics() {
        reportsStatistics = false
    }

    func statisticsSnapshot(now: ContinuousClock.Instant) -> StatisticsSnapshot {
        var snapshot = StatisticsSnapshot(time: now)
        if let connection = publisher, connection.isConnected {
            snapshot.local = .init(
                width: options.width, height: options.height, videoFrames: connection.video?.frameCount ?? 0,
                videoBytes: connection.video?.bytesSent ?? 0, audioBytes: connection.audio?.bytesSent ?? 0)
            snapshot.roundTripTime = connection.roundTripTime?.inMilliseconds
            snapshot.upLoss = connection.upLoss
        }
        snapshot.remotes = subscriptions.values.map(\.sample)
        // Without RTCP report blocks (the SFU sends none), ICE consent checks measure the RTT.
        if snapshot.roundTripTime == nil {
            let transports = [publisher?.transport].compactMap { $0 } + subscriptions.values.map(\.transport)
            snapshot.roundTripTime = transports.compactMap(\.roundTripTime).min()?.inMilliseconds
        }
        return snapshot
    }

    /// Closes every transport (close_notify) and stops encoding; returns the recordings to
    /// finish off the event loop.
    func shutdown(now: ContinuousClock.Instant) -> [RecordingWriter] {
        stopPublishing(now: now)
        for remote in Array(subscriptions.keys) { closeSubscription(userId: remote, now: now) }
        let writers = recordings.values.map(\.writer)
        recordings = [:]
        return writers
    }

    // MARK: Carrying out

    private func makeTransport(
        credentials: ICECredentials, sections: [SDPNegotiation.OfferedSection], answer: String, now: ContinuousClock.Instant
    ) throws(NegotiationError) -> (PeerTransport, [NegotiatedTrack]) {
        let description = try Self.parseAnswer(answer, what: "the answer")
        let remote = try TransportDescription(of: description)
        let tracks = try SDPNegotiation.tracks(ofAnswer: description, offered: sections)
        let addresses = try reachableAddresses(of: remote)
        let local = MediaOffer.localDescription(credentials: credentials, certificate: certificate)
        let agent = ICEControllingAgent(
            local: credentials, remote: ICECredentials(ufrag: remote.iceUfrag, pwd: remote.icePwd), remoteAddresses: addresses, now: now)
        let transport = try PeerTransport(ice: .controlling(agent), certificate: certificate.certificate, localDescription: local, remoteDescription: remote)
        return (transport, tracks)
    }

    private static func parseAnswer(_ text: String, what: String) throws(NegotiationError) -> SessionDescription {
        do {
            return try SessionDescription.parse(text)
        } catch {
            throw NegotiationError("\(what) is not valid SDP: \(error)")
        }
    }

    /// The server's candidates we may use (`--ice-transport`), leaving out those this machine
    /// has no route to: a send to one fails, and the failed send would close the connection's socket.
    private func reachableAddresses(of server: TransportDescription) throws(NegotiationError) -> [TransportAddress] {
        let candidates = try MediaOffer.serverAddresses(of: server, policy: options.iceTransport)
        let reachable = candidates.filter(MediaOffer.hasRoute)
        return reachable.isEmpty ? candidates : reachable
    }

    private func execute(_ events: [PublishConnection.Event], now: ContinuousClock.Instant) {
        for event in events {
            switch event {
            case .send(let bytes, let to):
                if let id = publisher?.id { environment.send(id, bytes, to) }
            case .connected:
                if let connection = publisher { reportConnected(connection.transport, connection: "publish", userId: userId) }
                guard options.publish != nil, pipeline == nil, let start = publisher?.video?.mediaStart ?? publisher?.audio?.mediaStart else { continue }
                pipeline = environment.makePipeline(start, videoMuted, audioMuted)
            case .selected:
                // A new path after an ICE restart (the first one comes before DTLS is up).
                if let connection = publisher, connection.transport.isConnected {
                    reportConnected(connection.transport, connection: "publish", userId: userId)
                }
            case .keyframeRequested:
                pipeline?.requestKeyframe()
            case .closed(let reason):
                pipeline?.stop()
                pipeline = nil
                if let id = publisher?.id { environment.release(id) }
                publisher = nil
                environment.notify(.publishClosed(reason: reason))
            }
        }
    }

    private func execute(_ events: [SubscribeConnection.Event], from connection: SubscribeConnection, now: ContinuousClock.Instant) {
        let remote = connection.userId
        for event in events {
            switch event {
            case .send(let bytes, let to):
                environment.send(connection.id, bytes, to)
            case .connected:
                reportConnected(connection.transport, connection: "subscribe", userId: remote)
            case .selected:
                if connection.transport.isConnected { reportConnected(connection.transport, connection: "subscribe", userId: remote) }
            case .video(let frame):
                guard let codec = connection.videoCodec else { continue }
                let code = options.frameCodes ? frameCode(of: frame, codec: codec, from: remote) : nil
                for message in frame.sei where seiSeen.isNew(message, from: remote, now: now) {
                    var event = Self.seiEvent(message, from: remote).objectValue ?? [:]
                    if let code { event["frameCode"] = .number(Double(code)) }
                    environment.event(.object(event))
                }
                if frame.isKeyframe, !firstFrameReported.contains(remote), let size = try? VideoSize(keyframe: frame.data, codec: codec) {
                    firstFrameReported.insert(remote)
                    environment.event([
                        "event": "onFirstVideoFrame", "userId": .string(remote),
                        "width": .number(Double(size.width)), "height": .number(Double(size.height)),
                    ])
                }
                record(remote) { writer, timeline in
                    guard let pts = timeline.pts(kind: .video, timestamp: frame.rtpTimestamp, arrival: frame.arrival, captured: frame.captured) else { return }
                    writer.writeVideo(EncodedVideoFrame(codec: codec, data: frame.data, isKeyframe: frame.isKeyframe, pts: pts))
                }
            case .audio(let data, let timestamp, let arrival, let captured):
                record(remote) { writer, timeline in
                    guard let pts = timeline.pts(kind: .audio, timestamp: timestamp, arrival: arrival, captured: captured) else { return }
                    writer.writeAudio(EncodedAudioFrame(data: data, pts: pts, duration: 960))
                }
            case .closed(let reason):
                if subscriptions[remote] === connection { subscriptions[remote] = nil }
                environment.release(connection.id)
                environment.notify(.subscriptionClosed(userId: remote, reason: reason))
            }
        }
    }

    /// onRecvSEIMsg, as TRTC names it: the sender, the message (as text when it is UTF-8) and
    /// its bytes in hex, its payload type (and UUID for type 5).
    static func seiEvent(_ tagged: TaggedSEIMessage, from userId: String) -> JSONValue {
        let message = tagged.message
        var event: [String: JSONValue] = [
            "event": "onRecvSEIMsg", "userId": .string(userId), "payloadType": .number(Double(message.payloadType)),
            "messageHex": .string(message.data.hexString),
        ]
        if let text = String(validating: message.data, as: UTF8.self) { event["message"] = .string(text) }
        if let uuid = message.uuid { event["uuid"] = .string(uuid.hexString) }
        return .object(event)
    }

    /// Decodes a received frame (with `frameCodes` only) and reads the frame code it shows.
    private func frameCode(of frame: SubscribeConnection.VideoFrame, codec: VideoCodec, from remote: String) -> Int? {
        do {
            if decoders[remote] == nil {
                decoders[remote] = switch codec {
                case .vp8: try VP8Decoder()
                case .h264: try H264Decoder()
                }
            }
            let pictures = try decoders[remote]?.decode(EncodedVideoFrame(codec: codec, data: frame.data, isKeyframe: frame.isKeyframe, pts: 0))
            return pictures?.last.map(FrameCodeSource.read)
        } catch {
            return nil
        }
    }

    /// onMediaConnected: a peer connection is up, over UDP or ICE-TCP, to this server address.
    private func reportConnected(_ transport: PeerTransport, connection: String, userId: String) {
        guard let address = transport.remoteAddress else { return }
        environment.event([
            "event": "onMediaConnected", "connection": .string(connection), "userId": .string(userId),
            "transport": .string(address.transport.rawValue), "address": .string("\(address)"),
        ])
    }

    private func record(_ remote: String, _ body: (RecordingWriter, inout RecordingTimeline) -> Void) {
        guard let directory = options.recordDirectory else { return }
        var recording = recordings[remote] ?? (
            RecordingWriter(
                label: remote, path: { _ in RecordingWriter.matroskaPath(directory: directory, userId: remote) },
                onError: { path, error in FileHandle.standardError.write(Data("liveroom: recording \(path) failed: \(error)\n".utf8)) }),
            RecordingTimeline()
        )
        body(recording.writer, &recording.timeline)
        recordings[remote] = recording
    }
}
