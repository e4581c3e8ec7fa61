import HTTPTypes
import HummingbirdWSClient
import HummingbirdWebSocket
import LiveRoomCluster
import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOCore
import Synchronization

/// Relays one client's signaling connection to its room's home node over a node-to-node
/// WebSocket: every text frame both ways, unchanged, so the client talks to the home node's
/// room as if connected there. The two connections close together. What waits to go to the
/// home node is bounded (``maxPendingBytes``); what goes to the client is written with
/// backpressure, so a client that does not read stops the relay reading from the home node,
/// whose own outbox limit then closes the relay.
enum NodeRelay {
    /// Most bytes of client frames that may wait for the home node; past it the client is closed.
    static let maxPendingBytes = 1 << 20
    /// Largest frame the home node may send through the relay.
    static let maxHomeFrameSize = 1 << 22

    /// How a relay ended.
    enum Outcome: Sendable, Equatable {
        /// It ran; both connections are closed.
        case relayed
        /// The home node could not be reached; nothing of the client's was read beyond `first`,
        /// and the client's connection is open.
        case unreachable
    }

    /// Runs the relay until either side closes. `first` is the client's first frame (its
    /// enterRoom), `messages` the rest of what the client sends. The home node's WebSocket is
    /// opened first: when it cannot be, the client is left as it was (``Outcome/unreachable``).
    static func run(
        first: String, messages: inout WebSocketInboundMessageStream.AsyncIterator, outbound: WebSocketOutboundWriter, channel: any Channel,
        home: NodeRegistration, from nodeId: String, token: String, clientAddress: String, media: MediaService? = nil, logger: Logger
    ) async -> Outcome {
        guard let url = ClusterRouting.signalingWebSocketURL(home.signalingURL) else {
            logger.warning("Cluster home node has an unusable signaling URL", metadata: [LogKey.node: "\(home.nodeId)", LogKey.url: "\(home.signalingURL)"])
            return .unreachable
        }
        var headers = HTTPFields()
        headers[HTTPField.Name(ClusterRouting.tokenHeader)!] = token
        headers[HTTPField.Name(ClusterRouting.nodeHeader)!] = nodeId
        headers[HTTPField.Name(ClusterRouting.clientAddressHeader)!] = clientAddress
        let (toHome, toHomeInput) = AsyncStream<String>.makeStream()
        let (opened, openedInput) = AsyncStream<Bool>.makeStream()
        let pending = PendingBytes()
        toHomeInput.yield(first)
        // The client's media connections on this node, made when the home node asks (NodeMediaFrame).
        let owner = media?.newRelayOwner() ?? 0
        let homeMedia = home.mediaAddresses.lazy.compactMap(NodeMediaRelay.address).first
        @Sendable func toHomeNode(_ frame: NodeMediaFrame) {
            let text = NodeMessage.media(frame).text
            _ = pending.add(text.utf8.count)
            toHomeInput.yield(text)
        }
        let relayed = media.map { RelayedMedia(media: $0, owner: owner, homeMedia: homeMedia, home: home, logger: logger, reply: toHomeNode) }
        defer { media?.close(owner: owner) }
        logger.debug("Signaling relayed to the room's home node", metadata: [LogKey.node: "\(home.nodeId)", LogKey.url: "\(url)"])

        // Set when the wait for the home node is given up: the client's connection is not the link's to close then.
        let abandoned = SharedFlag()
        let link = Task {
            await linkHome(
                url: url, headers: headers, home: home, toHome: toHome, pending: pending, opened: openedInput, outbound: outbound,
                channel: channel, relayed: relayed, abandoned: abandoned, logger: logger)
        }

        // Nothing more is read from the client until the home node answered (within 5 s).
        let giveUp = Task {
            try? await Task.sleep(for: .seconds(5))
            openedInput.yield(false)
        }
        var isOpen = false
        for await value in opened {
            isOpen = value
            break
        }
        giveUp.cancel()
        guard isOpen else {
            abandoned.set()
            link.cancel()
            toHomeInput.finish()
            await link.value
            return .unreachable
        }

        do {
            while let message = try await messages.next() {
                // Only the home node speaks for this node's media.
                guard case .text(let text) = message, !NodeMessage.isNodeMessage(text) else { continue }
                if pending.add(text.utf8.count) > maxPendingBytes {
                    logger.info("Relayed client closed: it sends faster than the home node takes", metadata: [LogKey.node: "\(home.nodeId)"])
                    break
                }
                toHomeInput.yield(text)
            }
        } catch {
            logger.debug("Relayed client connection failed", metadata: [LogKey.error: "\(error)"])
        }
        toHomeInput.finish()
        // The client is gone (or over its limit): the home side closes too, within a bound.
        let deadline = Task {
            try? await Task.sleep(for: .seconds(5))
            link.cancel()
        }
        await link.value
        deadline.cancel()
        try? await channel.close()
        return .relayed
    }

