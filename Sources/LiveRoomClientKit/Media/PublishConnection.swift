import LiveRoomMedia
import LiveRoomRTP
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// The publishing peer connection: one ``PeerTransport`` to the server carrying our Opus
/// and video streams. It packetizes encoded frames, keeps the send history, answers NACK
/// with retransmissions and PLI/FIR with keyframe requests, and sends a sender report per
/// stream every second. Confined to the media event loop; the owner does the I/O.
final class PublishConnection {
    /// What the connection asks of its owner.
    enum Event: ConnectionEvent {
        case send(ByteBuffer, to: TransportAddress)
        /// DTLS is up: media may flow.
        case connected
        case selected(TransportAddress)
        /// The server asked for a keyframe (already rate-limited).
        case keyframeRequested
        case closed(reason: String)
    }

    let id: MediaEngine.ConnectionID
    let transport: PeerTransport
    /// The sections we offered, which an ICE restart offers again.
    let offered: [SDPNegotiation.OfferedSection]
    let videoCodec: VideoCodec
    private(set) var audio: OutboundRTPStream?
    private(set) var video: OutboundRTPStream?
    /// The id of the SEI header extension the server agreed to (VP8 SEI rides there).
    private var seiExtensionID: UInt8?
    private var vp8Packetizer = VP8Packetizer(maxPayloadSize: PublishConnection.maxPayloadSize)
    private let h264Packetizer = H264Packetizer(maxPayloadSize: PublishConnection.maxPayloadSize)
    private var keyframeRequests = KeyframeRequestLimiter(interval: .milliseconds(500))
    private var reports = ReportSchedule()
    /// The latest round-trip time from a report block about our streams.
    private(set) var roundTripTime: Duration?
    /// The latest loss the server reported for our streams, in percent.
    private(set) var upLoss: Double = 0
    private(set) var nacksReceived = 0
    private(set) var keyframeRequestsReceived = 0

    /// The largest RTP payload: leaves room for headers and the SRTP tag in a 1280-byte MTU.
    static let maxPayloadSize = 1200

    /// The fewest packets (at most one per frame byte) a VP8 frame of `frameBytes` carrying
    /// `chunks` SEI chunks can be cut into with each packet's payload and chunks within
    /// ``maxPayloadSize``; nil when no cut fits.
    static func packetCount(frameBytes: Int, chunks: Int, descriptor: Int) -> Int? {
        let chunkBytes = SEIHeaderExtension.chunkSize + 4 + 2
        var count = max(1, (chunks + 3) / 4)
        while count <= frameBytes {
            let payload = (frameBytes + count - 1) / count + descriptor
            let carried = (chunks + count - 1) / count * chunkBytes + 4
            if payload + carried <= maxPayloadSize + 20 { return count }
            count += 1
        }
        return nil
    }

    init(
        id: MediaEngine.ConnectionID, transport: PeerTransport, offered: [SDPNegotiation.OfferedSection], tracks: [NegotiatedTrack], videoCodec: VideoCodec,
        mediaStart: ContinuousClock.Instant
    ) {
        self.id = id
        self.transport = transport
        self.offered = offered
        self.videoCodec = videoCodec
        for track in tracks {
            guard let ssrc = track.localSSRC else { continue }
            let stream = OutboundRTPStream(ssrc: ssrc, payloadType: track.payloadType, clockRate: track.codec.clockRate, mediaStart: mediaStart)
            switch track.kind {
            case .audio: audio = stream
            case .video:
                video = stream
                seiExtensionID = track.seiExtensionID
            }
        }
    }

    var isConnected: Bool { transport.isConnected }

    func start(now: ContinuousClock.Instant) -> [Event] {
        map(transport.start(now: now), now: now)
    }

    func receive(_ datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant, wallClock: NTPTime) -> [Event] {
        map(transport.receive(datagram, from: source, now: now), now: now, wallClock: wallClock)
    }

    /// Runs transport timers and sends sender reports every second.
    func tick(now: ContinuousClock.Instant, wallClock: NTPTime) -> [Event] {
        var events = map(transport.handleTimers(now: now), now: now)
        guard transport.isConnected, !transport.isClosed else { return events }
        if reports.due(now: now) {
            var packets: [RTCPPacket] = []
            var ssrcs: [UInt32] = []
            if var stream = audio, stream.packetCount > 0 {
                packets.append(.senderReport(stream.senderReport(now: now, wallClock: wallClock)))
                ssrcs.append(stream.ssrc)
                audio = stream
            }
            if var stream = video, stream.packetCount > 0 {
                packets.append(.senderReport(stream.senderReport(now: now, wallClock: wallClock)))
                ssrcs.append(stream.ssrc)
                video = stream
            }
            if !packets.isEmpty {
                packets.append(.sourceDescription(RTCPSourceDescription(chunks: ssrcs.map { .init(ssrc: $0, items: [.cname("liveroom")]) })))
                events += sendRTCP(packets)
            }
        }
        return events
    }

