#if canImport(Glibc)
import Glibc
#endif
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomServer

@Suite struct UDPBatchSenderTests {
    /// A bound, non-blocking IPv4 UDP socket on 127.0.0.1 and its port.
    func boundSocket() throws -> (CInt, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        var size: CInt = 8 << 20
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Every datagram waiting on `fd`.
    func drain(_ fd: CInt) -> [[UInt8]] {
        var received: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count >= 0 else { return received }
            received.append(Array(buffer[..<count]))
        }
    }

    @Test func aFlushSendsEveryQueuedDatagramInOrderAcrossBatches() throws {
        let (receiver, port) = try boundSocket()
        defer { close(receiver) }
        let (socket, _) = try boundSocket()
        let sender = UDPBatchSender(descriptor: socket, family: sa_family_t(AF_INET))
        let destination = TransportAddress(address: .v4(0x7F00_0001), port: port)
        let count = UDPBatchSender.batchSize + 200
        for index in 0..<count { sender.append(ByteBuffer(bytes: [UInt8(index >> 8), UInt8(index & 0xFF), 1, 2, 3]), to: destination) }
        #expect(!sender.isEmpty)
        sender.flush()
        #expect(sender.isEmpty && sender.dropped == 0)
        let received = drain(receiver)
        #expect(received.count == count, "more than one sendmmsg's worth arrives")
        #expect(received.map { Int($0[0]) << 8 | Int($0[1]) } == Array(0..<count), "in order")
    }

    @Test func aDestinationTheSocketCannotReachIsDroppedAndCounted() throws {
        let (receiver, port) = try boundSocket()
        defer { close(receiver) }
        let (socket, _) = try boundSocket()
        let sender = UDPBatchSender(descriptor: socket, family: sa_family_t(AF_INET))
        sender.append(ByteBuffer(bytes: [1]), to: TransportAddress(address: IPAddress("::1")!, port: port))
        sender.append(ByteBuffer(bytes: [2]), to: TransportAddress(address: .v4(0x7F00_0001), port: port))
        sender.flush()
        #expect(sender.dropped == 1, "an IPv6 destination from an IPv4 socket")
        #expect(drain(receiver) == [[2]], "the rest still goes")
    }

    /// What the router forwards is written into the sender's own slots; a datagram larger than
    /// a slot goes as a buffer, one `fill` declines sends nothing, and the order holds across
    /// slots, buffers and batches.
    @Test func datagramsWrittenIntoItsSlotsGoOutWithTheQueuedBuffersInOrder() throws {
        let (receiver, port) = try boundSocket()
        defer { close(receiver) }
        let (socket, _) = try boundSocket()
        let sender = UDPBatchSender(descriptor: socket, family: sa_family_t(AF_INET))
        let destination = TransportAddress(address: .v4(0x7F00_0001), port: port)
        let count = UDPBatchSender.batchSize + 100
        var expected: [[UInt8]] = []
        for index in 0..<count {
            let payload = [UInt8(index >> 8), UInt8(index & 0xFF)] + [UInt8](repeating: 7, count: index % 3 == 0 ? 1_600 : 1_200)
            switch index % 5 {
            case 0:
                sender.append(ByteBuffer(bytes: payload), to: destination)
            case 1:
                // Declined: nothing is queued.
                #expect(sender.write(to: destination, capacity: 1_300, arrival: .now) { _ in nil } == nil)
                continue
            default:
                let length = sender.write(to: destination, capacity: payload.count + 16, arrival: .now - .milliseconds(3)) { slot in
                    #expect(slot.count == payload.count + 16)
                    slot.copyBytes(from: payload)
                    return payload.count
                }
                #expect(length == payload.count)
            }
            expected.append(payload)
        }
        sender.flush()
        #expect(sender.isEmpty && sender.dropped == 0)
        #expect(drain(receiver) == expected)
        // Every written datagram's delay is counted (3 ms and a little), no queued buffer's.
        let written = expected.count - (0..<count).filter { $0 % 5 == 0 }.count
        #expect(sender.delays.count == UInt64(written))
        #expect(sender.delays.sumMicroseconds >= Int64(written) * 3_000 && sender.delays.sumMicroseconds < Int64(written) * 1_000_000)
    }
}
