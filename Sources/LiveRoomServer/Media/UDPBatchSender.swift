#if canImport(Glibc)
import Glibc
#endif
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// Writes one media loop's datagrams to its UDP socket itself, up to 1024 per system call
/// (`sendmmsg`), instead of one channel write each through the pipeline: the datagrams of one
/// read burst go out together when it ends. A datagram the socket has no room for is dropped
/// and counted, as a congested path would drop it. Confined to the loop.
final class UDPBatchSender {
    private let descriptor: CInt
    private let family: sa_family_t
    private var buffers: [ByteBuffer] = []
    private var destinations: [TransportAddress] = []
    /// Reused from flush to flush: one header, one iovec and one address per datagram.
    private let headers = MessageBatch(count: MessageBatch.maximumCount)
    private let vectors: UnsafeMutablePointer<iovec>
    private let addresses: UnsafeMutablePointer<sockaddr_in6>
    /// Datagrams not sent because the socket's send buffer was full (or the send failed).
    private(set) var dropped = 0

    /// The most datagrams one `sendmmsg` takes.
    static let batchSize = MessageBatch.maximumCount

    /// Sends on `descriptor`, a UDP socket of `family` (AF_INET or AF_INET6), which it then owns.
    init(descriptor: CInt, family: sa_family_t) {
        self.descriptor = descriptor
        self.family = family
        vectors = .allocate(capacity: Self.batchSize)
        addresses = .allocate(capacity: Self.batchSize)
    }

    deinit {
        vectors.deallocate()
        addresses.deallocate()
        close(descriptor)
    }

    var isEmpty: Bool { buffers.isEmpty }

    /// Queues a datagram for the next flush.
    func append(_ datagram: ByteBuffer, to destination: TransportAddress) {
        buffers.append(datagram)
        destinations.append(destination)
    }

    /// Sends every queued datagram.
    func flush() {
        var start = 0
        while start < buffers.count {
            let count = min(Self.batchSize, buffers.count - start)
            var prepared = 0
            for index in start..<(start + count) {
                guard let length = address(destinations[index], into: addresses + prepared) else {
                    dropped += 1
                    continue
                }
                // The queued buffers keep their storage alive until the call returns.
                buffers[index].withUnsafeReadableBytes { bytes in
                    vectors[prepared] = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
                }
                headers.set(prepared, name: UnsafeMutableRawPointer(addresses + prepared), nameLength: length, iov: vectors + prepared)
                prepared += 1
            }
            var sent = 0
            while sent < prepared {
                let result = send(from: sent, count: prepared - sent)
                if result > 0 {
                    sent += Int(result)
                } else if result < 0 && errno == EINTR {
                    continue
                } else if result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
                    // The send buffer is full: the rest of this burst is lost, as on a congested link.
                    dropped += prepared - sent
                    break
                } else {
                    // An error about the first datagram (an ICMP report of a closed port, a bad
                    // address): skip it and go on with the rest.
                    dropped += 1
                    sent += 1
                }
            }
            start += count
        }
        buffers.removeAll(keepingCapacity: true)
        destinations.removeAll(keepingCapacity: true)
    }

    /// sendmmsg, or one sendto at a time where the C library has none.
    private func send(from start: Int, count: Int) -> Int {
        if MessageBatch.sendmmsg != nil { return Int(headers.send(on: descriptor, from: start, count: count, flags: Int32(MSG_DONTWAIT))) }
        let length = socklen_t(addresses[start].sin6_family == sa_family_t(AF_INET) ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
        let result = UnsafeMutableRawPointer(addresses + start).withMemoryRebound(to: sockaddr.self, capacity: 1) {
            sendto(descriptor, vectors[start].iov_base, vectors[start].iov_len, Int32(MSG_DONTWAIT), $0, length)
        }
        return result < 0 ? -1 : 1
    }

    /// Writes `destination` as a socket address of the socket's family; its length, or nil when
    /// the socket cannot reach it (IPv6 from an IPv4 socket).
    private func address(_ destination: TransportAddress, into storage: UnsafeMutablePointer<sockaddr_in6>) -> socklen_t? {
        let raw = UnsafeMutableRawPointer(storage)
        switch (destination.address, Int32(family)) {
        case (.v4(let value), AF_INET):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = destination.port.bigEndian
            address.sin_addr.s_addr = value.bigEndian
            raw.storeBytes(of: address, as: sockaddr_in.self)
            return socklen_t(MemoryLayout<sockaddr_in>.size)
        case (.v4(let value), AF_INET6):
            // An IPv4 client of a dual-stack socket: ::ffff:a.b.c.d.
            return ipv6(high: 0, low: 0xFFFF_0000_0000 | UInt64(value), port: destination.port, into: storage)
        case (.v6(let high, let low), AF_INET6):
            return ipv6(high: high, low: low, port: destination.port, into: storage)
        default:
            return nil
        }
    }

    private func ipv6(high: UInt64, low: UInt64, port: UInt16, into storage: UnsafeMutablePointer<sockaddr_in6>) -> socklen_t {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &address.sin6_addr) { bytes in
            bytes.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        storage.pointee = address
        return socklen_t(MemoryLayout<sockaddr_in6>.size)
    }
}
