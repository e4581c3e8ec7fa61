#if canImport(Glibc)
import Glibc
#endif
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomServer

@Suite struct UDPBatchSenderTests {
    @Test func aFlushSendsEveryQueuedDatagramInOrderAcrossBatches() throws {
        let (receiver, port) = try loopbackUDPSocket()
        defer { close(receiver) }
        let (socket, _) = try loopbackUDPSocket()
        let sender = UDPBatchSender(descriptor: socket, family: sa_family_t(AF_INET))
        let destination = TransportAddress(address: .v4(0x7F00_0001), port: port)
        let count = UDPBatchSender.batchSize + 200
        for index in 0..<count { sender.append(ByteBuffer(bytes: [UInt8(index >> 8), UInt8(index & 0xFF), 1, 2, 3]), to: destination) }
        #expect(!sender.isEmpty)
        sender.flush()
        #expect(sender.isEmpty && sender.dropped == 0)
        let received = drainDatagrams(receiver)
        #expect(received.count == count, "more than one sendmmsg's worth arrives")
        #expect(received.map { Int($0[0]) << 8 | Int($0[1]) } == Array(0..<count), "in order")
    }

    /// After each routed packet the media handler flushes once enough copies wait, so a
    /// packet's copies do not wait for the rest of a read burst.
    @Test func aThresholdFlushSendsOnlyOnceEnoughDatagramsWait() throws {
        let (receiver, port) = try loopbackUDPSocket()
        defer { close(receiver) }
        let (socket, _) = try loopbackUDPSocket()
        let sender = UDPBatchSender(descriptor: socket, family: sa_family_t(AF_INET))
        let destination = TransportAddress(address: .v4(0x7F00_0001), port: port)
        for index in 0..<3 { sender.append(ByteBuffer(bytes: [UInt8(index)]), to: destination) }
        sender.flush(ifAtLeast: 4)
        #expect(sender.count == 3 && drainDatagrams(receiver).isEmpty, "below the threshold nothing goes")
        sender.append(ByteBuffer(bytes: [3]), to: destination)
        sender.flush(ifAtLeast: 4)
        #expect(sender.isEmpty)
        #expect(drainDatagrams(receiver) == [[0], [1], [2], [3]])
    }

    @Test func aDestinationTheSocketCannotReachIsDroppedAndCounted() throws {
        let (receiver, port) = try loopbackUDPSocket()
        defer { close(receiver) }
        let (socket, _) = try loopbackUDPSocket()
        let sender = UDPBatchSender(descriptor: socket, family: sa_family_t(AF_INET))
        sender.append(ByteBuffer(bytes: [1]), to: TransportAddress(address: IPAddress("::1")!, port: port))
        sender.append(ByteBuffer(bytes: [2]), to: TransportAddress(address: .v4(0x7F00_0001), port: port))
        sender.flush()
        #expect(sender.dropped == 1, "an IPv6 destination from an IPv4 socket")
        #expect(drainDatagrams(receiver) == [[2]], "the rest still goes")
    }

    /// What the router forwards is written into the sender's own slots; a datagram larger than
    /// a slot goes as a buffer, one `fill` declines sends nothing, and the order holds across
    /// slots, buffers and batches.
    @Test func datagramsWrittenIntoItsSlotsGoOutWithTheQueuedBuffersInOrder() throws {
        let (receiver, port) = try loopbackUDPSocket()
        defer { close(receiver) }
        let (socket, _) = try loopbackUDPSocket()
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
        #expect(drainDatagrams(receiver) == expected)
        // Every written datagram's delay is counted (3 ms and a little), no queued buffer's.
        let written = expected.count - (0..<count).filter { $0 % 5 == 0 }.count
        #expect(sender.delays.count == UInt64(written))
        #expect(sender.delays.sumMicroseconds >= Int64(written) * 3_000 && sender.delays.sumMicroseconds < Int64(written) * 1_000_000)
    }
}
