import LiveRoomMedia
import LiveRoomRTP
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// One subscription: a ``PeerTransport`` on which the server sends one remote anchor's
/// audio and video. Video goes through a ``VideoFrameAssembler`` (reorder, NACK, PLI);
/// each audio packet is one Opus frame. Sends receiver reports every second and keeps the
/// counters of `onStatistics`. Confined to the media event loop.
final class SubscribeConnection {
    /// A complete video frame.
    struct VideoFrame {
        var data: [UInt8]
        var isKeyframe: Bool
        var rtpTimestamp: UInt32
        var arrival: ContinuousClock.Instant
        /// The publisher's wall-clock time (Unix seconds) of its capture, from the sender
        /// reports; nil before one came.
        var captured: Double?
        /// The SEI messages the frame carries.
        var sei: [TaggedSEIMessage] = []
    }

    enum Event: ConnectionEvent {
        case send(ByteBuffer, to: TransportAddress)
        case connected
        case selected(TransportAddress)
        case video(VideoFrame)
        /// `captured`: as a video frame's.
        case audio(data: [UInt8], rtpTimestamp: UInt32, arrival: ContinuousClock.Instant, captured: Double?)
        case closed(reason: String)
    }

    let id: MediaEngine.ConnectionID
    let userId: String
    let transport: PeerTransport
    /// The sections we offered, which an ICE restart offers again.
    let offered: [SDPNegotiation.OfferedSection]
    /// Our SSRC as the sender of RTCP feedback.
    let localSSRC: UInt32
    let videoCodec: VideoCodec?
    private let videoPayloadType: UInt8?
    private let audioPayloadType: UInt8?
    /// The SEI header extension id of the video section (VP8 SEI rides there).
    private let seiExtensionID: UInt8?
    private var videoSSRC: UInt32?
    private var audioSSRC: UInt32?
    private var assembler = VideoFrameAssembler()
    private var videoStatistics = ReceiveStatistics(clockRate: 90_000)
    private var audioStatistics = ReceiveStatistics(clockRate: 48_000)
    private var reports = ReportSchedule()
    /// Cumulative counters for statistics.
    private(set) var sample: StatisticsSnapshot.Remote

    init(
        id: MediaEngine.ConnectionID, userId: String, transport: PeerTransport, offered: [SDPNegotiation.OfferedSection] = MediaOffer.subscribeSections(),
        tracks: [NegotiatedTrack], localSSRC: UInt32 = .random(in: 1...UInt32.max)
    ) {
        self.id = id
        self.userId = userId
        self.transport = transport
        self.offered = offered
        self.localSSRC = localSSRC
        let video = tracks.first { $0.kind == .video }
        let audio = tracks.first { $0.kind == .audio }
        videoCodec = video.flatMap(MediaOffer.videoCodec(of:))
        videoPayloadType = video?.payloadType
        audioPayloadType = audio?.payloadType
        seiExtensionID = video?.seiExtensionID
        videoSSRC = video?.remoteSSRCs.first
        audioSSRC = audio?.remoteSSRCs.first
        sample = StatisticsSnapshot.Remote(userId: userId)
    }

    func start(now: ContinuousClock.Instant) -> [Event] {
        map(transport.start(now: now), now: now, wallClock: nil)
    }

    func receive(_ datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant, wallClock: NTPTime) -> [Event] {
        map(transport.receive(datagram, from: source, now: now), now: now, wallClock: wallClock)
    }

    /// Transport timers, assembler timeouts and keyframe requests, receiver reports.
    func tick(now: ContinuousClock.Instant, wallClock: NTPTime) -> [Event] {
        var events = map(transport.handleTimers(now: now), now: now, wallClock: wallClock)
        guard transport.isConnected, !transport.isClosed else { return events }
        if videoPayloadType != nil {
            events += handle(assembler.tick(now: now), now: now, wallClock: wallClock)
        }
        if reports.due(now: now) {
            var blocks: [RTCPReportBlock] = []
            if let ssrc = videoSSRC, let block = videoStatistics.reportBlock(ssrc: ssrc, now: now) { blocks.append(block) }
            if let ssrc = audioSSRC, let block = audioStatistics.reportBlock(ssrc: ssrc, now: now) { blocks.append(block) }
            events += sendRTCP([.receiverReport(RTCPReceiverReport(ssrc: localSSRC, reportBlocks: blocks))])
        }
        return events
    }

    func close(reason: String) -> [Event] {
        map(transport.close(reason: reason), now: nil, wallClock: nil)
    }

    /// Restarts ICE with a new agent (see ``PeerTransport/restartICE(_:local:remote:now:)``).
    func restartICE(_ agent: PeerTransport.ICE, local: ICECredentials, remote: ICECredentials, now: ContinuousClock.Instant) -> [Event] {
        map(transport.restartICE(agent, local: local, remote: remote, now: now), now: now, wallClock: nil)
    }

