#if canImport(Glibc)
import Glibc
#endif
import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// Writes one media loop's datagrams to its UDP socket itself, up to 1024 per system call
/// (`sendmmsg`), instead of one channel write each through the pipeline: a packet's copies go
/// out together once 64 or more wait (``flush(ifAtLeast:)``), the rest at the read burst's end. A datagram the socket has no room for is dropped
/// and counted, as a congested path would drop it. Confined to the loop.
///
/// The RTP the router forwards is written straight into slots of storage kept here from
/// flush to flush (``DatagramSink``): no buffer is allocated or freed per forwarded packet.
/// Other datagrams (ICE, DTLS, RTCP) come as buffers, kept until the flush sends them.
final class UDPBatchSender: DatagramSink {
    private let descriptor: CInt
    private let family: sa_family_t
    /// Reused from flush to flush: one header, one iovec, one address and one slot per datagram.
    private let headers = MessageBatch(count: MessageBatch.maximumCount)
    private let vectors: UnsafeMutablePointer<iovec>
    private let addresses: UnsafeMutablePointer<sockaddr_in6>
    private let slots: UnsafeMutableRawPointer
    /// Datagrams queued: headers, vectors and addresses `0 ..< count`.
    private(set) var count = 0
    /// The buffers queued datagrams point into, kept alive until they are sent.
    private var buffers: [ByteBuffer] = []
    /// When the live packet each queued datagram forwards reached the server (nil: not one).
    private var arrivals = [ContinuousClock.Instant?](repeating: nil, count: batchSize)
    /// From arrival to `sendmmsg`, for every forwarded live packet sent.
    private(set) var delays = DelayHistogram()
    /// Datagrams not sent because the socket's send buffer was full (or the send failed).
    private(set) var dropped = 0

    /// The most datagrams one `sendmmsg` takes, and so one batch holds.
    static let batchSize = MessageBatch.maximumCount
    /// The largest datagram a slot holds: more than an Ethernet MTU; a longer one goes as a buffer.
    static let slotSize = 1_536

    /// Sends on `descriptor`, a UDP socket of `family` (AF_INET or AF_INET6), which it then owns.
    init(descriptor: CInt, family: sa_family_t) {
        self.descriptor = descriptor
        self.family = family
        vectors = .allocate(capacity: Self.batchSize)
        addresses = .allocate(capacity: Self.batchSize)
        slots = .allocate(byteCount: Self.batchSize * Self.slotSize, alignment: 64)
    }

    deinit {
        vectors.deallocate()
        addresses.deallocate()
        slots.deallocate()
        close(descriptor)
    }

    var isEmpty: Bool { count == 0 }

    /// Queues a datagram for the next flush; false (counted as dropped) when the socket cannot reach `destination`.
    @discardableResult
    func append(_ datagram: ByteBuffer, to destination: TransportAddress) -> Bool {
        guard let index = nextIndex(for: destination) else { return false }
        buffers.append(datagram)
        arrivals[index] = nil
        // The kept buffer holds its storage (not written again) until the flush sends it.
        datagram.withUnsafeReadableBytes { bytes in
            vectors[index] = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        }
        count += 1
        return true
    }

    func send(_ datagram: ByteBuffer, to destination: TransportAddress) {
        append(datagram, to: destination)
    }

    func write(
        to destination: TransportAddress, capacity: Int, arrival: ContinuousClock.Instant?, _ fill: (UnsafeMutableRawBufferPointer) -> Int?
    ) -> Int? {
        guard capacity <= Self.slotSize else {
            var buffer = ByteBufferAllocator().buffer(capacity: capacity)
            let length = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { bytes in
                fill(UnsafeMutableRawBufferPointer(rebasing: bytes[..<capacity])) ?? 0
            }
            guard length > 0, append(buffer, to: destination) else { return nil }
            arrivals[count - 1] = arrival
            return length
        }
        guard let index = nextIndex(for: destination) else { return nil }
        let slot = slots + index * Self.slotSize
        guard let length = fill(UnsafeMutableRawBufferPointer(start: slot, count: capacity)) else { return nil }
        vectors[index] = iovec(iov_base: slot, iov_len: length)
        arrivals[index] = arrival
        count += 1
        return length
    }

    /// The index the next datagram to `destination` takes, its address and header set (after
    /// a flush, when the batch is full); nil, counted, when the socket cannot reach it.
    private func nextIndex(for destination: TransportAddress) -> Int? {
        if count == Self.batchSize { flush() }
        let index = count
        let name = UnsafeMutableRawPointer(addresses + index)
        let length: Int
        switch Int32(family) {
        case AF_INET:
            guard let address = destination.ipv4SocketAddress else {
                dropped += 1
                return nil
            }
            name.storeBytes(of: address, as: sockaddr_in.self)
            length = MemoryLayout<sockaddr_in>.size
        default:
            addresses[index] = destination.ipv6SocketAddress
            length = MemoryLayout<sockaddr_in6>.size
        }
        headers.set(index, name: name, nameLength: socklen_t(length), iov: vectors + index)
        return index
    }

    /// Flushes once at least `threshold` datagrams wait: called after each packet is routed,
    /// so a packet's copies leave as soon as they are sealed rather than waiting for the rest
    /// of a read burst, while a few copies still share one `sendmmsg`.
    func flush(ifAtLeast threshold: Int) {
        if count >= threshold { flush() }
    }

    /// Sends every queued datagram.
    func flush() {
        var sent = 0
        while sent < count {
            let result = send(from: sent, count: count - sent)
            if result > 0 {
                sent += result
            } else if result < 0 && errno == EINTR {
                continue
            } else if result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
                // The send buffer is full: the rest of this batch is lost, as on a congested link.
                dropped += count - sent
                break
            } else {
                // An error about the first datagram (an ICMP report of a closed port, a bad
                // address): skip it and go on with the rest.
                dropped += 1
                sent += 1
            }
        }
        let sentAt = ContinuousClock.now
        for index in 0..<sent {
            if let arrival = arrivals[index] { delays.record(sentAt - arrival) }
        }
        count = 0
        buffers.removeAll(keepingCapacity: true)
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
}
