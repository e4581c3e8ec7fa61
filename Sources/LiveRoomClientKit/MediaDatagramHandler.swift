import LiveRoomWire
import NIOCore

/// Hands each datagram of one peer connection's UDP socket to the media engine.
final class MediaDatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let onDatagram: (ByteBuffer, TransportAddress) -> Void

    init(onDatagram: @escaping (ByteBuffer, TransportAddress) -> Void) {
        self.onDatagram = onDatagram
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let address = TransportAddress(envelope.remoteAddress) else { return }
        onDatagram(envelope.data, address)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP port unreachable and the like: UDP carries on.
    }
}

extension TransportAddress {
    /// The IP address and port of a NIO socket address; nil for a Unix socket.
    init?(_ socketAddress: SocketAddress) {
        guard let text = socketAddress.ipAddress, let ip = IPAddress(text), let port = socketAddress.port, let port16 = UInt16(exactly: port) else {
            return nil
        }
        self.init(address: ip, port: port16)
    }

    /// The NIO socket address.
    var socketAddress: SocketAddress? {
        try? SocketAddress(ipAddress: address.description, port: Int(port))
    }
}
