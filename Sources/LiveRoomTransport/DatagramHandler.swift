import LiveRoomWire
import NIOCore

/// Hands each datagram a UDP socket reads to a closure, on the socket's event loop, and
/// flushes what the closure wrote once per read burst. For sockets that carry one or a few
/// peer connections (the CLI, benchmarks); the server's media port has its own handler.
public final class DatagramHandler: ChannelInboundHandler {
    public typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let onDatagram: (ByteBuffer, TransportAddress) -> Void

    public init(onDatagram: @escaping (ByteBuffer, TransportAddress) -> Void) {
        self.onDatagram = onDatagram
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let source = TransportAddress(envelope.remoteAddress) else { return }
        onDatagram(envelope.data, source)
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP port unreachable and the like: UDP carries on.
    }
}

extension TransportAddress {
    /// The IP address and port of a NIO socket address; nil for a Unix socket.
    public init?(_ socketAddress: SocketAddress) {
        guard let text = socketAddress.ipAddress, let ip = IPAddress(text), let port = socketAddress.port, let port16 = UInt16(exactly: port) else {
            return nil
        }
        self.init(address: ip, port: port16)
    }

    /// The NIO socket address.
    public var socketAddress: SocketAddress? {
        try? SocketAddress(ipAddress: address.description, port: Int(port))
    }
}
