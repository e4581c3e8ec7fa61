import BenchSupport
import Foundation
import LiveRoomSecureTransport
import LiveRoomTransport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The crypto floor: the least work any SFU must do to forward one packet to N subscribers —
/// SRTP unprotect of the incoming packet once, then for each subscriber a copy, SRTP protect
/// with that subscriber's session and a UDP send over loopback (batched with `sendmmsg`, as
/// the server batches a packet's copies). Timed in this thread's CPU time and reported per
/// forwarded packet.
///
/// The copies go either to `destinations`, one socket per subscriber (the bench binds them on
/// its own subscriber loops, so they are watched and read the way the subscribers' sockets
/// are), with the inputs paced at the publisher's packet rate; or, without destinations, all
/// to one socket a blocking thread drains, in a tight loop. On loopback the kernel charges
/// the sender for delivering each copy, waking its reader included, so the first is what any
/// SFU pays for N real subscribers and the second a lower bound that leaves that out.
enum CryptoFloor {
    struct Figures: Sendable {
        /// Median over rounds of CPU µs per forwarded packet (per received packet when N = 0).
        var microsecondsPerPacket: Double
        var rounds: [Double]
        /// Whether the sends were batched with sendmmsg (false: one sendto each).
        var batched: Bool
    }

    /// - Parameters:
    ///   - destinations: one per subscriber; nil: every copy to one discarding socket.
    ///   - pace: the time between inputs (the publisher's packet interval); nil: a tight loop.
    static func measure(
        subscribers: Int, profile: SRTPProtectionProfile, destinations: [sockaddr_in]? = nil, pace: Duration? = nil, packetSize: Int = 1_200, rounds: Int = 5
    ) throws -> Figures {
        let n = subscribers
        precondition(destinations.map { $0.count == n } ?? true, "one destination per subscriber")
        let stride = packetSize + SRTPSession.maximumTrailerLength
        // Paced, a round takes inputs × pace of wall time: fewer inputs, still thousands of copies.
        let inputsPerRound = pace == nil ? min(4_000, max(200, 20_000 / max(1, n))) : max(50, 6_000 / max(1, n))
        let totalInputs = inputsPerRound * (rounds + 1)

        // Sessions: the publisher's (protects the input), the SFU's inbound one, and one outbound per subscriber.
        func keys(_ role: DTLSRole, _ material: [UInt8]) -> SRTPKeyingMaterial {
            SRTPKeyingMaterial(profile: profile, role: role, exportedKeyingMaterial: material)!
        }
        func randomMaterial() -> [UInt8] { (0..<SRTPKeyingMaterial.exporterLength(for: profile)).map { _ in UInt8.random(in: 0...255) } }
        let upMaterial = randomMaterial()
        let publisher = try SRTPSession(keyingMaterial: keys(.client, upMaterial), direction: .outbound)
        let inbound = try SRTPSession(keyingMaterial: keys(.server, upMaterial), direction: .inbound)
        let outbound = try (0..<n).map { _ in try SRTPSession(keyingMaterial: keys(.server, randomMaterial()), direction: .outbound) }

        // Untimed: every input packet, protected by the publisher.
        let inputs = UnsafeMutableRawBufferPointer.allocate(byteCount: totalInputs * stride, alignment: 64)
        defer { inputs.deallocate() }
        var inputLengths = [Int](repeating: 0, count: totalInputs)
        for i in 0..<totalInputs {
            let packet = UnsafeMutableRawBufferPointer(rebasing: inputs[i * stride..<(i + 1) * stride])
            packet[0] = 0x80
            packet[1] = 96
            packet[2] = UInt8(truncatingIfNeeded: i >> 8)
            packet[3] = UInt8(truncatingIfNeeded: i)
            packet.storeBytes(of: UInt32(truncatingIfNeeded: i &* 6000).bigEndian, toByteOffset: 4, as: UInt32.self)
            packet.storeBytes(of: UInt32(0x1234_5678).bigEndian, toByteOffset: 8, as: UInt32.self)
            memset(packet.baseAddress! + 12, Int32(truncatingIfNeeded: i), packetSize - 12)
            inputLengths[i] = try publisher.protectRTP(packet, length: packetSize)
        }

        let sink = destinations == nil ? try DiscardingSocket() : nil
        defer { sink?.close() }
        let paceMicroseconds = pace.map { UInt32(($0 / .microseconds(1)).rounded()) }
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard sender >= 0 else { throw BenchError("socket() failed: errno \(errno)") }
        defer { Glibc.close(sender) }
        let addresses = UnsafeMutablePointer<sockaddr_in>.allocate(capacity: max(1, n))
        for s in 0..<max(1, n) { (addresses + s).initialize(to: (s < n ? destinations?[s] : nil) ?? sink?.address ?? sockaddr_in()) }
        defer { addresses.deallocate() }

        // One outgoing slot, iovec and mmsghdr per subscriber, set up once.
        let outputs = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, n) * stride, alignment: 64)
        defer { outputs.deallocate() }
        let iovecs = UnsafeMutablePointer<iovec>.allocate(capacity: max(1, n))
        defer { iovecs.deallocate() }
        let batch = MessageBatch(count: max(1, n))
        for s in 0..<n {
            iovecs[s] = iovec(iov_base: outputs.baseAddress! + s * stride, iov_len: 0)
            batch.set(s, name: UnsafeMutableRawPointer(addresses + s), nameLength: socklen_t(MemoryLayout<sockaddr_in>.size), iov: iovecs + s)
        }

        var perRound: [Double] = []
        var input = 0
        for round in 0...rounds {
            let cpuStart = threadCPUNanoseconds()
            for _ in 0..<inputsPerRound {
                let packet = UnsafeMutableRawBufferPointer(rebasing: inputs[input * stride..<(input + 1) * stride])
                let length = try inbound.unprotectRTP(packet, length: inputLengths[input])
                for s in 0..<n {
                    let out = UnsafeMutableRawBufferPointer(rebasing: outputs[s * stride..<(s + 1) * stride])
                    out.baseAddress!.copyMemory(from: packet.baseAddress!, byteCount: length)
                    // The rewrite every SFU does: the subscriber's SSRC (sequence and timestamp stay in step here).
                    out.storeBytes(of: UInt32(0x1000 + s).bigEndian, toByteOffset: 8, as: UInt32.self)
                    iovecs[s].iov_len = try outbound[s].protectRTP(out, length: length)
                }
                if n > 0 { try batch.send(on: sender, count: n, addresses: addresses, iovecs: iovecs) }
                input += 1
                if let paceMicroseconds { usleep(paceMicroseconds) }
            }
            let cpu = Double(threadCPUNanoseconds() - cpuStart)
            if round > 0 { perRound.append(cpu / 1_000 / Double(inputsPerRound * max(1, n))) }  // round 0 warms up
        }
        return Figures(microsecondsPerPacket: median(perRound), rounds: perRound, batched: MessageBatch.sendmmsg != nil)
    }

    static func threadCPUNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