    /// Packetizes and sends one encoded video frame, carrying `sei`: an H.264 frame gets an SEI
    /// NAL unit before its first slice; a VP8 frame carries it in the SEI header extension,
    /// its chunks spread over packets that each stay within the usual size.
    /// - Returns: the packets to send, and whether `sei` went with them.
    func send(video frame: EncodedVideoFrame, sei: [TaggedSEIMessage] = []) -> (events: [Event], carriedSEI: Bool) {
        guard var stream = video, transport.isConnected else { return ([], false) }
        var data = frame.data
        var chunks: [[UInt8]] = []
        var carried = false
        if !sei.isEmpty {
            let unit = H264SEI.nalUnit(sei)
            switch videoCodec {
            case .h264:
                data = H264SEI.inserting(unit, into: data)
                carried = data.count > frame.data.count
            case .vp8:
                chunks = seiExtensionID == nil ? [] : SEIHeaderExtension.chunks(of: unit)
                carried = !chunks.isEmpty
            }
        }
        // A VP8 frame's chunks spread over its packets, each packet within the usual size; a frame
        // too small for them leaves its SEI to the next frame.
        var packetCount: Int?
        if !chunks.isEmpty {
            packetCount = Self.packetCount(frameBytes: data.count, chunks: chunks.count, descriptor: vp8Packetizer.descriptorSize)
            if packetCount == nil {
                chunks = []
                carried = false
            }
        }
        let payloads: [ByteBuffer]
        do {
            switch videoCodec {
            case .vp8: payloads = try vp8Packetizer.packetize(frame: ByteBuffer(bytes: data), count: packetCount)
            case .h264: payloads = try h264Packetizer.packetize(annexB: ByteBuffer(bytes: data))
            }
        } catch {
            return ([], false)
        }
        var extensions: [RTPHeaderExtension] = []
        if let id = seiExtensionID, !chunks.isEmpty {
            let perPacket = (chunks.count + payloads.count - 1) / payloads.count
            for start in stride(from: 0, to: chunks.count, by: perPacket) {
                let elements = chunks[start..<min(start + perPacket, chunks.count)].map { RTPHeaderExtension.Element(id: id, data: $0) }
                extensions.append(.twoByte(appBits: 0, elements))
            }
        }
        let packets = stream.packets(payloads: payloads, pts: frame.pts, marker: true, extensions: extensions)
        video = stream
        return (packets.compactMap(protect), carried)
    }

    /// Sends one Opus packet.
    func send(audio frame: EncodedAudioFrame) -> [Event] {
        guard var stream = audio, transport.isConnected else { return [] }
        let packets = stream.packets(payloads: [ByteBuffer(bytes: frame.data)], pts: frame.pts, marker: false)
        audio = stream
        return packets.compactMap(protect)
    }

    func close(reason: String) -> [Event] {
        map(transport.close(reason: reason), now: nil)
    }

    /// Restarts ICE with a new agent (see ``PeerTransport/restartICE(_:local:remote:now:)``).
    func restartICE(_ agent: PeerTransport.ICE, local: ICECredentials, remote: ICECredentials, now: ContinuousClock.Instant) -> [Event] {
        map(transport.restartICE(agent, local: local, remote: remote, now: now), now: now)
    }

    private func protect(_ packet: [UInt8]) -> Event? {
        var bytes = packet
        guard let protected = transport.protectRTP(&bytes), let address = transport.remoteAddress else { return nil }
        return .send(protected, to: address)
    }

    private func sendRTCP(_ packets: [RTCPPacket]) -> [Event] {
        transport.protectRTCP(packets).map { [.send($0.datagram, to: $0.to)] } ?? []
    }

    private func map(_ events: [PeerTransport.Event], now: ContinuousClock.Instant?, wallClock: NTPTime? = nil) -> [Event] {
        // The server sends no media on a publishing connection.
        Event.of(events, rtp: { _ in [] }, rtcp: { bytes in now.map { handleRTCP(bytes, now: $0, wallClock: wallClock) } ?? [] })
    }

    private func handleRTCP(_ bytes: [UInt8], now: ContinuousClock.Instant, wallClock: NTPTime?) -> [Event] {
        guard let packets = try? RTCPPacket.parseCompound(ByteBuffer(bytes: bytes)) else { return [] }
        var events: [Event] = []
        var wantsKeyframe = false
        for packet in packets {
            switch packet {
            case .genericNACK(let nack):
                nacksReceived += 1
                if var stream = video, nack.mediaSSRC == stream.ssrc {
                    let packets = stream.retransmissions(of: nack.lostSequenceNumbers)
                    video = stream
                    events += packets.compactMap(protect)
                } else if var stream = audio, nack.mediaSSRC == stream.ssrc {
                    let packets = stream.retransmissions(of: nack.lostSequenceNumbers)
                    audio = stream
                    events += packets.compactMap(protect)
                }
            case .pictureLossIndication(let pli):
                if pli.mediaSSRC == video?.ssrc || pli.mediaSSRC == 0 { wantsKeyframe = true }
            case .fullIntraRequest(let fir):
                if fir.entries.contains(where: { $0.ssrc == video?.ssrc }) || fir.entries.isEmpty { wantsKeyframe = true }
            case .receiverReport(let report):
                noteReportBlocks(report.reportBlocks, wallClock: wallClock)
            case .senderReport(let report):
                noteReportBlocks(report.reportBlocks, wallClock: wallClock)
            default:
                break
            }
        }
        if wantsKeyframe {
            keyframeRequestsReceived += 1
            if keyframeRequests.request(now: now) { events.append(.keyframeRequested) }
        }
        return events
    }

    private func noteReportBlocks(_ blocks: [RTCPReportBlock], wallClock: NTPTime?) {
        let ours = blocks.filter { $0.ssrc == audio?.ssrc || $0.ssrc == video?.ssrc }
        guard !ours.isEmpty else { return }
        upLoss = ours.map { Double($0.fractionLost) * 100 / 256 }.max() ?? 0
        if let wallClock {
            for block in ours {
                if let rtt = ReceiveStatistics.roundTripTime(of: block, arrival: wallClock) { roundTripTime = rtt }
            }
        }
    }
}
