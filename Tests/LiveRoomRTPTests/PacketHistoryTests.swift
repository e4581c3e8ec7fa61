import Testing

@testable import LiveRoomRTP

@Suite struct PacketHistoryTests {
    @Test func keepsTheLastPackets() {
        var h = PacketHistory<[UInt8]>(capacity: 4)
        for s in UInt16(65_533)...UInt16(65_535) { h.store(sequenceNumber: s, packet: [UInt8(truncatingIfNeeded: s)]) }
        h.store(sequenceNumber: 0, packet: [0])
        h.store(sequenceNumber: 1, packet: [1])
        #expect(h.packet(sequenceNumber: 1) == [1])
        #expect(h.packet(sequenceNumber: 65_535) == [0xFF])
        #expect(h.packet(sequenceNumber: 65_533) == nil, "overwritten")
        #expect(h.packet(sequenceNumber: 2) == nil, "never stored")
    }

    @Test func historyIsARing() {
        var history = PacketHistory<[UInt8]>(capacity: 512)
        history.store(sequenceNumber: 5, packet: [5])
        history.store(sequenceNumber: 517, packet: [1])
        #expect(history.packet(sequenceNumber: 5) == nil)
        #expect(history.packet(sequenceNumber: 517) == [1])
    }
}