extension MessageBatch {
    /// Sends the first `count` messages, with sendmmsg, or one sendto each (to `addresses[i]`) without it.
    func send(on fd: Int32, count: Int, addresses: UnsafeMutablePointer<sockaddr_in>, iovecs: UnsafeMutablePointer<iovec>) throws {
        if Self.sendmmsg != nil {
            var sent = 0
            while sent < count {
                let result = send(on: fd, from: sent, count: min(Self.maximumCount, count - sent))
                if result < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    throw BenchError("sendmmsg failed: errno \(errno)")
                }
                sent += Int(result)
            }
        } else {
            for i in 0..<count {
                let sent = (addresses + i).withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, iovecs[i].iov_base, iovecs[i].iov_len, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
                if sent < 0 { throw BenchError("sendto failed: errno \(errno)") }
            }
        }
    }
}

/// A UDP socket on 127.0.0.1 with a thread that reads and drops everything sent to it.
final class DiscardingSocket: Sendable {
    let fd: Int32
    /// The bound port, in network byte order.
    private let networkPort: UInt16
    private let stopped = Atomic<Bool>(false)
    private let finished = Mutex<Bool>(false)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            Glibc.close(fd)
            throw BenchError("cannot bind a discarding socket: errno \(errno)")
        }
        self.fd = fd
        networkPort = address.sin_port
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bufferSize: Int32 = 4 << 20
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size))
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 2048)
            while !stopped.load(ordering: .relaxed) {
                _ = recv(fd, &buffer, buffer.count, 0)
            }
            finished.withLock { $0 = true }
        }
        thread.start()
    }

    /// Where to send: 127.0.0.1 and the bound port.
    var address: sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = networkPort
        return address
    }

    func close() {
        stopped.store(true, ordering: .relaxed)
        while !finished.withLock({ $0 }) { usleep(10_000) }
        Glibc.close(fd)
    }
}