    private func map(_ events: [PeerTransport.Event], now: ContinuousClock.Instant?, wallClock: NTPTime?) -> [Event] {
        Event.of(
            events,
            rtp: { bytes in
                guard let now, let wallClock else { return [] }
                return receiveRTP(bytes, now: now, wallClock: wallClock)
            },
            rtcp: { bytes in
                if let now { receiveRTCP(bytes, now: now) }
                return []
            })
    }

    private func receiveRTP(_ bytes: [UInt8], now: ContinuousClock.Instant, wallClock: NTPTime) -> [Event] {
        guard let packet = try? RTPPacket.parse(ByteBuffer(bytes: bytes)) else { return [] }
        let header = packet.header
        if header.payloadType == videoPayloadType, let codec = videoCodec {
            if videoSSRC == nil { videoSSRC = header.ssrc }
            guard header.ssrc == videoSSRC else { return [] }
            videoStatistics.record(sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, bytes: bytes.count, arrival: now)
            sample.videoBytes += UInt64(bytes.count)
            let actions = assembler.insert(packet, codec: codec, now: now)
            updateCounters()
            return handle(actions, now: now, wallClock: wallClock)
        }
        if header.payloadType == audioPayloadType {
            if audioSSRC == nil { audioSSRC = header.ssrc }
            guard header.ssrc == audioSSRC, packet.payload.readableBytes > 0 else { return [] }
            audioStatistics.record(sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, bytes: bytes.count, arrival: now)
            sample.audioBytes += UInt64(bytes.count)
            updateCounters()
            let captured = audioStatistics.senderTime(ofRTPTimestamp: header.timestamp)
            return [.audio(data: Array(buffer: packet.payload), rtpTimestamp: header.timestamp, arrival: now, captured: captured)]
        }
        return []
    }

    private func updateCounters() {
        sample.packetsExpected = videoStatistics.expected + audioStatistics.expected
        sample.packetsReceived = videoStatistics.packetsReceived + audioStatistics.packetsReceived
        sample.packetsMissing = assembler.counters.sequenceNumbersNacked + UInt64(max(0, audioStatistics.cumulativeLost))
    }

    private func handle(_ actions: [VideoFrameAssembler.Action], now: ContinuousClock.Instant, wallClock: NTPTime) -> [Event] {
        var events: [Event] = []
        for action in actions {
            switch action {
            case .frame(let frame):
                guard let codec = videoCodec, let data = VideoPayloadFormat.bitstream(of: frame, codec: codec) else { continue }
                sample.videoFrames += 1
                sample.jitterBufferFrames += 1
                sample.jitterBufferDelayTotal += (frame.released - frame.firstArrival).inMilliseconds
                if frame.isKeyframe, let size = try? VideoSize(keyframe: data, codec: codec) {
                    sample.width = size.width
                    sample.height = size.height
                }
                let captured = videoStatistics.senderTime(ofRTPTimestamp: frame.timestamp)
                if let captured {
                    let delay = (wallClock.unixSeconds - captured) * 1000
                    if delay > -1000, delay < 60_000 {
                        sample.point2PointDelayTotal += max(0, delay)
                        sample.point2PointSamples += 1
                    }
                }
                let sei = VideoPayloadFormat.sei(of: frame, bitstream: data, codec: codec, extensionID: seiExtensionID)
                events.append(.video(VideoFrame(data: data, isKeyframe: frame.isKeyframe, rtpTimestamp: frame.timestamp, arrival: frame.firstArrival, captured: captured, sei: sei)))
            case .nack(let sequenceNumbers):
                guard let ssrc = videoSSRC else { continue }
                events += sendRTCP([
                    .receiverReport(RTCPReceiverReport(ssrc: localSSRC)),
                    .genericNACK(RTCPGenericNACK(senderSSRC: localSSRC, mediaSSRC: ssrc, lostSequenceNumbers: sequenceNumbers)),
                ])
            case .requestKeyframe:
                events += sendRTCP([
                    .receiverReport(RTCPReceiverReport(ssrc: localSSRC)),
                    .pictureLossIndication(RTCPPictureLossIndication(senderSSRC: localSSRC, mediaSSRC: videoSSRC ?? 0)),
                ])
            }
        }
        return events
    }

    private func receiveRTCP(_ bytes: [UInt8], now: ContinuousClock.Instant) {
        guard let packets = try? RTCPPacket.parseCompound(ByteBuffer(bytes: bytes)) else { return }
        for case .senderReport(let report) in packets {
            if report.ssrc == videoSSRC {
                videoStatistics.receivedSenderReport(report, at: now)
            } else if report.ssrc == audioSSRC {
                audioStatistics.receivedSenderReport(report, at: now)
            }
        }
    }

    private func sendRTCP(_ packets: [RTCPPacket]) -> [Event] {
        transport.protectRTCP(packets).map { [.send($0.datagram, to: $0.to)] } ?? []
    }
}
