import LiveRoomWire
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// The IP address and port of a NIO socket address, read from its bytes (every datagram
    /// goes through here: no text); nil for a Unix socket.
    public init?(_ socketAddress: SocketAddress) {
        switch socketAddress {
        case .v4(let v4):
            self.init(address: .v4(UInt32(bigEndian: v4.address.sin_addr.s_addr)), port: UInt16(bigEndian: v4.address.sin_port))
        case .v6(let v6):
            var raw = v6.address.sin6_addr
            let (high, low) = withUnsafeBytes(of: &raw) { bytes in
                (UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                 UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            }
            self.init(address: .v6(high: high, low: low), port: UInt16(bigEndian: v6.address.sin6_port))
        case .unixDomainSocket:
            return nil
        }
    }

    /// The NIO socket address, built from the bytes (every datagram sent goes through here).
    public var socketAddress: SocketAddress? {
        if let raw = ipv4SocketAddress { return SocketAddress(raw, host: "") }
        return SocketAddress(ipv6SocketAddress, host: "")
    }

    /// The C socket address of an IPv4 address; nil for IPv6.
    public var ipv4SocketAddress: sockaddr_in? {
        guard case .v4(let value) = address else { return nil }
        var raw = sockaddr_in()
        raw.sin_family = sa_family_t(AF_INET)
        raw.sin_port = port.bigEndian
        raw.sin_addr.s_addr = value.bigEndian
        return raw
    }

    /// The C socket address as IPv6; an IPv4 address as ::ffff:a.b.c.d, the form a
    /// dual-stack socket sends to.
    public var ipv6SocketAddress: sockaddr_in6 {
        let (high, low): (UInt64, UInt64) =
            switch address {
            case .v4(let value): (0, 0xFFFF_0000_0000 | UInt64(value))
            case .v6(let high, let low): (high, low)
            }
        var raw = sockaddr_in6()
        raw.sin6_family = sa_family_t(AF_INET6)
        raw.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &raw.sin6_addr) { bytes in
            bytes.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        return raw
    }
}
