import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOCore

/// Reads datagrams into the router and writes what it returns, flushing once per read burst.
final class MediaChannelHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let router: SFURouter
    private let logger: Logger
    private let onPeerClosed: @Sendable (SFURouter.OwnerID, SFURouter.PublisherKey?, String) -> Void
    /// Where each tap's packets go.
    var sinks: [SFURouter.TapID: TapSink] = [:]
    /// Who makes keyframes for each local publisher.
    var keyframeHandlers: [SFURouter.PublisherKey: @Sendable () -> Void] = [:]

    init(router: SFURouter, logger: Logger, onPeerClosed: @escaping @Sendable (SFURouter.OwnerID, SFURouter.PublisherKey?, String) -> Void) {
        self.router = router
        self.logger = logger
        self.onPeerClosed = onPeerClosed
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let source = TransportAddress(envelope.remoteAddress) else { return }
        handle(router.receive(envelope.data, from: source, now: .now), context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A UDP socket reports ICMP errors (e.g. a peer's port closed) here; it stays open.
        logger.debug("Media socket error", metadata: [LogKey.error: "\(error)"])
    }

    func runTimers(channel: any Channel) {
        emit(router.handleTimers(now: .now), to: channel)
    }

    private func handle(_ outputs: [SFURouter.Output], context: ChannelHandlerContext) {
        for output in outputs { dispatch(output) { context.write(NIOAny($0), promise: nil) } }
    }

    private func dispatch(_ output: SFURouter.Output, write: (AddressedEnvelope<ByteBuffer>) -> Void) {
        switch output {
        case .send(let bytes, let address):
            if let remote = address.socketAddress { write(AddressedEnvelope(remoteAddress: remote, data: bytes)) }
        case .peerClosed(let owner, let publisher, let reason):
            logger.info(
                "Peer connection closed", metadata: [LogKey.session: "\(owner)", LogKey.user: "\(publisher?.userId ?? "-")", LogKey.error: "\(reason)"])
            onPeerClosed(owner, publisher, reason)
        case .tapped(let tap, let publisher, let codec, let packet):
            sinks[tap]?(publisher, codec, packet)
        case .localKeyframeRequest(let key):
            keyframeHandlers[key]?()
        }
    }

    /// Carries out outputs produced outside a read (a command or a timer, on the loop), then flushes.
    func emit(_ outputs: [SFURouter.Output], to channel: any Channel) {
        guard !outputs.isEmpty else { return }
        for output in outputs { dispatch(output) { channel.write(NIOAny($0), promise: nil) } }
        channel.flush()
    }
}