    /// The home node's side of a relay: opens its WebSocket (saying so on `opened`), passes
    /// `toHome` to it and its frames to the client (the home node's media requests to
    /// `relayed`), and when it closes first, closes the client's connection too, unless the
    /// wait for it was `abandoned`.
    static func linkHome(
        url: String, headers: HTTPFields, home: NodeRegistration, toHome: AsyncStream<String>, pending: PendingBytes,
        opened: AsyncStream<Bool>.Continuation, outbound: WebSocketOutboundWriter, channel: any Channel, relayed: RelayedMedia?,
        abandoned: SharedFlag, logger: Logger
    ) async {
        let connected = SharedFlag()
        do {
            try await WebSocketClient.connect(
                url: url,
                configuration: .init(maxFrameSize: maxHomeFrameSize, additionalHeaders: headers, autoPing: .enabled(timePeriod: .seconds(20))),
                logger: logger
            ) { homeInbound, homeOutbound, _ in
                connected.set()
                opened.yield(true)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await text in toHome {
                            pending.remove(text.utf8.count)
                            try await homeOutbound.write(.text(text))
                        }
                        try? await homeOutbound.close(.normalClosure, reason: "the client closed")
                    }
                    group.addTask {
                        for try await message in homeInbound.messages(maxSize: maxHomeFrameSize) {
                            guard case .text(let text) = message else { continue }
                            if let relayed, NodeMessage.isNodeMessage(text) {
                                if case .media(let frame)? = try? NodeMessage.parse(text) { relayed.carryOut(frame) }
                                continue
                            }
                            try await outbound.write(.text(text))
                        }
                    }
                    _ = try await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            logger.info("Relay to the room's home node ended", metadata: [LogKey.node: "\(home.nodeId)", LogKey.error: "\(error)"])
        }
        opened.yield(false)
        opened.finish()
        guard connected.isSet, !abandoned.isSet else { return }
        // The home side is gone: close the client's side too (it reconnects, as after any drop).
        let closing = Task { try? await outbound.close(.goingAway, reason: "the room's home node closed the connection") }
        try? await Task.sleep(for: .seconds(1))
        closing.cancel()
        try? await channel.close()
    }
}

/// A relayed client's media connections on this node, made when its room's home node asks
/// (``NodeMediaFrame``): subscriptions mirrored from the publisher's node, ICE restarts,
/// forwarding changes. Answers go back to the home node through `reply`.
struct RelayedMedia: Sendable {
    let media: MediaService
    let owner: UInt64
    /// The media address of the room's home node, where its publishers are mirrored from.
    let homeMedia: TransportAddress?
    let home: NodeRegistration
    let logger: Logger
    let reply: @Sendable (NodeMediaFrame) -> Void

    func carryOut(_ frame: NodeMediaFrame) {
        switch frame.kind {
        case .subscribe:
            guard let id = frame.id, let roomId = frame.roomId, let publisherId = frame.publisherId, let sdp = frame.sdp else { return }
            // A PK anchor of a room on another node is mirrored from that node.
            guard let homeMedia = frame.mediaHome.map(NodeMediaRelay.address) ?? homeMedia else {
                reply(NodeMediaFrame(kind: .answer, id: id, error: "the publisher's node has no usable media address"))
                return
            }
            Task {
                do {
                    let answer = try await media.subscribeMirrored(
                        owner: owner, key: SFURouter.PublisherKey(roomId: roomId, userId: publisherId), offer: sdp, home: homeMedia)
                    reply(NodeMediaFrame(kind: .answer, id: id, sdp: answer))
                } catch {
                    logger.info("Mirrored subscription failed", metadata: [LogKey.node: "\(home.nodeId)", LogKey.error: "\(error)"])
                    reply(NodeMediaFrame(kind: .answer, id: id, error: "\(error)"))
                }
            }
        case .restartIce:
            guard let id = frame.id, let publisherId = frame.publisherId, let sdp = frame.sdp else { return }
            Task {
                do {
                    let offer = try TransportDescription(of: try SessionDescription.parse(sdp))
                    guard let answer = try await media.restartICE(
                        owner: owner, target: .subscription(publisherId: publisherId),
                        remote: ICECredentials(ufrag: offer.iceUfrag, pwd: offer.icePwd), fingerprint: offer.fingerprint
                    ).get() else {
                        throw NegotiationError("an ICE restart needs new ICE credentials; the offer keeps ice-ufrag \(offer.iceUfrag)")
                    }
                    reply(NodeMediaFrame(kind: .answer, id: id, sdp: answer.sdp))
                } catch {
                    reply(NodeMediaFrame(kind: .answer, id: id, error: "\(error)"))
                }
            }
        case .unsubscribe:
            guard let publisherId = frame.publisherId else { return }
            media.unsubscribe(owner: owner, publisherId: publisherId, roomId: frame.roomId)
        case .forwarding:
            guard let roomId = frame.roomId, let publisherId = frame.publisherId else { return }
            media.setForwarding(
                owners: [owner], publisher: SFURouter.PublisherKey(roomId: roomId, userId: publisherId), audio: frame.audio ?? true, video: frame.video ?? true)
        case .close:
            media.close(owner: owner)
        case .answer:
            break
        }
    }
}

/// Bytes of client frames waiting for the home node, shared by the two directions of a relay.
final class PendingBytes: Sendable {
    private let bytes = Mutex(0)

    /// Adds `count`; the total now.
    func add(_ count: Int) -> Int { bytes.withLock { $0 += count; return $0 } }
    func remove(_ count: Int) { bytes.withLock { $0 -= count } }
}
